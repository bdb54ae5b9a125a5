"""Scored rubrics: one-token questions after a shared prompt, combined into verdicts with a
confidence, against a scripted server that returns logprobs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from judge import load_cases
from judge.checks._grounding import word_margin
from judge.checks._outcome import ArgumentVerdict, SelectionVerdict
from judge.judging._rubric import RubricError, builtin_rubrics_dir, load_rubric, load_rubrics
from judge.judging._scored import argument_verdict, probability
from tests.chat_server import Reply, completion, one_token, serving
from tests.helpers import call, case
from tests.test_judge import NO_CALL, PARIS, TWO_CALLS, make_judge, run

QUICK = builtin_rubrics_dir("quick")
ANSWERS = {"right_tool": 0.9, "needs_call": 0.7, "should_ask": 0.3, "match": 0.8}
CODE = {
    "ungrounded", "unused", "word_margin", "repeated", "guessed_required", "best_fit", "injection"
}  # fmt: skip


def by_question(body: dict[str, Any]) -> Reply:
    """P(yes) by the question's id, found from its text in the shipped rubric."""
    question = body["messages"][-1]["content"].rsplit("Question: ", 1)[1]
    rubrics = load_rubrics(QUICK)
    for rubric in (rubrics.selection, rubrics.arguments):
        for asked in rubric.questions:
            if question.startswith(asked.text.split("{call}")[0]):
                return one_token(ANSWERS[asked.id], cached=50)
    raise AssertionError(question)


def logit(p: float) -> float:
    return math.log(p / (1 - p))


def test_each_question_is_one_token_after_the_same_case(tmp_path: Path) -> None:
    with serving(by_question) as server:
        [result] = run(make_judge(server, tmp_path, rubrics=QUICK, samples=3), [TWO_CALLS])
        bodies = [r.body for r in server.chat_requests]
    rubrics = load_rubrics(QUICK)
    asked = [q for q in rubrics.selection.questions if q.when != "not_called"]
    assert len(bodies) == len(asked) + 2 * len(rubrics.arguments.questions)  # no samples
    for body in bodies:
        assert body["max_tokens"] == 1 and body["logprobs"] is True
        assert body["top_logprobs"] == 20
        assert "response_format" not in body and "tools" not in body
    prompts = {b["messages"][-1]["content"].rsplit("\n\nQuestion: ", 1)[0] for b in bodies}
    assert len(prompts) == 1  # every question of the case, both dimensions, shares the case
    outcome = result.judge
    assert outcome is not None and outcome.status == "ok"
    assert outcome.usage.cached_prompt_tokens == 50 * len(bodies)
    from judge.checks._judge_summary import JudgeSummary

    summary = JudgeSummary()
    summary.add(outcome)
    assert summary.to_dict()["cached_prompt_tokens"] == 50 * len(bodies)
    assert [a.call for a in outcome.arguments] == [0, 1]
    assert outcome.selection is not None
    assert outcome.selection.confidence_source == "logprobs"
    assert {v.confidence_source for v in outcome.arguments} == {"logprobs"}


def test_the_answers_combine_as_the_rubric_says(tmp_path: Path) -> None:
    with serving(by_question) as server:
        [paris, hello] = run(make_judge(server, tmp_path, rubrics=QUICK), [PARIS, NO_CALL])
    rubrics = load_rubrics(QUICK)
    assert paris.judge is not None and paris.judge.selection is not None
    combine = rubrics.selection.combine["called"]
    assert set(combine.weights) <= set(ANSWERS) | CODE  # nothing is left out of z below
    # PARIS: no value outside the conversation, none of the user's left out: counts of 0;
    # get_weather shares "weather" with the request, get_time nothing: a word margin of 1.
    [loaded] = load_cases([PARIS])
    margin = word_margin(loaded)
    assert margin == 1
    z = sum(w * logit(ANSWERS[k]) for k, w in combine.weights.items() if k in ANSWERS)
    z += combine.bias + combine.weights.get("word_margin", 0.0) * margin
    p = 1 / (1 + math.exp(-z))
    selection = paris.judge.selection
    assert selection.verdict == ("correct" if p >= combine.threshold else "incorrect")
    assert selection.confidence == pytest.approx(p if selection.verdict == "correct" else 1 - p)
    assert selection.features is not None
    for name, value in selection.features.items():
        code = margin if name == "word_margin" else 0.0
        assert value == (code if name in CODE else pytest.approx(ANSWERS[name]))
    assert f"P(correct) = {p:.2f}" in selection.reasoning
    assert "word margin of the called tool over the closest other: +1" in selection.reasoning
    [argument] = paris.judge.arguments
    combine = rubrics.arguments.combine["called"]
    z = combine.bias + sum(
        w * (logit(ANSWERS[k]) if k in ANSWERS else 0.0) for k, w in combine.weights.items()
    )
    assert argument.confidence == pytest.approx(max(1 / (1 + math.exp(-z)), 1 / (1 + math.exp(z))))
    assert hello.judge is not None and hello.judge.selection is not None
    assert hello.judge.arguments == ()
    assert set(hello.judge.selection.features or {}) - CODE == {
        q.id for q in rubrics.selection.questions if q.when != "called"
    }


def test_values_found_nowhere_weigh_against_the_arguments(tmp_path: Path) -> None:
    made_up = case([call("get_weather", {"city": "Paris", "days": 9})]) | {"id": "m"}
    with serving(by_question) as server:
        [plain, odd] = run(make_judge(server, tmp_path, rubrics=QUICK), [PARIS, made_up])
    assert plain.judge is not None and odd.judge is not None
    [a], [b] = plain.judge.arguments, odd.judge.arguments
    assert b.features is not None and b.features["ungrounded"] == 1.0
    assert "1 value(s) found nowhere in the conversation" in b.reasoning
    assert _p(b) < _p(a)


def test_an_option_the_user_did_not_say_weighs_against_the_arguments(tmp_path: Path) -> None:
    said = [{"role": "user", "content": "weather in Paris in c"}]
    right = case([call("get_weather", {"city": "Paris", "units": "c"})], messages=said)
    wrong = case([call("get_weather", {"city": "Paris", "units": "f"})], messages=said)
    with serving(by_question) as server:
        [a], [b] = (
            r.judge.arguments
            for r in run(
                make_judge(server, tmp_path, rubrics=QUICK),
                [right | {"id": "c"}, wrong | {"id": "f"}],
            )
            if r.judge is not None
        )
    assert load_rubrics(QUICK).arguments.combine["called"].weights["unsaid_options"] < 0
    assert a.features is not None and a.features["unsaid_options"] == 0
    assert b.features is not None and b.features["unsaid_options"] == 1
    assert "1 option(s) the user did not say, where they said another" in b.reasoning
    assert _p(b) < _p(a)
    rubric = load_rubrics(QUICK).arguments
    unsure = argument_verdict(rubric, 0, {"match": 0.4}, {"unsaid_options": 1.0})
    assert unsure.verdict == "incorrect" and unsure.problems == ("wrong_entity",)
    listed = argument_verdict(rubric, 0, {"match": 0.4}, {"other_records": 1.0})
    assert listed.verdict == "incorrect" and listed.problems == ("wrong_entity",)


def test_the_reasoning_can_state_every_count_from_code() -> None:
    from judge.judging._rubric import CODE_FEATURES
    from judge.judging._scored import _COUNTS_SAID

    assert set(_COUNTS_SAID) == CODE_FEATURES


def test_repeated_calls_and_made_up_required_values_weigh_against_the_selection(
    tmp_path: Path,
) -> None:
    twice = case([call("get_weather", {"city": "Paris"})] * 2) | {"id": "twice"}
    guessed = case([call("get_weather", {"city": "Lyon"})]) | {"id": "guessed"}
    unfit = NO_CALL | {"id": "unfit", "messages": [{"role": "user", "content": "tell a joke"}]}
    with serving(by_question) as server:
        results = run(
            make_judge(server, tmp_path, rubrics=QUICK), [PARIS, twice, guessed, NO_CALL, unfit]
        )
    plain, doubled, lyon, hello, joke = [_selection(r) for r in results]
    combine = load_rubrics(QUICK).selection.combine
    assert combine["called"].weights["repeated"] < 0
    assert combine["called"].weights["guessed_required"] < 0
    assert doubled.features == {**(plain.features or {}), "repeated": 1.0}
    assert "1 call(s) repeating an earlier call exactly" in doubled.reasoning
    assert lyon.features is not None and lyon.features["guessed_required"] == 1.0
    assert "1 required value(s) the conversation never gave" in lyon.reasoning
    assert _p(doubled) < _p(plain) and _p(lyon) < _p(plain)
    # A reply without calls: the better a tool fits the request, the likelier a missed call.
    assert combine["not_called"].weights["best_fit"] < 0
    assert hello.features is not None and hello.features["best_fit"] == 1.0  # "weather"
    assert "the best-fitting tool shares 1 of the user's words" in hello.reasoning
    assert joke.features is not None and joke.features["best_fit"] == 0.0
    assert _p(joke) > _p(hello)


def _selection(result: Any) -> SelectionVerdict:
    assert result.judge is not None and isinstance(result.judge.selection, SelectionVerdict)
    return result.judge.selection


def _p(verdict: SelectionVerdict | ArgumentVerdict) -> float:
    """P(correct), from the verdict's label and confidence."""
    assert verdict.confidence is not None
    return verdict.confidence if verdict.verdict == "correct" else 1 - verdict.confidence


def test_answers_are_cached(tmp_path: Path) -> None:
    with serving(by_question) as server:
        [first] = run(make_judge(server, tmp_path, rubrics=QUICK), [PARIS])
        asked = len(server.chat_requests)
        [again] = run(make_judge(server, tmp_path, rubrics=QUICK), [PARIS])
        assert len(server.chat_requests) == asked
    assert again.judge is not None and again.judge.usage.cached == asked
    assert first.judge is not None
    assert again.judge.selection == first.judge.selection


def test_an_endpoint_without_logprobs_is_a_judge_error_that_says_why(tmp_path: Path) -> None:
    with serving(lambda body: Reply(body=completion("yes"))) as server:
        [result] = run(make_judge(server, tmp_path, rubrics=QUICK), [PARIS])
    assert result.judge is not None and result.judge.status == "judge_error"
    assert "returns token logprobs" in (result.judge.error or "")


def test_long_values_are_cut_with_a_marker(tmp_path: Path) -> None:
    long = case([call("get_weather", {"city": "Paris " * 5000})]) | {"id": "long"}
    long["messages"] = [{"role": "user", "content": "x" * 30_000}]
    with serving(by_question) as server:
        [result] = run(make_judge(server, tmp_path, rubrics=QUICK), [long])
        prompt = server.chat_requests[0].body["messages"][-1]["content"]
    assert result.judge is not None and result.judge.status == "ok"
    assert "more characters]" in prompt
    assert len(prompt) < 13_000


def test_a_long_conversation_in_any_script_fits_the_context(tmp_path: Path) -> None:
    # 120 turns of CJK text: each turn is shortened, yet together they were 24,000 characters,
    # some 17,000 tokens, past the embedded judge's 8,192. A character outside ASCII counts
    # as four against the rubric's 12,000, so the cut leaves room in any script.
    zh = "".join(chr(0x4E00 + (i * 7919) % 3000) for i in range(200))
    messages = [{"role": r, "content": zh} for _ in range(60) for r in ("user", "assistant")]
    long = case([call("get_weather", {"city": "北京"})]) | {"id": "zh"}
    long["messages"] = [*messages, {"role": "user", "content": "北京天气?"}]
    with serving(by_question) as server:
        [result] = run(make_judge(server, tmp_path, rubrics=QUICK), [long])
        prompt = server.chat_requests[0].body["messages"][-1]["content"]
    assert result.judge is not None and result.judge.status == "ok"
    assert "characters left out]" in prompt and "北京天气?" in prompt  # the end is kept
    case_text = prompt.rsplit("\n\nQuestion: ", 1)[0]
    assert 11_000 < len(case_text) + 3 * sum(not c.isascii() for c in case_text) <= 12_100


def test_cut_middle_keeps_two_thirds_of_the_room_at_the_start() -> None:
    from judge.judging._sandbox import cut_middle

    text = "a" * 9000 + "b" * 9000
    cut = cut_middle(text, 12_000)
    assert cut == "a" * 8000 + "\n...[6,000 characters left out]...\n" + "b" * 4000
    assert cut_middle("é" * 3000, 12_000) == "é" * 3000  # 12,000 wide: fits
    wide = cut_middle("é" * 3001 + "z", 12_000)
    assert wide.startswith("é" * 2000 + "\n...[") and wide.endswith("é" * 999 + "z")


def header(extra: str) -> str:
    return (
        '+++\nname = "s"\nversion = "1"\ndimension = "selection"\n'
        f'labels = ["correct", "incorrect"]\n{extra}+++\n'
        "{% block system %}s{% endblock %}{% block user %}u{% endblock %}"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('[[questions]]\nid = "a"\ntext = "?"\n', "need `answers`"),
        ('answers = ["yes", "no"]\n', "needs [[questions]]"),
        (
            'answers = ["yes", "no"]\n[[questions]]\nid = "a"\ntext = "?"\n'
            "[combine.called]\nweights = { a = 1.0 }\n",
            "no [combine.not_called]",
        ),
        (
            'answers = ["yes", "no"]\n[[questions]]\nid = "a"\ntext = "?"\nwhen = "called"\n'
            "[combine.called]\nweights = { a = 1.0 }\n"
            "[combine.not_called]\nweights = { a = 1.0 }\n",
            "weighs ['a']",
        ),
        ('answers = ["yes", "Yes"]\n[[questions]]\nid = "a"\ntext = "?"\n', "distinct"),
    ],
)
def test_a_scored_rubric_that_does_not_fit_together_is_refused(
    tmp_path: Path, extra: str, message: str
) -> None:
    path = tmp_path / "s.j2"
    path.write_text(header(extra))
    with pytest.raises(RubricError, match=message.replace("[", r"\[").replace("`", ".")):
        load_rubric(path)


def test_probability_is_the_logistic_of_the_weighted_log_odds() -> None:
    rubric = load_rubrics(QUICK).arguments
    combine = rubric.combine["called"].model_copy(
        update={"bias": 0.5, "weights": {"match": 2.0, "ungrounded": -1.0}}
    )
    z = 0.5 + 2.0 * logit(0.8) - 1.0 * 2
    assert probability(combine, {"match": 0.8, "ungrounded": 2}) == pytest.approx(
        1 / (1 + math.exp(-z))
    )


def test_a_dry_run_counts_each_question_and_what_is_cached(tmp_path: Path) -> None:
    import asyncio

    from judge.judging._plan import plan

    with serving(by_question) as server:
        judge = make_judge(server, tmp_path, rubrics=QUICK)
        before = asyncio.run(plan(judge, [TWO_CALLS]))
        run(make_judge(server, tmp_path, rubrics=QUICK), [TWO_CALLS])
        asked = len(server.chat_requests)
        after = asyncio.run(plan(make_judge(server, tmp_path, rubrics=QUICK), [TWO_CALLS]))
    assert (before.requests, before.cached) == (asked, 0)
    assert (after.requests, after.cached) == (0, asked)
