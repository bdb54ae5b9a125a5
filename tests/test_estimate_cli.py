"""`judge.estimate` and `judge estimate`: the three rates per dimension from graded results
and hand labels, and the refusals (unknown cases, duplicate and conflicting labels, a
labelled set of unknown design)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from click.testing import CliRunner

from judge import Case, CaseResult, Estimate, InputError, Labels, estimate
from judge.checks._outcome import ArgumentVerdict, JudgeOutcome, SelectionVerdict
from judge.cli import main

GRADED = 40
"""Cases 0-39: the judge says `correct` on every even one; the truth is `correct` on every
case but each fifth (0, 5, ...)."""


def result(i: int) -> CaseResult:
    verdict: Literal["correct", "incorrect"] = "correct" if i % 2 == 0 else "incorrect"
    return CaseResult(
        id=f"c{i}",
        tool_selection=None,
        schema_valid=True,
        argument_values=None,
        passed=verdict == "correct",
        decided_by="judge",
        judge=JudgeOutcome(
            status="ok",
            selection=SelectionVerdict(reasoning="r", verdict=verdict, category="right_call"),
            arguments=(ArgumentVerdict(call=0, reasoning="r", verdict=verdict),),
        ),
    )


def label(i: int, **meta: Any) -> Case:
    truth: Literal["correct", "incorrect"] = "incorrect" if i % 5 == 0 else "correct"
    return Case(id=f"c{i}", labels=Labels(selection=truth, arguments=truth), meta=meta)


RESULTS = [result(i) for i in range(GRADED)]
LABELLED = [label(i) for i in range(20)]


def test_every_dimension_and_passed_side_by_side() -> None:
    found = estimate(RESULTS, LABELLED, assume_random=True)
    assert isinstance(found, Estimate)
    assert list(found.dimensions) == ["selection", "arguments", "passed"]
    assert found.design == "assumed_random"
    selection = found.dimensions["selection"]
    assert selection.judge_only.value == 0.5
    assert selection.labels_only.value == pytest.approx(16 / 20)
    assert (selection.n_labelled, selection.n_graded) == (20, GRADED)
    assert selection.ppi.value is not None and selection.ppi.low is not None
    assert selection.ppi.low <= selection.ppi.value <= (selection.ppi.high or 0)
    assert found.warnings == []
    dumped = json.loads(found.model_dump_json())
    for name in ("selection", "arguments", "passed"):
        dimension = dumped["dimensions"][name]
        assert set(dimension["judge_only"]) == {"value"}
        assert set(dimension["labels_only"]) == set(dimension["ppi"]) == {"value", "low", "high"}
        assert {"n_labelled", "n_graded", "effective_labels"} <= set(dimension)


def test_known_inclusion_probabilities_are_a_known_design() -> None:
    labelled = [label(i, inclusion_probability=0.5) for i in range(20)]
    weighted = estimate(RESULTS, labelled)
    plain = estimate(RESULTS, LABELLED, assume_random=True)
    assert weighted.design == "known"
    assert weighted.dimensions["selection"].ppi.value == pytest.approx(
        plain.dimensions["selection"].ppi.value
    )


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        pytest.param([label(99)], "graded results lack: 'c99'", id="unknown-case"),
        pytest.param([label(1), label(1)], "given twice for one case: 'c1'", id="duplicate"),
        pytest.param(
            [label(1), Case(id="c1", labels=Labels(selection="incorrect"))],
            "conflicting labels for one case: 'c1'",
            id="conflicting",
        ),
        pytest.param(
            [label(1, inclusion_probability=0.5), label(2)],
            "record no `meta.inclusion_probability`: 'c2'",
            id="part-of-a-design",
        ),
        pytest.param([label(1, inclusion_probability=2)], "(0, 1]: 'c1'", id="not-a-probability"),
    ],
)
def test_refusals_name_the_cases(labels: list[Case], message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace("]", r"\]")):
        estimate(RESULTS, labels, assume_random=True)


def test_a_labelled_set_of_unknown_design_is_refused_unless_assumed_random() -> None:
    with pytest.raises(InputError, match="hand-picked set biases every estimate"):
        estimate(RESULTS, LABELLED)


def test_few_labels_warn_naming_them() -> None:
    found = estimate(RESULTS, [label(i) for i in range(3)], assume_random=True)
    assert "selection: 3 labels (fewer than 10)" in found.warnings[0]
    assert "'c0', 'c1', 'c2'" in found.warnings[0]
    assert found.dimensions["selection"].ppi.value is not None


def test_without_labels_only_the_judge_speaks() -> None:
    found = estimate(RESULTS)
    selection = found.dimensions["selection"]
    assert (found.design, selection.judge_only.value, selection.ppi.value) == ("none", 0.5, None)
    assert selection.note == "0 labelled cases with a prediction: no interval"


def write(path: Path, rows: list[CaseResult] | list[Case]) -> str:
    """Results as `judge grade` writes them; cases with only what they set."""
    path.write_text(
        "".join(
            (
                json.dumps(r.to_json_dict())
                if isinstance(r, CaseResult)
                else r.model_dump_json(exclude_none=True)
            )
            + "\n"
            for r in rows
        )
    )
    return str(path)


def test_the_command_prints_a_table_and_writes_the_json(tmp_path: Path) -> None:
    graded = write(tmp_path / "graded.jsonl", RESULTS)
    labels = write(tmp_path / "labels.jsonl", LABELLED)
    out = tmp_path / "estimate.json"
    args = ["estimate", graded, "--labels", labels, "--assume-random", "-o", str(out)]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    assert "selection" in shown.output and "passed" in shown.output
    assert "effective labels" in shown.output
    written = json.loads(out.read_text())
    assert written["dimensions"]["selection"]["n_labelled"] == 20
    as_json = CliRunner().invoke(main, [*args[:-2], "--format", "json", "--confidence", "0.9"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["confidence"] == 0.9


def test_the_command_refuses_in_one_line(tmp_path: Path) -> None:
    graded = write(tmp_path / "graded.jsonl", RESULTS)
    labels = write(tmp_path / "labels.jsonl", LABELLED)
    refused = CliRunner().invoke(main, ["estimate", graded, "--labels", labels])
    assert refused.exit_code == 2
    assert refused.output.startswith("judge estimate: the labelled cases record no")
    assert refused.output.count("\n") == 1


def test_the_html_page_shows_each_dimension(tmp_path: Path) -> None:
    graded = write(tmp_path / "graded.jsonl", RESULTS)
    labels = write(tmp_path / "labels.jsonl", LABELLED)
    page = tmp_path / "estimate.html"
    args = ["estimate", graded, "--labels", labels, "--assume-random", "--html", str(page)]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    text = page.read_text()
    found = estimate(RESULTS, LABELLED, assume_random=True).dimensions["selection"]
    assert found.ppi.low is not None and found.ppi.high is not None
    assert f"[{found.ppi.low:.1%}, {found.ppi.high:.1%}]" in text
    assert text.count("<svg") == 3 and "<h2>passed</h2>" in text  # selection, arguments, passed
    assert "<script" not in text
    refused = CliRunner().invoke(main, [*args[:-1], graded])  # over its own input
    assert refused.exit_code == 2 and page.exists()
