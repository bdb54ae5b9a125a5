"""Abstention: verdicts the judge is not sure of become `uncertain`, counted apart, outside the
pass rate; `--coverage` takes its cut from a calibration; the gate can require a kappa at a
coverage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.checks._outcome import ArgumentVerdict, JudgeOutcome, SelectionVerdict
from judge.checks._result import CaseResult
from judge.checks._summary import summarize
from judge.checks._verdict import with_judge
from judge.judging._decide import abstained
from tests.chat_server import Reply, answer, one_token, serving, with_logprobs
from tests.helpers import invoke
from tests.test_fit import QUICK, marked
from tests.test_judge import PARIS, TWO_CALLS, make_judge, run


def selection(label: str, confidence: float | None, **extra: Any) -> SelectionVerdict:
    category = "right_call" if label == "correct" else "wrong_tool"
    return SelectionVerdict.model_validate(
        {"reasoning": "r", "verdict": label, "category": category, "confidence": confidence} | extra
    )


def argument(label: str, confidence: float | None = 0.9) -> ArgumentVerdict:
    return ArgumentVerdict.model_validate(
        {"call": 0, "reasoning": "r", "verdict": label, "confidence": confidence}
    )


def test_a_verdict_under_the_cut_or_without_confidence_is_uncertain() -> None:
    unsure = abstained(selection("correct", 0.6), 0.7)
    assert (unsure.verdict, unsure.leaning) == ("uncertain", "correct")
    assert abstained(selection("incorrect", 0.7), 0.7).verdict == "incorrect"
    assert abstained(selection("correct", None), 0.1).verdict == "uncertain"
    derived = selection("incorrect", 1.0, source="derived")
    assert abstained(derived, 1.1).verdict == "incorrect"


@pytest.mark.parametrize(
    ("chosen", "calls", "passed", "arguments"),
    [
        ("correct", ["correct", "uncertain"], None, "uncertain"),
        ("uncertain", ["correct"], None, "correct"),
        ("uncertain", ["incorrect"], False, "incorrect"),  # a sure failure still fails it
        ("incorrect", ["uncertain"], False, "uncertain"),
        ("correct", ["correct", "not_applicable"], True, "correct"),
    ],
)
def test_what_an_uncertain_verdict_leaves_undecided(
    chosen: str, calls: list[str], passed: bool | None, arguments: str
) -> None:
    outcome = JudgeOutcome(
        status="ok",
        selection=selection(chosen, 0.5),
        arguments=tuple(argument(c).model_copy(update={"call": i}) for i, c in enumerate(calls)),
    )
    assert outcome.passed is passed and outcome.arguments_verdict == arguments
    assert outcome.uncertain is (passed is None)


def test_the_summary_counts_uncertain_cases_apart_from_the_pass_rate() -> None:
    open_case = CaseResult(
        id="c", tool_selection=None, schema_valid=True, argument_values=None, passed=None
    )
    results = [
        with_judge(
            open_case.model_copy(update={"id": f"c{n}"}),
            JudgeOutcome(status="ok", selection=selection(chosen, 0.5)),
        )
        for n, chosen in enumerate(("correct", "incorrect", "uncertain", "uncertain"))
    ]
    facts = summarize(results).to_dict()
    verdicts = facts["judge"]
    assert (verdicts["passed"], verdicts["failed"], verdicts["uncertain"]) == (1, 1, 2)
    assert verdicts["selection"]["uncertain"] == 2 and "pass_rate" not in verdicts
    assert facts["pass_rate"] == 0.5 and facts["not_gradable"] == 2  # one pass rate
    assert facts["decided_by"] == {"checks": 0, "judge": 2, "none": 2}


def test_the_judge_abstains_below_the_cut(tmp_path: Path) -> None:
    sure = {"correct": 0.95, "inc": 0.05}
    unsure = {"correct": 0.6, "inc": 0.4}
    confidences = iter([sure, unsure, unsure])  # PARIS: selection, arguments; then selection

    def reply(body: dict[str, Any]) -> Reply:
        return with_logprobs(answer(body), {"verdict": next(confidences, sure)})

    with serving(reply) as server:
        judge = make_judge(server, tmp_path, abstain_below=0.8, concurrency=1)
        paris, two = run(judge, [PARIS, TWO_CALLS])
    assert paris.judge is not None and paris.judge.selection is not None
    assert paris.judge.selection.verdict == "correct"
    [call] = paris.judge.arguments
    assert (call.verdict, call.leaning, call.confidence) == ("uncertain", "correct", 0.6)
    assert paris.judge.passed is None and paris.judge.uncertain
    assert two.judge is not None and two.judge.selection is not None
    assert two.judge.selection.verdict == "uncertain"


def sample(tmp_path: Path) -> Path:
    path = tmp_path / "sample.jsonl"
    path.write_text("".join(json.dumps(marked(i, i % 2 == 0)) + "\n" for i in range(30)))
    return path


FAR = {f"q{i}" for i in range(30) if i % 4 in (0, 1)}  # 8 GOOD and 8 BAD cases
NEAR = {f"q{i}" for i in range(30)} - FAR


def by_marker(body: dict[str, Any]) -> Reply:
    """The far cases told apart plainly (yes at 0.8 when GOOD, 0.2 when BAD); the near ones
    all answered alike (0.55), whatever their label: a coin flip, only sure on the far half."""
    text = body["messages"][-1]["content"]
    far = any(f" {i})" in text for i in range(30) if i % 4 in (0, 1))
    if not far:
        return one_token(0.55)
    return one_token(0.8 if "GOOD" in text else 0.2)


def test_coverage_abstains_on_the_least_confident_share(tmp_path: Path) -> None:
    record = tmp_path / "calibration.json"
    with serving(by_marker) as server:
        done = invoke(
            server, tmp_path, "calibrate", str(sample(tmp_path)), "-o", str(record),
            "--rubrics", str(QUICK),
        )  # fmt: skip
        assert done.exit_code == 1, done.output  # the coin flips keep kappa under 0.6
        out = tmp_path / "graded.jsonl"
        done = invoke(
            server, tmp_path, "grade", str(sample(tmp_path)), "-o", str(out), "--rubrics",
            str(QUICK), "--calibration", str(record), "--coverage", "0.5", "--force",
            "--format", "json",
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        without = invoke(
            server, tmp_path, "grade", str(sample(tmp_path)), "--rubrics", str(QUICK),
            "--coverage", "0.5",
        )  # fmt: skip
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    unsure = {r["id"] for r in rows if r["judge"]["selection"]["verdict"] == "uncertain"}
    assert unsure == NEAR  # the coin flips, and none of the cases it is sure of
    summary = json.loads(done.output[done.output.index("{") :])
    assert summary["judge"]["uncertain"] == len(NEAR)
    assert without.exit_code == 2 and "--calibration" in without.output


def test_the_gate_can_require_a_kappa_at_a_coverage(tmp_path: Path) -> None:
    record = tmp_path / "calibration.json"
    with serving(by_marker) as server:
        whole = invoke(
            server, tmp_path, "calibrate", str(sample(tmp_path)), "-o", str(record),
            "--rubrics", str(QUICK), "--min-kappa", "0.9",
        )  # fmt: skip
        assert whole.exit_code == 1  # the coin flips keep the whole sample under 0.9
        done = invoke(
            server, tmp_path, "calibrate", str(sample(tmp_path)), "-o", str(record),
            "--rubrics", str(QUICK), "--coverage", "0.5", "--min-kappa", "0.9",
        )  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(record.read_text())
    assert data["dimensions"]["selection"]["kappa"] < 0.9
    assert data["coverage"] == 0.5
    kept = data["confidence"]["selection"]["at_coverage"]
    assert kept["coverage"] == 0.5 and kept["n"] == 15 and kept["kappa"] >= 0.9
    assert "gated at coverage 50%" in data["dimensions"]["selection"]["note"]


def test_a_judge_without_confidence_cannot_pass_a_coverage_gate(tmp_path: Path) -> None:
    record = tmp_path / "calibration.json"
    with serving(lambda body: answer(body)) as server:
        done = invoke(
            server, tmp_path, "calibrate", str(sample(tmp_path)), "-o", str(record),
            "--coverage", "0.5", "--min-kappa", "0.0",
        )  # fmt: skip
    assert done.exit_code == 1
    data = json.loads(record.read_text())
    assert "no confidence to abstain on" in data["dimensions"]["selection"]["note"]


def test_sample_draws_the_uncertain_cases_first(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from judge.cli import main

    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(marked(i, True)) + "\n" for i in range(6)))
    results = tmp_path / "graded.jsonl"
    rows = []
    for i in range(6):
        verdict = "uncertain" if i in (1, 4) else "correct"
        rows.append({"id": f"q{i}", "judge": {"status": "ok", "selection": {"verdict": verdict}}})
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "review.jsonl"
    runner = CliRunner()
    done = runner.invoke(
        main, ["sample", str(cases), "--results", str(results), "--uncertain", "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["q1", "q4"]
    done = runner.invoke(
        main,
        ["sample", str(cases), "--results", str(results), "--stratify", "judge", "--n", "2",
         "-o", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    drawn = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert len(drawn) == 2 and len({d in ("q1", "q4") for d in drawn}) == 2  # one per stratum
    done = runner.invoke(main, ["sample", str(cases), "--uncertain", "-o", str(out)])
    assert done.exit_code == 2 and "--results" in done.output


# -- escalation: a second judge answers the verdicts the first abstained on ---------------------


def test_escalation_reasks_exactly_the_uncertain_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from judge.cli import main

    monkeypatch.setenv("JUDGE_ESCALATE_API_KEY", "sk-escalate-77")
    sure = {"correct": 0.95, "inc": 0.05}
    unsure = {"correct": 0.6, "inc": 0.4}

    def first(body: dict[str, Any]) -> Reply:
        text = json.dumps(body["messages"])
        # DOUBT: its selection is unsure, its arguments sure; TWO: both sure.
        doubt = "DOUBT" in text and "verdicts" not in str(body.get("response_format"))
        return with_logprobs(answer(body), {"verdict": unsure if doubt else sure})

    cases = tmp_path / "cases.jsonl"
    doubtful = PARIS | {"id": "paris", "messages": [{"role": "user", "content": "Paris? DOUBT"}]}
    cases.write_text(json.dumps(doubtful) + "\n" + json.dumps(TWO_CALLS) + "\n")
    out = tmp_path / "graded.jsonl"
    with serving(first) as one, serving(lambda body: answer(body, "incorrect")) as two:
        done = CliRunner().invoke(
            main,
            ["grade", str(cases), "-o", str(out), "--base-url", one.url, "--model", "m",
             "--cache-dir", str(tmp_path / "cache"), "--abstain-below", "0.8",
             "--escalate-base-url", two.url, "--escalate-model", "strong", "--format", "json"],
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        asked = two.chat_requests
    assert len(asked) == 1  # PARIS's selection question, nothing else
    assert asked[0].authorization == "Bearer sk-escalate-77"
    assert "verdicts" not in json.dumps(asked[0].body.get("response_format"))
    rows = {
        json.loads(line)["id"]: json.loads(line)["judge"] for line in out.read_text().splitlines()
    }
    paris = rows["paris"]
    assert paris["selection"]["verdict"] == "incorrect" and paris["selection"]["escalated"] is True
    assert paris["arguments"][0]["escalated"] is False
    assert paris["escalated"] == 1 and paris["escalation_usage"]["requests"] == 1
    assert paris["escalation"]["model"] == "strong"
    assert rows["two"]["escalated"] == 0
    summary = json.loads(done.output[done.output.index("{") :])
    assert summary["judge"]["escalated"] == 1 and summary["judge"]["escalation"]["requests"] == 1


def test_escalation_without_abstention_is_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from judge.cli import main

    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(PARIS) + "\n")
    done = CliRunner().invoke(
        main,
        ["grade", str(cases), "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
         "--escalate-model", "strong", "--escalate-base-url", "http://127.0.0.1:9/v1"],
    )  # fmt: skip
    assert done.exit_code == 2 and "--abstain-below" in done.output


def test_a_cascade_is_calibrated_as_one_judge(tmp_path: Path) -> None:
    from judge.calibrate._record import fingerprint_sha256

    with serving(lambda body: answer(body)) as server:
        alone = make_judge(server, tmp_path)
        second = make_judge(server, tmp_path, model="strong")
        cascade = make_judge(server, tmp_path, abstain_below=0.8, escalation=second)
        assert cascade.fingerprint()["escalation"]["model"] == "strong"
        assert fingerprint_sha256(cascade.fingerprint()) != fingerprint_sha256(alone.fingerprint())


def test_a_record_gated_at_a_coverage_abstains_at_it_by_default(tmp_path: Path) -> None:
    record = tmp_path / "calibration.json"
    out = tmp_path / "graded.jsonl"
    with serving(by_marker) as server:
        calibrated = invoke(
            server, tmp_path, "calibrate", str(sample(tmp_path)), "-o", str(record),
            "--rubrics", str(QUICK), "--coverage", "0.5", "--min-kappa", "0.9",
        )  # fmt: skip
        assert calibrated.exit_code in (0, 1) and record.is_file(), calibrated.output
        done = invoke(
            server, tmp_path, "grade", str(sample(tmp_path)), "-o", str(out), "--rubrics",
            str(QUICK), "--calibration", str(record),
        )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "gated at coverage 50%" in done.output
    verdicts = [
        json.loads(x)["judge"]["selection"]["verdict"] for x in out.read_text().splitlines()
    ]
    # about half abstained, as gated: neither none nor all of them
    assert 0 < verdicts.count("uncertain") < len(verdicts)
    cut = json.loads(record.read_text())["confidence"]["selection"]["at_coverage"]
    assert abs(len(verdicts) - verdicts.count("uncertain") - cut["n"]) <= 1


def test_the_escalation_judge_never_gets_the_first_judges_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from judge.cli import main

    monkeypatch.setenv("JUDGE_API_KEY", "sk-first-judge")
    monkeypatch.delenv("JUDGE_ESCALATE_API_KEY", raising=False)
    unsure = {"correct": 0.6, "inc": 0.4}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(PARIS) + "\n")
    with (
        serving(lambda body: with_logprobs(answer(body), {"verdict": unsure})) as one,
        serving(lambda body: answer(body)) as two,
    ):
        done = CliRunner().invoke(
            main,
            ["grade", str(cases), "--base-url", one.url, "--model", "m", "--cache-dir",
             str(tmp_path / "cache"), "--abstain-below", "0.8", "--escalate-base-url", two.url,
             "--escalate-model", "strong"],
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        assert one.chat_requests[0].authorization == "Bearer sk-first-judge"
        assert two.chat_requests and {r.authorization for r in two.chat_requests} == {
            "Bearer not-needed"
        }
