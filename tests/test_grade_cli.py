"""`judge grade` as a user runs it: configuration, exit codes, summary, resuming."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge._client import OPENAI_URL, OPENROUTER_URL, resolve_endpoint
from judge._errors import JudgeError
from judge.cli import main
from tests.chat_server import ChatServer, Reply, answer
from tests.helpers import call, case

PARIS = case(
    [call("get_weather", {"city": "Paris"})],
    [{"name": "get_weather", "arguments": {"city": "Paris"}}],
) | {"id": "paris"}


def no_call(i: int) -> dict[str, Any]:
    return case([]) | {"id": f"n{i}", "response": {"content": f"hello {i}", "tool_calls": []}}


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def grade(server: ChatServer, tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(
        main,
        [
            "grade",
            *args,
            "--base-url",
            server.url,
            "--model",
            "m",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )


def test_results_carry_check_fields_and_judge(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [PARIS, no_call(1)])
    out = tmp_path / "r.jsonl"
    result = grade(server, tmp_path, str(cases), "-o", str(out), "--format", "json")
    assert result.exit_code == 0, result.output
    lines = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    paris = lines["paris"]
    assert paris["passed"] is True and paris["failures"] == []
    judged = paris["judge"]
    assert judged["status"] == "ok"
    assert set(judged["selection"]) >= {"verdict", "category", "reasoning"}
    assert set(judged["arguments"][0]) >= {"call", "verdict", "reasoning", "problems"}
    assert {"samples", "flip_rate", "provenance"} <= set(judged)
    summary = json.loads(result.stdout)["judge"]
    assert summary["status"] == {"ok": 2}
    assert summary["selection"] == {"correct": 2}
    assert summary["requests"] == 3
    assert summary["prompt_tokens"] == 300
    assert summary["agreement"]["selection"] == {"agree": 1}


def test_environment_configures_the_endpoint(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_BASE_URL", server.url)
    monkeypatch.setenv("JUDGE_MODEL", "env-model")
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write(tmp_path / "c.jsonl", [no_call(1)])
    result = CliRunner().invoke(main, ["grade", str(cases), "-o", str(tmp_path / "r.jsonl")])
    assert result.exit_code == 0, result.output
    assert server.chat_requests[0].body["model"] == "env-model"
    assert list((tmp_path / "cache").iterdir())


def test_judge_errors_are_counted_and_exit_zero(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: Reply(status=400, body={"error": {"message": "nope"}})
    cases = write(tmp_path / "c.jsonl", [no_call(1), no_call(2)])
    result = grade(
        server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"), "--format", "json"
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout)["judge"]["status"] == {"judge_error": 2}


def test_fail_under_uses_the_judge_pass_rate(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: answer(body, "incorrect")
    cases = write(tmp_path / "c.jsonl", [no_call(1)])
    result = grade(
        server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"), "--fail-under", "0.5"
    )
    assert result.exit_code == 1
    assert "judge pass rate 0.0%" in result.stderr


def test_endpoint_refusal_exits_4_and_says_what_to_fix(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: Reply(status=401, body={"error": {"message": "bad key"}})
    cases = write(tmp_path / "c.jsonl", [no_call(1)])
    result = grade(server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 4
    assert "JUDGE_API_KEY" in result.stderr


def test_unreadable_input_exits_2(server: ChatServer, tmp_path: Path) -> None:
    result = grade(server, tmp_path, str(tmp_path / "missing.jsonl"))
    assert result.exit_code == 2
    assert server.chat_requests == []


def test_dry_run_sends_nothing(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [PARIS, no_call(1)])
    result = grade(server, tmp_path, str(cases), "--dry-run", "--price-per-mtok", "2")
    assert result.exit_code == 0, result.output
    assert "requests to send: 3" in result.stdout
    assert "prompt cost (estimated): $" in result.stdout
    assert server.chat_requests == []
    grade(server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"))
    again = grade(server, tmp_path, str(cases), "--dry-run")
    assert "requests to send: 0" in again.stdout
    assert "answered from cache: 3" in again.stdout


def test_a_run_killed_midway_resumes_asking_only_for_what_is_missing(
    server: ChatServer, tmp_path: Path
) -> None:
    cases = write(tmp_path / "c.jsonl", [no_call(i) for i in range(6)])
    out = tmp_path / "r.jsonl"
    answered = iter(range(3))

    def three_then_hang(body: dict[str, Any]) -> Reply:
        reply = answer(body)
        if next(answered, None) is None:
            reply.delay = 60.0
        return reply

    server.default = three_then_hang
    env = {**os.environ, "JUDGE_BASE_URL": server.url, "JUDGE_MODEL": "m"}
    command = [
        sys.executable,
        "-m",
        "judge",
        "grade",
        str(cases),
        "-o",
        str(out),
        "--concurrency",
        "1",
        "--no-cache",
    ]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        not out.exists() or len(out.read_text().splitlines()) < 3
    ):
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert len(out.read_text().splitlines()) == 3
    before = len(server.chat_requests)

    server.default = answer
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert len(server.chat_requests) - before == 3  # only the three missing cases
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(ids) == [f"n{i}" for i in range(6)]


def test_resume_redoes_judge_errors_and_cut_lines(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [no_call(1), no_call(2)])
    out = tmp_path / "r.jsonl"
    server.push(Reply(status=400, body={"error": {"message": "nope"}}))
    grade(server, tmp_path, str(cases), "-o", str(out), "--concurrency", "1")
    statuses = sorted(json.loads(x)["judge"]["status"] for x in out.read_text().splitlines())
    assert statuses == ["judge_error", "ok"]
    out.write_text(out.read_text() + '{"id": "n3", "tool_sel')  # a line cut by a crash
    grade(server, tmp_path, str(cases), "-o", str(out))
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted((r["id"], r["judge"]["status"]) for r in lines) == [("n1", "ok"), ("n2", "ok")]


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    [
        pytest.param({}, {}, None, id="nothing-configured-is-local"),
        pytest.param({"model": "local"}, {"OPENAI_API_KEY": "sk-oa-1"}, None, id="model-local"),
        pytest.param(
            {},
            {"OPENROUTER_API_KEY": "sk-or-1"},
            (OPENROUTER_URL, "openai/gpt-4.1-mini", "openrouter"),
            id="openrouter",
        ),
        pytest.param(
            {}, {"OPENAI_API_KEY": "sk-oa-1"}, (OPENAI_URL, "gpt-4.1-mini", "openai"), id="openai"
        ),
        pytest.param(
            {"base_url": "http://127.0.0.1:9/v1/", "model": "q"},
            {"OPENROUTER_API_KEY": "sk-or-1"},
            ("http://127.0.0.1:9/v1", "q", "custom"),
            id="flag-base-url-wins",
        ),
        pytest.param(
            {},
            {"JUDGE_BASE_URL": "http://h/v1", "JUDGE_MODEL": "x"},
            ("http://h/v1", "x", "custom"),
            id="env-base-url",
        ),
        pytest.param(
            {"model": "anthropic/claude"},
            {"OPENROUTER_API_KEY": "sk-or-1"},
            (OPENROUTER_URL, "anthropic/claude", "openrouter"),
            id="model-flag",
        ),
    ],
)
def test_endpoint_resolution(
    flags: dict[str, str], env: dict[str, str], expected: tuple[str, str, str] | None
) -> None:
    found = resolve_endpoint(env=env, **flags)
    got = None if found is None else (found.base_url, found.model, found.provider)
    assert got == expected
    if found is not None:
        assert "sk-" not in repr(found)


def test_custom_endpoint_needs_a_model() -> None:
    with pytest.raises(JudgeError, match="--model"):
        resolve_endpoint(base_url="http://127.0.0.1:9/v1", env={})
