"""The judge against a real HTTP server on 127.0.0.1, scripted per test."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from judge import CaseResult
from judge.endpoints._client import JudgeEndpointError
from judge.endpoints._retry import RetryPolicy
from judge.judging._grade import Judge
from tests.chat_server import ChatServer, Reply, answer, completion, requested_schema
from tests.helpers import call, case, tool

KEY = "sk-test-secret-4242"
PARIS = case(
    [call("get_weather", {"city": "Paris"})],
    [{"name": "get_weather", "arguments": {"city": "Paris"}}],
) | {"id": "paris"}
NO_CALL = case([]) | {"id": "no-call", "response": {"content": "Hello!", "tool_calls": []}}
TWO_CALLS = case([call("get_weather", {"city": "Paris"}), call("get_time", {})]) | {"id": "two"}
# The small selection rubric joins each tool's `required`: a number there is a TypeError.
REQUIRED_IS_A_NUMBER = case(
    [call("get_weather", {"city": "Paris"})],
    tools=[tool("get_weather", {"type": "object", "required": 5})],
) | {"id": "odd"}
FAST = RetryPolicy(attempts=4, base_seconds=0.01, total_seconds=20, max_wait_seconds=2)


def make_judge(server: ChatServer, tmp_path: Path, **options: Any) -> Judge:
    settings: dict[str, Any] = {
        "base_url": server.url,
        "model": "judge-test",
        "api_key": KEY,
        "cache_dir": tmp_path / "cache",
        "retry": FAST,
        "timeout": 5,
    }
    return Judge(**(settings | options))


def run(judge: Judge, cases: Any) -> list[CaseResult]:
    async def go() -> list[CaseResult]:
        async with judge:
            return list(await judge.grade(cases))

    return asyncio.run(go())


def only(server: ChatServer, tmp_path: Path, data: dict[str, Any], **options: Any) -> CaseResult:
    [result] = run(make_judge(server, tmp_path, **options), [data])
    return result


def bad(content: str | None, **kw: Any) -> Reply:
    return Reply(body=completion(content, **kw))


def test_valid_verdicts_with_provenance(server: ChatServer, tmp_path: Path) -> None:
    result = only(server, tmp_path, TWO_CALLS)
    assert result.judge is not None
    judged = result.judge
    assert judged.status == "ok"
    assert judged.selection is not None and judged.selection.verdict == "correct"
    assert [(a.call, a.verdict) for a in judged.arguments] == [(0, "correct"), (1, "correct")]
    assert judged.provenance is not None
    assert (judged.provenance.model, judged.provenance.temperature, judged.provenance.seed) == (
        "judge-test",
        0.0,
        7,
    )
    assert [r.name for r in judged.provenance.rubrics] == ["selection", "arguments"]
    assert judged.usage.requests == 2  # one per dimension, both calls in one request
    body = server.chat_requests[-1].body
    assert "max_tokens" not in body and "max_completion_tokens" not in body
    assert (body["temperature"], body["seed"]) == (0.0, 7)
    assert body["response_format"]["json_schema"]["strict"] is True
    verdicts = requested_schema(body)["properties"]["verdicts"]
    assert (verdicts["minItems"], verdicts["maxItems"]) == (2, 2)


def test_no_key_in_any_output_or_cache(server: ChatServer, tmp_path: Path) -> None:
    result = only(server, tmp_path, PARIS)
    assert KEY not in json.dumps(result.to_json_dict())
    for path in (tmp_path / "cache").iterdir():
        assert KEY.encode() not in path.read_bytes()


def test_selection_is_judged_even_without_calls(server: ChatServer, tmp_path: Path) -> None:
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None and result.judge.selection is not None
    assert result.judge.arguments == ()
    assert len(server.chat_requests) == 1


def test_agreement_with_deterministic_checks(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: answer(body, "incorrect")
    result = only(server, tmp_path, PARIS)
    assert result.passed is True
    assert result.judge is not None
    assert (result.judge.agreement.selection, result.judge.agreement.arguments) == (False, False)


def test_retry_after_is_honoured(server: ChatServer, tmp_path: Path) -> None:
    server.push(
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "0.6"})
    )
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None and result.judge.status == "ok"
    first, second = server.chat_requests
    assert second.at - first.at >= 0.55


def test_exhausted_quota_is_not_retried_and_stops_the_run(
    server: ChatServer, tmp_path: Path
) -> None:
    server.push(
        Reply(
            status=429,
            body={
                "error": {
                    "message": "You exceeded your current quota",
                    "code": "insufficient_quota",
                }
            },
        )
    )
    with pytest.raises(JudgeEndpointError, match="quota"):
        only(server, tmp_path, NO_CALL)
    assert len(server.chat_requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_retried(server: ChatServer, tmp_path: Path, status: int) -> None:
    server.push(*[Reply(status=status, body={"error": {"message": "boom"}})] * 2)
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None and result.judge.status == "ok"
    assert len(server.chat_requests) == 3


def test_retries_are_bounded_then_judge_error(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: Reply(status=500, body={"error": {"message": "down"}})
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None
    assert result.judge.status == "judge_error"
    assert "retries exhausted" in (result.judge.error or "")
    assert len(server.chat_requests) == FAST.attempts


def test_bad_request_is_not_retried(server: ChatServer, tmp_path: Path) -> None:
    server.push(Reply(status=400, body={"error": {"message": "context too long"}}))
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None and result.judge.status == "judge_error"
    assert "context too long" in (result.judge.error or "")
    assert len(server.chat_requests) == 1


@pytest.mark.parametrize(
    ("status", "says"),
    [
        pytest.param(401, "API key", id="auth"),
        pytest.param(403, "access", id="permission"),
        pytest.param(404, "--model", id="unknown-model"),
    ],
)
def test_endpoint_refusals_stop_the_run_without_retrying(
    server: ChatServer, tmp_path: Path, status: int, says: str
) -> None:
    server.default = lambda body: Reply(status=status, body={"error": {"message": "no"}})
    with pytest.raises(JudgeEndpointError, match=says):
        only(server, tmp_path, NO_CALL)
    assert len(server.chat_requests) == 1


def test_slow_reply_past_the_timeout_is_retried(server: ChatServer, tmp_path: Path) -> None:
    server.push(lambda body: Reply(body=answer(body).body, delay=2.0))
    result = only(server, tmp_path, NO_CALL, timeout=0.5)
    assert result.judge is not None and result.judge.status == "ok"
    assert len(server.chat_requests) == 2


def test_malformed_http_body_is_a_judge_error(server: ChatServer, tmp_path: Path) -> None:
    server.push(Reply(body="{not json"))
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None and result.judge.status == "judge_error"
    assert "unreadable reply" in (result.judge.error or "")


@pytest.mark.parametrize(
    "first",
    [
        pytest.param(bad("this is not JSON"), id="unparseable-content"),
        pytest.param(
            bad('{"reasoning": "x", "verdict": "maybe", "category": "right_call"}'),
            id="off-schema-label",
        ),
        pytest.param(bad(""), id="empty-content"),
        pytest.param(bad(None), id="null-content"),
        pytest.param(bad('{"reasoning": "x", "verd', finish_reason="length"), id="truncated"),
        pytest.param(
            bad(
                '{"reasoning": "x", "verdict": "correct", "category": "right_call"}',
                finish_reason="length",
            ),
            id="length-even-if-parseable",
        ),
    ],
)
def test_bad_reply_is_reasked_in_the_same_conversation(
    server: ChatServer, tmp_path: Path, first: Reply
) -> None:
    server.push(first)
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None and result.judge.status == "ok"
    retry = server.chat_requests[1].body["messages"]
    assert retry[:2] == server.chat_requests[0].body["messages"]
    assert retry[2]["role"] == "assistant"
    assert retry[3]["role"] == "user" and "cannot be used" in retry[3]["content"]


def test_three_bad_replies_are_a_judge_error_with_the_raw_reply(
    server: ChatServer, tmp_path: Path
) -> None:
    server.default = lambda body: bad("nope, not JSON")
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None
    assert result.judge.status == "judge_error"
    assert result.judge.raw == "nope, not JSON"
    assert result.judge.selection is None
    assert len(server.chat_requests) == 3  # asked, then re-asked twice


def test_refusal_is_a_judge_error_at_once(server: ChatServer, tmp_path: Path) -> None:
    server.push(bad(None, refusal="I can't help with that."))
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None and result.judge.status == "judge_error"
    assert result.judge.raw == "I can't help with that."
    assert len(server.chat_requests) == 1


def test_wrong_number_of_argument_verdicts_is_reasked(server: ChatServer, tmp_path: Path) -> None:
    one = {"verdicts": [{"call": 0, "reasoning": "ok", "verdict": "correct", "problems": []}]}
    server.push(lambda body: answer(body), bad(json.dumps(one)))  # selection, then arguments
    result = only(server, tmp_path, TWO_CALLS)
    assert result.judge is not None and result.judge.status == "ok"
    assert len(result.judge.arguments) == 2
    assert len(server.chat_requests) == 3


def test_cache_turns_a_rerun_into_zero_requests(server: ChatServer, tmp_path: Path) -> None:
    cases = [PARIS, NO_CALL, TWO_CALLS]
    first = run(make_judge(server, tmp_path), cases)
    sent = len(server.chat_requests)
    again = run(make_judge(server, tmp_path), cases)
    assert len(server.chat_requests) == sent
    assert [r.judge.selection for r in again if r.judge] == [
        r.judge.selection for r in first if r.judge
    ]
    assert all(r.judge is not None and r.judge.usage.requests == 0 for r in again)
    run(make_judge(server, tmp_path, cache=False), cases)
    assert len(server.chat_requests) == 2 * sent  # --no-cache asks again


def test_judge_errors_are_not_cached(server: ChatServer, tmp_path: Path) -> None:
    server.push(Reply(status=400, body={"error": {"message": "nope"}}))
    assert only(server, tmp_path, NO_CALL).judge.status == "judge_error"  # type: ignore[union-attr]
    assert only(server, tmp_path, NO_CALL).judge.status == "ok"  # type: ignore[union-attr]
    assert len(server.chat_requests) == 2


def test_a_changed_setting_misses_the_cache(server: ChatServer, tmp_path: Path) -> None:
    only(server, tmp_path, NO_CALL)
    only(server, tmp_path, NO_CALL, temperature=0.5)
    only(server, tmp_path, NO_CALL, seed=8)
    assert len(server.chat_requests) == 3


def test_unknown_tool_makes_selection_incorrect_without_asking(
    server: ChatServer, tmp_path: Path
) -> None:
    data = case([call("get_wether", {"city": "Paris"})]) | {"id": "typo"}
    result = only(server, tmp_path, data)
    assert result.judge is not None and result.judge.selection is not None
    assert (
        result.judge.selection.verdict,
        result.judge.selection.category,
        result.judge.selection.source,
    ) == ("incorrect", "unknown_tool", "derived")
    assert server.chat_requests == []  # the only call is broken: nothing left to ask
    only(server, tmp_path, data, judge_broken=True)
    assert len(server.chat_requests) == 2


def test_structurally_broken_call_gets_a_derived_argument_verdict(
    server: ChatServer, tmp_path: Path
) -> None:
    data = case([call("get_weather", "{'city': 'Paris'}"), call("get_time", {})]) | {"id": "b"}
    result = only(server, tmp_path, data)
    assert result.judge is not None
    derived, asked = result.judge.arguments
    assert (derived.call, derived.verdict, derived.source, derived.problems) == (
        0,
        "incorrect",
        "derived",
        ("invalid_json",),
    )
    assert (asked.call, asked.source) == (1, "judge")
    arguments_request = server.chat_requests[1].body
    verdicts = requested_schema(arguments_request)["properties"]["verdicts"]
    assert verdicts["items"]["properties"]["call"]["enum"] == [1]


def test_samples_report_majority_and_flip_rate(server: ChatServer, tmp_path: Path) -> None:
    # Three samples of the selection question, then three of the arguments question.
    labels = iter(["correct", "incorrect", "correct", "incorrect", "incorrect", "incorrect"])
    server.default = lambda body: answer(body, next(labels))
    result = only(server, tmp_path, PARIS, samples=3, concurrency=1)
    assert result.judge is not None and result.judge.selection is not None
    assert result.judge.selection.verdict == "correct"
    assert [a.verdict for a in result.judge.arguments] == ["incorrect"]
    assert result.judge.flip_rate == pytest.approx((1 / 3 + 0) / 2)
    assert [r.body["seed"] for r in server.chat_requests] == [7, 8, 9, 7, 8, 9]


def test_auto_format_steps_down_when_json_schema_is_refused(
    server: ChatServer, tmp_path: Path
) -> None:
    def picky(body: dict[str, Any]) -> Reply:
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply(
                status=400,
                body={"error": {"message": "response_format json_schema is not supported"}},
            )
        return answer(body)

    server.default = picky
    results = run(make_judge(server, tmp_path, concurrency=1), [NO_CALL, PARIS])
    assert all(r.judge is not None and r.judge.status == "ok" for r in results)
    assert results[-1].judge is not None and results[-1].judge.provenance is not None
    assert results[-1].judge.provenance.response_format == "json_object"
    modes = [r.body["response_format"]["type"] for r in server.chat_requests]
    assert modes[0] == "json_schema" and modes.count("json_schema") == 1  # learnt once


def test_forced_tool_call_mode(server: ChatServer, tmp_path: Path) -> None:
    result = only(server, tmp_path, PARIS, response_format="tool")
    assert result.judge is not None and result.judge.status == "ok"
    body = server.chat_requests[0].body
    assert body["tool_choice"]["function"]["name"] == "submit_verdict"
    assert "response_format" not in body


def test_concurrency_is_bounded_and_nothing_is_lost(server: ChatServer, tmp_path: Path) -> None:
    # Each case's faults depend on the case, not on arrival order: c0, c4, ... get a 500 on
    # their first selection request (retried), c1, c5, ... an unusable first selection reply
    # (re-asked), c2, c6, ... a 400 on every selection request (judge_error); c3, c7, ... none.
    seen: Counter[str] = Counter()

    def faulty(body: dict[str, Any]) -> Reply:
        text = body["messages"][1]["content"]
        number = int(text.split("case-", 1)[1].split()[0].rstrip(".,)\"'"))
        kind = "selection" if "verdicts" not in requested_schema(body)["properties"] else "args"
        seen[f"{number}/{kind}"] += 1
        first = seen[f"{number}/{kind}"] == 1
        reply = answer(body)
        if kind == "selection" and number % 4 == 0 and first:
            reply = Reply(status=500, body={"error": {"message": "boom"}})
        elif kind == "selection" and number % 4 == 1 and first:
            reply = bad("garbage")
        elif kind == "selection" and number % 4 == 2:
            reply = Reply(status=400, body={"error": {"message": "nope"}})
        reply.delay = 0.02
        return reply

    server.default = faulty
    cases = [
        PARIS | {"id": f"c{i}", "messages": [{"role": "user", "content": f"Paris, case-{i} now"}]}
        for i in range(40)
    ]
    results = run(make_judge(server, tmp_path, concurrency=4), cases)
    assert [r.id for r in results] == [f"c{i}" for i in range(40)]
    statuses = [r.judge.status if r.judge else None for r in results]
    assert statuses == ["judge_error" if i % 4 == 2 else "ok" for i in range(40)]
    # Requests the judge counts (replies received): a 500 retried inside the client is not one.
    usage = [r.judge.usage.requests if r.judge else None for r in results]
    assert usage == [{0: 2, 1: 3, 2: 1, 3: 2}[i % 4] for i in range(40)]
    assert len(server.chat_requests) == 10 * (3 + 3 + 2 + 2)
    assert server.max_in_flight == 4  # bounded, and the bound is used


def test_a_case_without_response_is_skipped(server: ChatServer, tmp_path: Path) -> None:
    data = {"id": "todo", "messages": [{"role": "user", "content": "hi"}]}
    result = only(server, tmp_path, data)
    assert result.judge is not None and result.judge.status == "skipped"
    assert server.chat_requests == []


def test_a_rubric_that_cannot_render_a_case_is_a_judge_error(
    server: ChatServer, tmp_path: Path
) -> None:
    from judge.judging._rubric import builtin_rubrics_dir

    for source in builtin_rubrics_dir().glob("*.j2"):
        text = source.read_text()
        if 'dimension = "selection"' in text:  # a rubric reading a key not every tool has
            text = text.replace("{{ tool.name }}", "{{ tool.name }} {{ tool.parameters.required }}")
        (tmp_path / source.name).write_text(text)
    results = run(make_judge(server, tmp_path, rubrics=tmp_path), [NO_CALL, PARIS])
    assert [r.judge.status for r in results if r.judge] == ["judge_error", "judge_error"]
    assert "cannot render" in (results[0].judge.error or "")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("needed", "taken", "called", "judge_says", "settled"),
    [
        pytest.param(
            "call_tool",
            "call_tool",
            True,
            "correct",
            ("correct", "right_call"),
            id="right-call-judge-decides",
        ),
        pytest.param(
            "call_tool",
            "call_tool",
            True,
            "incorrect",
            ("incorrect", "wrong_tool"),
            id="wrong-tool-judge-decides",
        ),
        pytest.param(
            "ask_user",
            "call_tool",
            True,
            "correct",
            ("incorrect", "should_ask"),
            id="called-but-should-ask",
        ),
        pytest.param(
            "answer_directly",
            "call_tool",
            True,
            "correct",
            ("incorrect", "unnecessary_call"),
            id="unnecessary-call",
        ),
        pytest.param(
            "call_tool",
            "answer_directly",
            False,
            "correct",
            ("incorrect", "missing_call"),
            id="missing-call",
        ),
        pytest.param(
            "ask_user", "ask_user", False, "incorrect", ("correct", "right_ask"), id="rightly-asked"
        ),
        pytest.param(
            "answer_directly",
            "answer_directly",
            False,
            "incorrect",
            ("correct", "right_no_call"),
            id="rightly-answered",
        ),
        pytest.param(
            "call_tool",
            "ask_user",
            False,
            "correct",
            ("incorrect", "needless_ask"),
            id="needless-ask",
        ),
        pytest.param(
            "answer_directly",
            "call_tool",
            False,
            "correct",
            ("correct", "right_no_call"),
            id="no-call-made-whatever-the-judge-read",
        ),
    ],
)
def test_decided_actions_settle_the_selection(
    needed: str, taken: str, called: bool, judge_says: str, settled: tuple[str, str]
) -> None:
    from judge.judging._decide import settle_selection

    category = "right_call" if judge_says == "correct" else "wrong_tool"
    verdict = settle_selection(
        {
            "reasoning": "r",
            "needed_action": needed,
            "assistant_action": taken,
            "verdict": judge_says,
            "category": category,
        },
        called=called,
    )
    assert (verdict.verdict, verdict.category) == settled
    assert verdict.reasoning.startswith(f"needed: {needed}")


def test_small_rubric_asks_for_the_actions(server: ChatServer, tmp_path: Path) -> None:
    from judge import load_rubrics

    def decide(body: dict[str, Any]) -> Reply:
        schema = requested_schema(body)
        if "needed_action" not in schema["properties"]:
            return answer(body)
        reply = {
            "reasoning": "a tool fits",
            "needed_action": "ask_user",
            "assistant_action": "call_tool",
            "verdict": "correct",
            "category": "right_call",
        }
        return bad(json.dumps(reply))

    server.default = decide
    result = only(server, tmp_path, PARIS, rubrics=load_rubrics(kind="small"))
    assert result.judge is not None and result.judge.selection is not None
    assert (result.judge.selection.verdict, result.judge.selection.category) == (
        "incorrect",
        "should_ask",
    )


def test_an_unreadable_retry_after_backs_off_and_retries(
    server: ChatServer, tmp_path: Path
) -> None:
    # Regression: a Retry-After that is neither seconds nor a date raised inside the backoff.
    server.push(
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "soon"})
    )
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None and result.judge.status == "ok", result.judge
    assert len(server.chat_requests) == 2


def test_no_credit_402_stops_the_run_without_retrying(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: Reply(
        status=402, body={"error": {"message": "Insufficient credits", "code": 402}}
    )
    with pytest.raises(JudgeEndpointError, match="credit"):
        only(server, tmp_path, NO_CALL)
    assert len(server.chat_requests) == 1


@pytest.mark.parametrize("status", [409, 413])
def test_a_refused_request_is_not_called_retries_exhausted(
    server: ChatServer, tmp_path: Path, status: int
) -> None:
    server.push(Reply(status=status, body={"error": {"message": "not this one"}}))
    result = only(server, tmp_path, NO_CALL)
    assert result.judge is not None and result.judge.status == "judge_error"
    assert f"rejected the request ({status})" in (result.judge.error or "")
    assert "retries exhausted" not in (result.judge.error or "")
    assert len(server.chat_requests) == 1


def test_an_unreadable_cases_source_raises_instead_of_hanging(
    server: ChatServer, tmp_path: Path
) -> None:
    # Regression: an error reading the cases was swallowed and iter_grade waited forever.
    from judge._errors import InputError

    async def go() -> list[CaseResult]:
        async with make_judge(server, tmp_path) as judge:
            return [r async for r in judge.iter_grade(str(tmp_path / "missing.jsonl"))]

    async def bounded() -> list[CaseResult]:
        return await asyncio.wait_for(go(), timeout=10)

    with pytest.raises(InputError, match="missing.jsonl"):
        asyncio.run(bounded())
    assert server.chat_requests == []


def test_a_rubric_that_raises_on_a_case_is_a_judge_error_and_the_batch_goes_on(
    server: ChatServer, tmp_path: Path
) -> None:
    from judge import load_rubrics

    results = run(
        make_judge(server, tmp_path, rubrics=load_rubrics(kind="small")),
        [REQUIRED_IS_A_NUMBER, NO_CALL],
    )
    assert [(r.id, r.judge.status if r.judge else None) for r in results] == [
        ("odd", "judge_error"),
        ("no-call", "ok"),
    ]
    assert "cannot render" in (results[0].judge.error or "")  # type: ignore[union-attr]
    assert "TypeError" in (results[0].judge.error or "")  # type: ignore[union-attr]
    assert len(server.chat_requests) == 1  # only the good case's selection


def test_the_trajectory_rubric_does_not_re_ask_the_other_questions(
    server: ChatServer, tmp_path: Path
) -> None:
    run(make_judge(server, tmp_path), [PARIS, TWO_CALLS])
    assert len(server.chat_requests) == 4  # selection and arguments, per case
    run(make_judge(server, tmp_path, trajectory=True), [PARIS, TWO_CALLS])
    new = server.chat_requests[4:]
    assert len(new) == 2  # only the trajectory question, per case
    assert all("<trajectory>" in r.body["messages"][1]["content"] for r in new)


def test_editing_one_rubric_re_asks_only_its_questions(server: ChatServer, tmp_path: Path) -> None:
    from judge.judging._rubric import builtin_rubrics_dir

    folder = tmp_path / "rubrics"
    folder.mkdir()
    for source in builtin_rubrics_dir().glob("*.j2"):
        (folder / source.name).write_text(source.read_text())
    run(make_judge(server, tmp_path, rubrics=folder), [PARIS, TWO_CALLS])
    assert len(server.chat_requests) == 4
    edited = folder / "arguments.j2"
    edited.write_text(edited.read_text().replace('version = "', 'version = "9'))
    run(make_judge(server, tmp_path, rubrics=folder), [PARIS, TWO_CALLS])
    new = server.chat_requests[4:]
    assert len(new) == 2  # the arguments questions; selection came from the cache
    assert all("verdicts" in requested_schema(r.body)["properties"] for r in new)
