"""Confidence on every verdict: from token logprobs, from samples, and the one-time fallback
when an endpoint refuses logprobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.endpoints._client import Token
from judge.judging._confidence import answer_distribution, label_distributions
from judge.judging._decide import selection_confidence
from judge.judging._rubric import builtin_rubrics_dir
from tests.chat_server import ChatServer, Reply, answer, serving, with_logprobs
from tests.helpers import call, case, tool
from tests.test_judge import PARIS, TWO_CALLS, make_judge, run

SURE = {"correct": 0.6, "inc": 0.2, '"': 0.2}  # '"' starts no label: dropped, then renormalised


def test_labels_are_read_where_their_value_starts() -> None:
    text = '{"reasoning": "ok", "verdict": "correct", "category": "right_call"}'
    tokens = [Token(t, ((t, 0.0),)) for t in ('{"reasoning": "ok", "verdict', '": "')]
    tokens.append(Token("correct", (("correct", -0.5), ("in", -1.5), ("c", -2.0), ("x", -1.0))))
    tokens.append(Token('", "category": "right_call"}', ()))
    [found] = label_distributions(text, tokens, "verdict", ["correct", "incorrect"])
    assert found is not None
    p = {"correct": 0.6065 + 0.1353, "incorrect": 0.2231}  # e^-0.5 + e^-2 (c) vs e^-1.5
    assert found["correct"] == pytest.approx(p["correct"] / sum(p.values()), abs=1e-3)


def test_a_token_that_spans_the_quote_and_the_label_counts() -> None:
    text = '{"verdict": "incorrect"}'
    tokens = [Token('{"verdict":', ()), Token(' "inc', ((' "inc', -0.1), (' "correct', -2.3)))]
    tokens.append(Token('orrect"}', ()))
    [found] = label_distributions(text, tokens, "verdict", ["correct", "incorrect"])
    assert found == pytest.approx({"incorrect": 0.9, "correct": 0.1}, abs=0.01)


def test_nothing_is_read_from_tokens_that_do_not_spell_the_reply() -> None:
    tokens = [Token('{"verdict": "correct"}', ())]
    assert label_distributions('{"verdict": "incorrect"}', tokens, "verdict", ["correct"]) == []
    same_length = [Token('{"verdict": "', ()), Token("wrongxx", ()), Token('"}', ())]
    assert label_distributions('{"verdict": "correct"}', same_length, "verdict", ["correct"]) == []
    shared = [Token('{"verdict": "', ()), Token("x", (("x", 0.0),)), Token('"}', ())]
    assert label_distributions('{"verdict": "x"}', shared, "verdict", ["correct"]) == [None]


def test_one_word_answers_are_renormalised() -> None:
    tokens = [Token("Yes", (("Yes", -0.2), (" yes", -2.0), ("No", -1.8), ("Maybe", -0.5)))]
    found = answer_distribution(tokens, ["yes", "no"])
    assert found is not None
    yes = 0.8187 + 0.1353
    assert found["yes"] == pytest.approx(yes / (yes + 0.1653), abs=1e-3)
    assert answer_distribution([Token("Maybe", (("Maybe", 0.0),))], ["yes", "no"]) is None


def test_the_needed_action_carries_the_selection_confidence() -> None:
    needed = {"call_tool": 0.7, "ask_user": 0.2, "answer_directly": 0.1}
    # taken: ask_user. Correct only if the user had to be asked.
    assert selection_confidence(needed, None, "ask_user", "correct") == pytest.approx(0.2)
    assert selection_confidence(needed, None, "ask_user", "incorrect") == pytest.approx(0.8)
    # taken: call_tool; needed call_tool leaves it to the judge's own verdict.
    verdict = {"correct": 0.9, "incorrect": 0.1}
    assert selection_confidence(needed, verdict, "call_tool", "correct") == pytest.approx(0.63)
    assert selection_confidence(needed, None, "call_tool", "correct") is None


def refuse(body: dict[str, Any]) -> Reply:
    """An endpoint that rejects any request asking for logprobs."""
    if body.get("logprobs"):
        return Reply(400, {"error": {"message": "logprobs are not supported by this model"}})
    return answer(body)


def scripted(at: dict[str, dict[str, float]], label: str = "correct") -> Any:
    def reply(body: dict[str, Any]) -> Reply:
        assert body["logprobs"] is True and body["top_logprobs"] == 5
        return with_logprobs(answer(body, label), at)

    return reply


def test_every_judged_verdict_gets_its_label_probability(tmp_path: Path) -> None:
    with serving(scripted({"verdict": SURE})) as server:
        [result] = run(make_judge(server, tmp_path), [TWO_CALLS])
    outcome = result.judge
    assert outcome is not None and outcome.selection is not None
    assert outcome.provenance is not None and outcome.provenance.logprobs == 5
    assert len(outcome.arguments) == 2
    for verdict in (outcome.selection, *outcome.arguments):
        assert verdict.confidence_source == "logprobs"
        assert verdict.confidence == pytest.approx(0.75)


def test_cached_replies_keep_their_confidence(tmp_path: Path) -> None:
    with serving(scripted({"verdict": SURE})) as server:
        run(make_judge(server, tmp_path), [PARIS])
        [again] = run(make_judge(server, tmp_path), [PARIS])
        assert len(server.chat_requests) == 2
    assert again.judge is not None and again.judge.usage.cached == 2
    assert again.judge.selection is not None
    assert again.judge.selection.confidence == pytest.approx(0.75)
    assert again.judge.selection.confidence_source == "logprobs"


def test_an_endpoint_that_refuses_logprobs_is_asked_without_them_once_learnt(
    tmp_path: Path,
) -> None:
    with serving(refuse) as server:
        results = run(make_judge(server, tmp_path, concurrency=1), [PARIS, TWO_CALLS])
        asked = [r.body.get("logprobs") for r in server.chat_requests]
    assert asked.count(True) == 1 and len(asked) == 5  # one refusal, then 4 questions without
    for result in results:
        assert result.judge is not None and result.judge.status == "ok"
        assert result.judge.provenance is not None and result.judge.provenance.logprobs is None
        for verdict in [result.judge.selection, *result.judge.arguments]:
            assert verdict is not None
            assert verdict.confidence is None and verdict.confidence_source == "none"


def test_an_endpoint_that_ignores_logprobs_gives_verdicts_without_confidence(
    server: ChatServer, tmp_path: Path
) -> None:
    [result] = run(make_judge(server, tmp_path), [PARIS])
    assert result.judge is not None and result.judge.selection is not None
    assert result.judge.selection.confidence_source == "none"
    assert result.judge.selection.confidence is None


def test_a_judge_cannot_state_its_own_confidence(tmp_path: Path) -> None:
    def boastful(body: dict[str, Any]) -> Reply:
        reply = answer(body)
        data = json.loads(reply.body["choices"][0]["message"]["content"])
        data.update(confidence=1.0, confidence_source="logprobs")
        reply.body["choices"][0]["message"]["content"] = json.dumps(data)
        return reply

    with serving(boastful) as server:
        [result] = run(make_judge(server, tmp_path, response_format="json_object"), [PARIS])
    assert result.judge is not None and result.judge.selection is not None
    assert result.judge.selection.confidence is None
    assert result.judge.selection.confidence_source == "none"


def test_samples_give_the_share_that_agrees(tmp_path: Path) -> None:
    labels = iter(["correct", "incorrect", "correct"] * 2)
    with serving(lambda body: with_logprobs(answer(body, next(labels)), {"verdict": SURE})) as s:
        [result] = run(make_judge(s, tmp_path, samples=3), [PARIS])
    assert result.judge is not None and result.judge.selection is not None
    assert result.judge.selection.verdict == "correct"
    assert result.judge.selection.confidence == pytest.approx(2 / 3)
    assert result.judge.selection.confidence_source == "samples"
    [verdict] = result.judge.arguments
    assert verdict.confidence_source == "samples"


def test_the_small_rubric_reads_the_needed_action(tmp_path: Path) -> None:
    at = {"needed_action": {"call_tool": 0.5, "ask_user": 0.25, "answer_directly": 0.25}}
    at["verdict"] = {"correct": 0.8, "incorrect": 0.2}
    with serving(scripted(at)) as server:
        judge = make_judge(server, tmp_path, rubrics=builtin_rubrics_dir("small"))
        [result] = run(judge, [PARIS])
    assert result.judge is not None and result.judge.selection is not None
    assert result.judge.selection.confidence == pytest.approx(0.4)  # 0.5 x 0.8


def test_derived_verdicts_are_certain(tmp_path: Path) -> None:
    unknown = case([call("get_wether", {"city": "Paris"})], tools=[tool("get_weather")])
    with serving(scripted({"verdict": SURE})) as server:
        [result] = run(make_judge(server, tmp_path), [unknown])
    assert result.judge is not None and result.judge.selection is not None
    assert result.judge.selection.source == "derived"
    assert result.judge.selection.confidence == 1.0
    [verdict] = result.judge.arguments
    assert verdict.source == "derived" and verdict.confidence == 1.0


def test_a_reply_cannot_abstain_or_claim_to_be_derived(tmp_path: Path) -> None:
    def sneaky(body: dict[str, Any]) -> Reply:
        reply = answer(body)
        data = json.loads(reply.body["choices"][0]["message"]["content"])
        if "verdicts" in data:
            data["verdicts"][0].update(verdict="uncertain", leaning="correct")
        else:
            data.update(source="derived", escalated=True)
        reply.body["choices"][0]["message"]["content"] = json.dumps(data)
        return reply

    with serving(sneaky) as server:
        [result] = run(make_judge(server, tmp_path, response_format="json_object"), [PARIS])
    assert result.judge is not None and result.judge.selection is not None
    assert result.judge.selection.source == "judge" and not result.judge.selection.escalated
    # "uncertain" is not a label a judge may give: the reply is asked again, then an error.
    assert result.judge.status == "judge_error"
    assert "verdict must be one of" in (result.judge.error or "")


def test_a_refused_logprobs_run_keeps_the_fingerprint_it_was_calibrated_with(
    tmp_path: Path,
) -> None:
    with serving(refuse) as server:
        judge = make_judge(server, tmp_path)
        before = judge.fingerprint()
        run(judge, [PARIS])
        assert judge.fingerprint() == before == make_judge(server, tmp_path).fingerprint()
