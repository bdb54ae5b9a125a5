"""A labelled sample graded by a scripted judge, and a real `judge review` process on it: shared
by the review app's API and browser tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.chat_server import Reply, answer
from tests.helpers import PROVIDER_KEYS, WEATHER, call, tool
from tests.service_process import free_port, stop, wait_until_healthy

CITIES = (
    "Paris", "Oslo", "Lima", "Rome", "Cairo", "Quito", "Tokyo",
    "Dakar", "Hanoi", "Perth", "Sofia", "Delhi",
)  # fmt: skip
WRONG = "Springfield"
"""The city the wrong calls ask for; the scripted judge calls those incorrect."""
INJECTED = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'


def sample_rows() -> list[dict[str, Any]]:
    """Twelve weather requests (some with the wrong city or the wrong tool), labelled but
    the last two; a text reply to label; and a case whose text tries to run a script."""
    tools = [tool("get_weather", WEATHER), tool("get_time", {"type": "object"})]
    rows = []
    for index, city in enumerate(CITIES):
        if index in (3, 8):
            made, labels = call("get_time", {}), {"selection": "incorrect"}
        elif index in (1, 4, 7, 10):
            made, labels = (
                call("get_weather", {"city": WRONG}),
                {
                    "selection": "correct",
                    "arguments": "incorrect",
                },
            )
        else:
            made = call("get_weather", {"city": city})
            labels = {"selection": "correct", "arguments": "correct"}
        row: dict[str, Any] = {
            "id": f"w{index:02d}-{city.lower()}",
            "messages": [{"role": "user", "content": f"What is the weather in {city}?"}],
            "tools": tools,
            "response": {"content": None, "tool_calls": [made]},
            "meta": {"category": "wrong_value" if index in (1, 4, 7, 10) else "weather"},
        }
        if index < 10:
            row["labels"] = labels
        rows.append(row)
    rows.append(
        {
            "id": "t-hello",
            "messages": [{"role": "user", "content": "Hello there!"}],
            "tools": tools,
            "response": {"content": "Hi! How can I help?", "tool_calls": []},
            "meta": {"category": "small_talk"},
        }
    )
    rows.append(
        {
            "id": "x-script",
            "messages": [{"role": "user", "content": f"What time is it? {INJECTED}"}],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "get_time",
                        "description": INJECTED,
                        "parameters": {"type": "object"},
                    },
                }
            ],
            "response": {"content": None, "tool_calls": [call("get_time", {"note": INJECTED})]},
            "meta": {"category": "weather"},
        }
    )
    return rows


def write_sample(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in sample_rows()))
    return path


def scripted_judge(body: dict[str, Any]) -> Reply:
    """`incorrect` for the calls that ask for the wrong city (and, wrongly, for Lima), else
    `correct`."""
    prompt = json.dumps(body["messages"])
    return answer(body, "incorrect" if WRONG in prompt or "Lima" in prompt else "correct")


def grade_sample(url: str, folder: Path, sample: Path) -> Path:
    """`judge grade SAMPLE --answers` with the scripted judge at `url` (model `m`)."""
    results = folder / "results.jsonl"
    completed = subprocess.run(
        [sys.executable, "-m", "judge", "grade", str(sample), "-o", str(results), "--answers",
         *judge_args(url, folder)],
        capture_output=True,
        env=clean_env(),
        timeout=120,
    )  # fmt: skip
    assert results.exists(), completed.stderr.decode()
    return results


def judge_args(url: str, folder: Path) -> list[str]:
    return ["--base-url", url, "--model", "m", "--cache-dir", str(folder / "cache")]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}
    return {**env, **extra}


def chromium() -> str:
    """The system Chromium; skipped without one, unless JUDGE_REQUIRE_BROWSER is set (as
    `.ci/run` sets it, having installed it): then its absence fails the test."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("JUDGE_REQUIRE_BROWSER"):
            pytest.fail("JUDGE_REQUIRE_BROWSER is set but Chromium is not installed")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return found


def keep_screenshot(shot: Path, name: str) -> None:
    """Copy a screenshot a browser test made into the folder JUDGE_SCREENSHOTS names, if any:
    the docs' pictures are made so (`JUDGE_SCREENSHOTS=docs/assets pytest
    tests/test_review_browser.py tests/test_compare_failures.py`), never drawn by hand."""
    folder = os.environ.get("JUDGE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(folder) / name)


@dataclass
class Reviewing:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


@contextmanager
def review_process(*args: str, token: str | None = None) -> Iterator[Reviewing]:
    """`judge review ARGS` on a free loopback port, once it answers /healthz."""
    port = free_port()
    log = Path(args[0]).with_name(f"review-{port}.log")
    env = clean_env(**({"JUDGE_SERVICE_TOKEN": token} if token else {}))
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "judge", "review", *args, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    running = Reviewing(f"http://127.0.0.1:{port}", process, log)
    try:
        wait_until_healthy(running.url, process, log.read_text, "judge review")
        yield running
    finally:
        stop(process)


def file_labels(path: Path) -> dict[str, dict[str, Any]]:
    """Each case's labels in the sample file, by id."""
    return {
        row["id"]: row.get("labels") or {}
        for row in (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    }
