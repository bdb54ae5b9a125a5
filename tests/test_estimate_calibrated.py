"""`judge estimate --calibration`: the calibration's P(correct) is the judge's prediction
on the dimensions it fitted (Platt on the confidence, or the refitted weights on a scored
verdict's features), the verdict elsewhere; the estimate stays unbiased with it."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Literal

from click.testing import CliRunner

from judge import Case, CaseResult, Labels, estimate
from judge.calibrate._estimate_p import calibrated_p
from judge.calibrate._fit import Fitted
from judge.calibrate._record import CalibrationRecord
from judge.checks._outcome import ArgumentVerdict, JudgeOutcome, SelectionVerdict
from judge.cli import main
from judge.judging._rubric import Combine
from judge.judging._scored import sigmoid


def graded(i: int, says: bool, confidence: float, margin: float) -> CaseResult:
    verdict: Literal["correct", "incorrect"] = "correct" if says else "incorrect"
    return CaseResult(
        id=f"c{i}",
        tool_selection=None,
        schema_valid=True,
        argument_values=None,
        passed=says,
        decided_by="judge",
        judge=JudgeOutcome(
            status="ok",
            selection=SelectionVerdict(
                reasoning="r",
                verdict=verdict,
                category="right_call" if says else "wrong_tool",
                confidence=confidence,
                features={"word_margin": margin},
            ),
            arguments=(
                ArgumentVerdict(
                    call=0,
                    reasoning="r",
                    verdict=verdict,
                    confidence=confidence,
                    features={"ungrounded": 0.0},
                ),
            ),
        ),
    )


def test_platt_maps_the_confidence_to_p_correct() -> None:
    fitted = Fitted(method="platt", platt=(1.0, 0.0))  # P(verdict right) = its confidence
    assert calibrated_p(graded(0, True, 0.8, 0.0), "selection", fitted) == 0.8
    assert abs(calibrated_p(graded(1, False, 0.8, 0.0), "selection", fitted) - 0.2) < 1e-12  # type: ignore[operator]
    assert calibrated_p(graded(2, True, 0.9, 0.0), "answer", fitted) is None


def test_scored_fit_reads_the_features_of_the_branch() -> None:
    combine = Combine(bias=0.5, weights={"word_margin": 2.0})
    fitted = Fitted(method="scored", combine={"called": combine})
    p = calibrated_p(graded(0, True, 0.9, 1.0), "selection", fitted)
    assert p is not None and abs(p - sigmoid(2.5)) < 1e-12
    # no weights for the branch (a wrong tool is still `called`; a no-call verdict is not)
    no_call = graded(1, False, 0.9, 1.0)
    assert no_call.judge is not None and no_call.judge.selection is not None
    selection = no_call.judge.selection.model_copy(update={"category": "missing_call"})
    judged = no_call.judge.model_copy(update={"selection": selection})
    assert calibrated_p(no_call.model_copy(update={"judge": judged}), "selection", fitted) is None


def population(seed: int, size: int = 600) -> tuple[list[CaseResult], dict[str, bool]]:
    """A judge whose confidence is its real chance of being right: truth drawn from it."""
    rng = random.Random(seed)
    results, truth = [], {}
    for i in range(size):
        confidence = rng.uniform(0.55, 0.99)
        says = rng.random() < 0.6
        right = rng.random() < confidence
        results.append(graded(i, says, confidence, 0.0))
        truth[f"c{i}"] = says if right else not says
    return results, truth


def labels_for(ids: list[str], truth: dict[str, bool]) -> list[Case]:
    return [
        Case.model_validate(
            {
                "id": i,
                "messages": [{"role": "user", "content": "q"}],
                "tools": [],
                "labels": Labels(selection="correct" if truth[i] else "incorrect"),
                "meta": {"inclusion_probability": 0.1},
            }
        )
        for i in ids
    ]


def test_calibrated_predictions_are_unbiased_and_narrower() -> None:
    record = _record(Fitted(method="platt", platt=(1.0, 0.0)))
    errors, widths, plain_widths, held = [], [], [], 0
    for seed in range(150):
        results, truth = population(seed)
        rate = sum(truth.values()) / len(truth)
        ids = random.Random(1000 + seed).sample(sorted(truth), 60)
        labels = labels_for(ids, truth)
        found = estimate(results, labels, calibration=record).dimensions["selection"]
        plain = estimate(results, labels).dimensions["selection"]
        assert found.calibrated == len(results) and plain.calibrated == 0
        assert found.ppi.value is not None and found.ppi.low is not None
        assert found.ppi.high is not None and plain.ppi.low is not None
        assert plain.ppi.high is not None
        errors.append(found.ppi.value - rate)
        held += found.ppi.low <= rate <= found.ppi.high
        widths.append(found.ppi.high - found.ppi.low)
        plain_widths.append(plain.ppi.high - plain.ppi.low)
    assert abs(sum(errors) / len(errors)) < 0.01
    assert 0.90 <= held / 150 <= 0.99
    assert sum(widths) < sum(plain_widths)


def _record(fitted: Fitted) -> CalibrationRecord:
    return CalibrationRecord(
        created="2026-12-06T00:00:00+00:00",
        sample="s",
        results="r",
        disagreements="d",
        fingerprint={},
        fingerprint_sha256="0",
        threshold=0.6,
        passed=False,
        cases=1,
        judge_errors=0,
        dimensions={},
        fitted={"selection": fitted},
    )


def test_cli_reads_the_record(tmp_path: Path) -> None:
    results, truth = population(3, 200)
    grades = tmp_path / "graded.jsonl"
    grades.write_text("".join(r.model_dump_json() + "\n" for r in results))
    labels = tmp_path / "labels.jsonl"
    ids = sorted(truth)[:40]
    labels.write_text("".join(c.model_dump_json() + "\n" for c in labels_for(ids, truth)))
    record = tmp_path / "calibration.json"
    record.write_text(_record(Fitted(method="platt", platt=(1.0, 0.0))).model_dump_json())
    args = ["estimate", str(grades), "--labels", str(labels), "--format", "json"]
    done = CliRunner().invoke(main, [*args, "--calibration", str(record)])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["dimensions"]["selection"]["calibrated"] == 200
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    done = CliRunner().invoke(main, [*args, "--calibration", str(broken)])
    assert done.exit_code == 2 and "not a calibration record" in done.output
