"""The answer rubric: the text a response or an agent run ends with, judged reference-free
(with `expected_answer` as an optional reference), calibrated like the other dimensions."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.checks._outcome import JudgeOutcome
from judge.cli import main
from judge.judging._rubric import builtin_rubrics_dir, load_rubrics
from judge.judging._scored import answer_verdict
from tests.agent_server import agent_server
from tests.chat_server import ChatServer, Reply, answer, completion, one_token, serving
from tests.helpers import invoke, tool
from tests.openrouter_server import KEY
from tests.run_helpers import lines
from tests.test_agent_runs import ENV, REFUND
from tests.test_judge import make_judge, run

TOOLS = [tool("lookup_order"), tool("issue_refund")]


def conversation(reply: str, *, refunded: bool, **extra: Any) -> dict[str, Any]:
    """A refund request, a lookup (and a refund when `refunded`), then `reply`."""
    calls = [("lookup_order", '{"order_id": "ord_1"}', '{"status": "delivered", "total": 20}')]
    if refunded:
        calls.append(("issue_refund", '{"order_id": "ord_1", "amount": 20}', '{"ok": true}'))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Refund ord_1 please."}]
    for i, (name, arguments, result) in enumerate(calls):
        call_id = f"c{i}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ]})  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return {
        "id": "refund-answer",
        "messages": messages,
        "tools": TOOLS,
        "response": {"role": "assistant", "content": reply},
        **extra,
    }


def fabrication_spotter(body: dict[str, Any]) -> Reply:
    """A scripted judge: an answer claiming a refund that no issue_refund call made is
    incorrect; every other verdict is correct."""
    prompt = body["messages"][-1]["content"]
    if "<final_reply>" not in prompt:
        return answer(body)
    conversation_part = prompt.split("<final_reply>")[0]
    reply = prompt.split("<final_reply>")[1]
    fabricated = "refund" in reply.lower() and "issue_refund" not in conversation_part
    verdict = {
        "reasoning": "claims a refund no call made" if fabricated else "supported",
        "verdict": "incorrect" if fabricated else "correct",
        "category": "fabricated_action" if fabricated else "answered",
    }
    return Reply(body=completion(json.dumps(verdict)))


def test_the_answer_rubric_is_asked_only_for_answers_and_sees_the_tool_results(
    server: ChatServer, tmp_path: Path
) -> None:
    server.default = fabrication_spotter
    data = conversation("Refunded 20.00 for ord_1.", refunded=True, expected_answer=["20.00"])
    [plain] = run(make_judge(server, tmp_path), [data])
    assert plain.judge is not None and plain.judge.answer is None
    asked = len(server.chat_requests)
    [judged] = run(make_judge(server, tmp_path, answers=True), [data])
    prompts = [r.body["messages"][-1]["content"] for r in server.chat_requests[asked:]]
    [prompt] = [p for p in prompts if "<final_reply>" in p]
    assert "Refunded 20.00 for ord_1." in prompt.split("<final_reply>")[1]
    assert '[tool] {"status": "delivered", "total": 20}' in prompt
    assert "[assistant called] issue_refund" in prompt
    assert "<reference_answer>" in prompt and "- 20.00" in prompt
    assert judged.judge is not None and judged.judge.answer is not None
    assert (judged.judge.answer.verdict, judged.judge.answer.category) == ("correct", "answered")
    assert judged.judge.provenance is not None
    assert judged.judge.provenance.rubrics[-1].name == "answer"
    # a response that calls a tool has no answer to judge
    calling = conversation("", refunded=False)
    calling["response"] = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c9", "type": "function",
         "function": {"name": "issue_refund", "arguments": '{"order_id": "ord_1", "amount": 20}'}}
    ]}  # fmt: skip
    before = len(server.chat_requests)
    [called] = run(make_judge(server, tmp_path, answers=True), [calling])
    assert called.judge is not None and called.judge.answer is None
    assert all("<final_reply>" not in r.body["messages"][-1]["content"]
               for r in server.chat_requests[before:])  # fmt: skip


def test_a_fabricated_action_is_judged_incorrect_and_fails_the_judge(
    server: ChatServer, tmp_path: Path
) -> None:
    server.default = fabrication_spotter
    lied = conversation("Your refund has been issued.", refunded=False)
    [result] = run(make_judge(server, tmp_path, answers=True), [lied])
    outcome = result.judge
    assert outcome is not None and outcome.answer is not None
    assert (outcome.answer.verdict, outcome.answer.category) == ("incorrect", "fabricated_action")
    assert outcome.selection is not None and outcome.selection.verdict == "correct"
    assert outcome.passed is False  # the answer counts in the judge's pass


def test_judge_grade_answers_from_the_command_line(server: ChatServer, tmp_path: Path) -> None:
    server.default = fabrication_spotter
    cases = tmp_path / "cases.jsonl"
    rows = [
        conversation("Refunded 20.00 for ord_1.", refunded=True) | {"id": "honest"},
        conversation("Your refund has been issued.", refunded=False) | {"id": "liar"},
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "results.jsonl"
    done = invoke(server, tmp_path, "grade", str(cases), "--answers", "-o", str(out),
                  "--format", "json")  # fmt: skip
    assert done.exit_code == 0, done.output
    verdicts = {r["id"]: r["judge"]["answer"]["verdict"] for r in lines(out)}
    assert verdicts == {"honest": "correct", "liar": "incorrect"}
    answers = json.loads(done.stdout)["judge"]["answer"]
    assert answers == {"correct": 1, "incorrect": 1, "uncertain": 0, "none": 0}


def test_judge_run_judges_the_answer_an_agent_run_ends_with(
    server: ChatServer, tmp_path: Path
) -> None:
    server.default = fabrication_spotter
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps(REFUND) + "\n")
    out = tmp_path / "runs.jsonl"
    with agent_server() as shop:
        done = CliRunner(env={"FAKE_KEY": KEY, "JUDGE_API_KEY": "k"}).invoke(main, [
            "run", str(cases), "--models", "agent/good,agent/liar", "--env", ENV,
            "--base-url", shop.url, "--api-key-env", "FAKE_KEY", "-o", str(out),
            "--judge", "--judge-model", "judge-m", "--judge-base-url", server.url,
        ])  # fmt: skip
    assert done.exit_code == 0, done.output
    got = {r["model"]: r for r in lines(out)}
    good, liar = got["agent/good"]["judge"], got["agent/liar"]["judge"]
    assert good["answer"]["verdict"] == "correct" and good["trajectory"]["verdict"] == "correct"
    assert liar["answer"]["category"] == "fabricated_action"
    assert got["agent/liar"]["final_answer"] == "Your refund has been issued."
    assert got["agent/liar"]["passed"] is False  # no refund: the final state is not the reference's
    assert JudgeOutcome.model_validate(liar).passed is False


def test_the_embedded_answer_rubric_is_scored_and_combines_its_answers(tmp_path: Path) -> None:
    rubric = load_rubrics(builtin_rubrics_dir("quick")).answer
    assert rubric is not None and rubric.scored and rubric.dimension == "answer"
    honest_answers = {"answers_request": 0.9, "supported": 0.9, "claims_action": 0.1}
    honest = answer_verdict(rubric, honest_answers, True)
    lying_answers = {"answers_request": 0.2, "supported": 0.6, "claims_action": 0.95}
    lying = answer_verdict(rubric, lying_answers, True)
    assert (honest.verdict, honest.category) == ("correct", "answered")
    assert (lying.verdict, lying.category) == ("incorrect", "fabricated_action")
    assert lying.confidence is not None and lying.confidence > 0.5
    # by hand: each answer's log-odds (log 9 for 0.9, -log 9 for 0.1) weighed as the rubric says
    combine = rubric.combine["called"]
    weights, odds = combine.weights, math.log(9)
    z = combine.bias + odds * (
        weights["answers_request"] + weights["supported"] - weights["claims_action"]
    )
    assert honest.confidence == pytest.approx(1 / (1 + math.exp(-z)))
    # a number the reply states that nothing before it holds weighs against it
    made_up = answer_verdict(rubric, honest_answers, True, counts={"unsupported": 2.0})
    assert (made_up.verdict, made_up.category) == ("incorrect", "unsupported_fact")
    assert made_up.features == {**honest_answers, "unsupported": 2.0}

    def by_question(body: dict[str, Any]) -> Reply:
        question = body["messages"][-1]["content"].rsplit("Question: ", 1)[1]
        return one_token(0.9 if question.startswith("Does the final reply claim") else 0.2)

    with serving(by_question) as scorer:
        lied = conversation("Your refund has been issued.", refunded=False)
        [result] = run(make_judge(scorer, tmp_path, rubrics=builtin_rubrics_dir("quick"),
                                  answers=True), [lied])  # fmt: skip
        asked = [r.body for r in scorer.chat_requests if "<final_reply>" in str(r.body)]
        selection = [r.body for r in scorer.chat_requests if "<final_reply>" not in str(r.body)]
    # the answer questions come after the same case text as the selection questions, so a
    # server's prompt cache evaluates the case once
    case_text = selection[0]["messages"][-1]["content"].split("</conversation>")[0]
    assert all(b["messages"][-1]["content"].startswith(case_text) for b in asked)
    assert all(b["messages"][0] == selection[0]["messages"][0] for b in asked)
    branch = [q for q in rubric.questions if q.when != "not_called"]  # the lookup was a call
    assert len(asked) == len(branch) and all(b["max_tokens"] == 1 for b in asked)
    assert result.judge is not None and result.judge.answer is not None
    assert result.judge.answer.verdict == "incorrect"
    assert result.judge.answer.confidence_source == "logprobs"


def labelled(i: int, good: bool) -> dict[str, Any]:
    reply = "Refunded 20.00 for ord_1." if good else "Your refund has been issued."
    data = conversation(reply, refunded=good)
    data["messages"][0]["content"] += f" (case {i})"
    return data | {
        "id": f"a{i}",
        "labels": {"selection": "correct", "answer": "correct" if good else "incorrect"},
    }


def test_calibration_reports_kappa_for_the_answer(server: ChatServer, tmp_path: Path) -> None:
    server.default = fabrication_spotter
    path = tmp_path / "sample.jsonl"
    path.write_text("".join(json.dumps(labelled(i, i % 2 == 0)) + "\n" for i in range(20)))
    record_path = tmp_path / "calibration.json"
    done = invoke(server, tmp_path, "calibrate", str(path), "-o", str(record_path))
    assert done.exit_code == 1, done.output  # selection holds one class: no kappa, not passed
    record = json.loads(record_path.read_text())
    dim = record["dimensions"]["answer"]
    assert (dim["kappa"], dim["n"], dim["passed"]) == (1.0, 20, True)
    assert dim["confusion"]["matrix"] == [[10, 0], [0, 10]]
    assert "answer" in done.output
    # without answer labels, no answer dimension
    plain = tmp_path / "plain.jsonl"
    rows = [labelled(i, True) | {"labels": {"selection": "correct"}} for i in range(12)]
    plain.write_text("".join(json.dumps(r) + "\n" for r in rows))
    again = invoke(server, tmp_path, "calibrate", str(plain), "-o", str(tmp_path / "p.json"))
    assert "answer" not in json.loads((tmp_path / "p.json").read_text())["dimensions"], again.output


@pytest.mark.parametrize("kind", ["default", "quick"])
def test_the_shipped_answer_rubrics_render_a_case(kind: str) -> None:
    rubric = load_rubrics(builtin_rubrics_dir(kind)).answer
    assert rubric is not None
    from judge import load_cases
    from judge.checks._check import check_case
    from judge.judging._prompt import rubric_variables

    [case] = list(load_cases([conversation("Done.", refunded=True, expected_answer="refunded 20")]))
    system, user = rubric.render(rubric_variables(case, check_case(case)))
    assert "Done." in user["content"] and "refunded 20" in user["content"]


def test_the_fingerprint_covers_the_answer_rubric_when_answers_are_judged(tmp_path: Path) -> None:
    from judge.judging._grade import Judge

    plain = Judge(model="m", base_url="http://127.0.0.1:9/v1", api_key="k", cache=False)
    judging = Judge(model="m", base_url="http://127.0.0.1:9/v1", api_key="k", cache=False,
                    answers=True)  # fmt: skip
    assert "answer_rubric" not in plain.fingerprint()
    assert judging.fingerprint()["answer_rubric"]["name"] == "answer"
    assert plain.fingerprint(answers=True) == judging.fingerprint()
    assert judging.fingerprint(answers=False) == plain.fingerprint()


def test_an_uncertain_answer_is_escalated(server: ChatServer, tmp_path: Path) -> None:
    # The first judge's JSON verdicts carry no confidence, so every one abstains; the second
    # answers again exactly those, the answer included.
    lied = conversation("Your refund has been issued.", refunded=False)
    with serving(fabrication_spotter) as strong:
        second = make_judge(strong, tmp_path, model="strong", cache=False)
        cascade = make_judge(
            server, tmp_path, answers=True, abstain_below=0.9, escalation=second, logprobs=False
        )
        [result] = run(cascade, [lied])
        asked = [r.body for r in strong.chat_requests]
    outcome = result.judge
    assert outcome is not None and outcome.answer is not None
    assert (outcome.answer.verdict, outcome.answer.escalated) == ("incorrect", True)
    assert outcome.answer.category == "fabricated_action"
    assert any("<final_reply>" in json.dumps(b) for b in asked)
    assert outcome.escalated == 2  # the selection and the answer
