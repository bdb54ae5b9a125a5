"""One verdict a user can trust (issue 50): after the judge, `passed` is the checks' where
they decide and the judge's where they leave it open; a judge that contradicts the checks is
a dispute, never a pass; one pass rate, the one `--fail-under` reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge import grade, summarize
from judge.checks._outcome import JudgeOutcome, SelectionVerdict
from judge.checks._verdict import decide
from tests.chat_server import ChatServer, answer
from tests.helpers import call, case
from tests.test_grade_cli import grade as grade_cli
from tests.test_grade_cli import no_call, write

WRONG_TOOL = case(
    [call("get_time", {"city": "Paris"})],
    [{"name": "get_weather", "arguments": {"city": "Paris"}}],
) | {"id": "wrong-tool"}
WRONG_VALUE = case(
    [call("get_weather", {"city": "Lyon"})],
    [{"name": "get_weather", "arguments": {"city": "Paris"}}],
) | {"id": "wrong-value"}
RIGHT = case(
    [call("get_weather", {"city": "Paris"})],
    [{"name": "get_weather", "arguments": {"city": "Paris"}}],
) | {"id": "right"}


def judged(verdict: str) -> JudgeOutcome:
    chosen = SelectionVerdict(reasoning="r", category="right_call", verdict=verdict)  # type: ignore[arg-type]
    return JudgeOutcome(status="ok", selection=chosen)


ERROR, SKIPPED = JudgeOutcome(status="judge_error"), JudgeOutcome(status="skipped")


@pytest.mark.parametrize(
    ("checks", "judge", "expected"),
    [
        pytest.param(False, judged("correct"), (False, "checks", True), id="failure-judge-passes"),
        pytest.param(False, judged("incorrect"), (False, "checks", False), id="failure-agreed"),
        pytest.param(True, judged("incorrect"), (True, "checks", True), id="pass-judge-fails"),
        pytest.param(None, judged("correct"), (True, "judge", False), id="open-judge-passes"),
        pytest.param(None, judged("incorrect"), (False, "judge", False), id="open-judge-fails"),
        pytest.param(None, judged("uncertain"), (None, None, False), id="open-judge-abstains"),
        pytest.param(None, ERROR, (None, None, False), id="open-judge-error"),
        pytest.param(False, SKIPPED, (False, "checks", False), id="broken-judge-skipped"),
    ],
)
def test_the_rule(checks: bool | None, judge: JudgeOutcome, expected: tuple[Any, ...]) -> None:
    assert tuple(decide(checks, judge)) == expected


@pytest.mark.parametrize("label", ["correct", "incorrect"])
def test_the_judge_never_overturns_what_the_checks_proved(
    server: ChatServer, tmp_path: Path, label: str
) -> None:
    """Regression: the judge called a wrong tool correct, its verdict became the gate, and
    `--fail-under 0.8` passed with 4 of 5 where `judge check` failed."""
    server.default = lambda body: answer(body, label)
    cases = write(tmp_path / "c.jsonl", [WRONG_TOOL, WRONG_VALUE, RIGHT, no_call(1), no_call(2)])
    out = tmp_path / "r.jsonl"
    done = grade_cli(server, tmp_path, str(cases), "-o", str(out), "--fail-under", "0.8")
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    wrong, right = rows["wrong-tool"], rows["right"]
    assert (wrong["passed"], wrong["decided_by"]) == (False, "checks")
    assert (right["passed"], right["decided_by"]) == (True, "checks")
    assert (rows["wrong-value"]["passed"], rows["wrong-value"]["decided_by"]) == (False, "checks")
    disputed = {"wrong-tool", "wrong-value"} if label == "correct" else {"right"}
    assert {i for i, r in rows.items() if r.get("judge_dispute")} == disputed
    for i in ("n1", "n2"):  # left open by the checks: the judge decides
        assert (rows[i]["passed"], rows[i]["decided_by"]) == (label == "correct", "judge")
    assert done.exit_code == 1, done.output  # 3 of 5 at best, whatever the judge says
    assert "decided by the checks 3, by the judge 2" in done.stderr
    with out.open() as lines:
        summary = summarize(lines).to_dict()
    assert summary["judge_disputes"] == len(disputed)
    assert summary["decided_by"] == {"checks": 3, "judge": 2, "none": 0}
    assert summary["judge"]["status"]["ok"] == 5  # summarize reads the verdicts too


def test_pretty_output_says_the_dispute(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [WRONG_TOOL, RIGHT])
    server.default = lambda body: answer(body, "correct")
    done = grade_cli(server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"),
                     "--format", "pretty")  # fmt: skip
    assert "✗ wrong-tool" in done.stdout and "WrongTool" in done.stdout
    assert "JudgeDispute  the judge passed this case, the checks failed it" in done.stdout
    assert "right" not in done.stdout.replace("wrong", "")  # agreed passes print nothing


def test_python_grade_frames_carry_the_verdict(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: answer(body, "correct")
    results = grade(
        [WRONG_TOOL, no_call(1)], base_url=server.url, model="m", cache_dir=tmp_path / "cache"
    )
    frame = results.to_pandas().set_index("id")
    assert {"decided_by", "judge_dispute", "judge_status", "judge_passed"} <= set(frame.columns)
    assert frame.loc["wrong-tool", "passed"] == False  # noqa: E712 (a pandas boolean)
    assert frame.loc["wrong-tool", "judge_dispute"] == True  # noqa: E712
    assert frame.loc["n1", "decided_by"] == "judge" and frame.loc["n1", "passed"] == True  # noqa: E712
    summary = summarize(results).to_dict()
    assert summary["pass_rate"] == 0.5 and summary["judge_disputes"] == 1


def test_a_check_result_is_decided_by_the_checks_in_frames() -> None:
    from judge import check

    frame = check([WRONG_TOOL, no_call(1)]).to_pandas().set_index("id")
    assert frame.loc["wrong-tool", "decided_by"] == "checks"
    assert frame["decided_by"].isna().tolist() == [False, True]


@pytest.mark.parametrize("label", ["correct", "incorrect"])
def test_the_starter_fails_its_gate_whatever_the_judge_says(
    server: ChatServer, tmp_path: Path, label: str
) -> None:
    """The issue's report: `judge init`, then `judge grade` on its cases under `--fail-under
    0.8` exited 0 once the judge called the wrong tool correct."""
    from click.testing import CliRunner

    from judge.cli import main

    starter = tmp_path / "my-agent"
    assert CliRunner().invoke(main, ["init", str(starter)]).exit_code == 0
    server.default = lambda body: answer(body, label)
    done = grade_cli(server, tmp_path, str(starter / "cases.jsonl"), "--tools",
                     str(starter / "tools.json"), "-o", str(tmp_path / "graded.jsonl"),
                     "--fail-under", "0.8")  # fmt: skip
    assert done.exit_code == 1, done.output
    assert "is under --fail-under 80.0%" in done.stderr
    # the no-call example passes by the checks (issue 51); only the ask example is the judge's
    assert "decided by the checks 4, by the judge 1" in done.stderr
