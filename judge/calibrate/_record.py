"""Calibration: agreement between the judge (or the deterministic checks) and hand labels,
per dimension, with Cohen's kappa and a seeded bootstrap interval (`_agreement`); and the
record that `judge grade --calibration` checks before it trusts a judge."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from judge._errors import JudgeError
from judge.calibrate._agreement import BOOTSTRAP_ROUNDS as BOOTSTRAP_ROUNDS
from judge.calibrate._agreement import BOOTSTRAP_SEED as BOOTSTRAP_SEED
from judge.calibrate._agreement import LABELS as LABELS
from judge.calibrate._agreement import MIN_PAIRS, Dimension, check_verdict, judge_verdict
from judge.calibrate._agreement import DimensionStats as DimensionStats
from judge.calibrate._agreement import bootstrap_interval as bootstrap_interval
from judge.calibrate._agreement import dimension_stats as dimension_stats
from judge.calibrate._agreement import dimensions_of as dimensions_of
from judge.calibrate._agreement import pairs_of as pairs_of
from judge.calibrate._fit import (
    ConfidenceStats,
    Fitted,
    confidence_stats,
    cross_validate,
    fit,
    items_of,
    method_for,
)
from judge.cases._case import Case
from judge.cases._json import dumps
from judge.checks._result import CaseResult
from judge.judging._cache import cache_key
from judge.judging._rubric import Combine

if TYPE_CHECKING:
    from judge.judging._grade import Judge


class CalibrationRecord(BaseModel):
    """What `judge calibrate` writes and `judge grade --calibration` checks."""

    model_config = ConfigDict(frozen=True)

    version: int = 1
    created: str
    sample: str
    results: str
    disagreements: str
    fingerprint: dict[str, Any]
    """The judge's model, endpoint, settings and rubric hashes."""
    fingerprint_sha256: str
    threshold: float
    strict: bool = False
    passed: bool
    cases: int
    judge_errors: int
    dimensions: dict[str, DimensionStats]
    deterministic: dict[str, DimensionStats] = Field(default_factory=dict)
    """The same statistics for the deterministic checks, where cases have expected calls."""
    coverage: float | None = None
    """`judge calibrate --coverage`: the gate reads the kappa of the most confident share of
    verdicts (`confidence.<name>.at_coverage`), the rest being left to abstention."""
    fitted: dict[str, Fitted] = Field(default_factory=dict)
    """Per dimension, the decision fitted on the labels (for a judge whose verdicts carry a
    confidence): `judge grade --calibration` applies it. `dimensions` then holds the
    cross-validated figures of the fitted decision."""
    confidence: dict[str, ConfidenceStats] = Field(default_factory=dict)
    """Per fitted dimension, cross-validated: reliability, ECE and risk-coverage."""
    probes: list[dict[str, Any]] = Field(default_factory=list)
    """`judge calibrate --probes`: per probe, the cases it applied to, how many flipped, the
    flip rate and their ids (as `judge probe --format json` gives them)."""


class GateRefusal(JudgeError):
    """The calibration record does not let this judge run; the message says why."""


def fingerprint_sha256(fingerprint: dict[str, Any]) -> str:
    return cache_key(fingerprint)


def build_record(
    *,
    cases: list[Case],
    results: list[CaseResult],
    fingerprint: dict[str, Any],
    threshold: float,
    strict: bool,
    sample: str,
    results_path: str,
    disagreements_path: str,
    defaults: dict[str, dict[str, Combine]] | None = None,
    coverage: float | None = None,
) -> CalibrationRecord:
    """The record of a calibration run. `defaults`: per dimension, a scored rubric's own
    weights (what a branch keeps when the labels cannot refit it)."""
    dimensions: dict[str, DimensionStats] = {}
    deterministic: dict[str, DimensionStats] = {}
    fitted: dict[str, Fitted] = {}
    confidence: dict[str, ConfidenceStats] = {}
    for dimension in dimensions_of(cases):
        pairs, excluded = pairs_of(cases, results, dimension)
        found = fit_dimension(
            cases, results, dimension, (defaults or {}).get(dimension, {}), coverage
        )
        if found is not None:
            pairs, fitted[dimension], confidence[dimension] = found
        stats = dimension_stats(pairs, excluded, threshold, strict)
        if coverage is not None:
            stats = _gated_at_coverage(stats, confidence.get(dimension), threshold, coverage)
        dimensions[dimension] = stats
        check, check_excluded = pairs_of(cases, results, dimension, check_verdict)
        if check:
            deterministic[dimension] = dimension_stats(check, check_excluded)
    return CalibrationRecord(
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        sample=sample,
        results=results_path,
        disagreements=disagreements_path,
        fingerprint=fingerprint,
        fingerprint_sha256=fingerprint_sha256(fingerprint),
        threshold=threshold,
        strict=strict,
        passed=all(d.passed for d in dimensions.values()),
        cases=len(cases),
        judge_errors=sum(1 for r in results if r.judge and r.judge.status == "judge_error"),
        dimensions=dimensions,
        deterministic=deterministic,
        fitted=fitted,
        confidence=confidence,
        coverage=coverage,
    )


def _gated_at_coverage(
    stats: DimensionStats, confidence: ConfidenceStats | None, threshold: float, coverage: float
) -> DimensionStats:
    kept = confidence.at_coverage if confidence is not None else None
    if kept is None:
        note = f"no confidence to abstain on: kappa at coverage {coverage:.0%} cannot be measured"
        return stats.model_copy(update={"passed": False, "note": note})
    passed = kept.kappa is not None and kept.kappa >= threshold
    shown = "n/a" if kept.kappa is None else f"{kept.kappa:.2f}"
    note = f"gated at coverage {coverage:.0%}: kappa {shown} on the {kept.n} most confident"
    return stats.model_copy(update={"passed": passed, "note": note})


def fit_dimension(
    cases: list[Case],
    results: list[CaseResult],
    dimension: Dimension,
    defaults: dict[str, Combine],
    coverage: float | None = None,
) -> tuple[list[tuple[str, str]], Fitted, ConfidenceStats] | None:
    """The cross-validated (label, verdict) pairs of the fitted decision, the fit on all the
    labels, and the confidence figures; None when the verdicts carry nothing to fit or the
    labels cannot support a fit (too few, one class only)."""
    items = [i for i in items_of(cases, results, dimension) if i is not None]
    method = method_for(items)
    labels = [i.label for i in items]
    if method is None or len(items) < MIN_PAIRS or min(sum(labels), len(labels) - sum(labels)) < 2:
        return None
    if method == "scored" and not defaults:
        return None
    predictions, folds = cross_validate(items, method, defaults)
    pairs = [(_name(i.label), _name(p.verdict)) for i, p in zip(items, predictions, strict=True)]
    stats = confidence_stats(method, predictions, labels, coverage, folds)
    return pairs, fit(items, method, defaults), stats


def _name(correct: bool) -> str:
    return "correct" if correct else "incorrect"


def disagreements(cases: list[Case], results: list[CaseResult]) -> list[dict[str, Any]]:
    """Every case where the judge's verdict differs from the hand label, for review."""
    rows = []
    for case, result in zip(cases, results, strict=True):
        judged = result.judge
        if judged is None or judged.status != "ok" or case.labels is None:
            continue
        for dimension in dimensions_of([case]):
            label, (verdict, _) = getattr(case.labels, dimension), judge_verdict(result, dimension)
            if label is None or verdict is None or label == verdict:
                continue
            if dimension == "selection" and judged.selection is not None:
                reasoning = judged.selection.reasoning
            elif dimension == "answer" and judged.answer is not None:
                reasoning = judged.answer.reasoning
            else:
                reasoning = " | ".join(
                    f"call {a.call}: {a.verdict}: {a.reasoning}" for a in judged.arguments
                )
            rows.append(
                {
                    "id": case.id,
                    "dimension": dimension,
                    "label": label,
                    "verdict": verdict,
                    "reasoning": reasoning,
                }
            )
    return rows


def load_record(path: str | Path) -> CalibrationRecord:
    try:
        return CalibrationRecord.model_validate_json(Path(path).read_bytes())
    except OSError as exc:
        raise GateRefusal(f"{path}: cannot read the calibration record: {exc}") from None
    except ValueError as exc:
        raise GateRefusal(f"{path}: not a calibration record: {exc}") from None


def check_gate(
    record: CalibrationRecord,
    fingerprint: dict[str, Any],
    *,
    strict: bool,
    source: str,
    answers: bool = True,
) -> None:
    """Refuse a judge that differs from the calibrated one, or that did not earn trust. The
    answer dimension counts only for a judge that judges answers (`answers`)."""
    gated = {k: v for k, v in record.dimensions.items() if answers or k != "answer"}
    if fingerprint_sha256(fingerprint) != record.fingerprint_sha256:
        changed = sorted(
            k
            for k in fingerprint.keys() | record.fingerprint.keys()
            if fingerprint.get(k) != record.fingerprint.get(k)
        )
        raise GateRefusal(
            f"{source} was measured for another judge (differs in: "
            f"{', '.join(changed)}): calibrate this judge, or pass --force"
        )
    if record.coverage is not None:
        for name, stats in gated.items():
            if not stats.passed:
                raise GateRefusal(f"{source}: {name}: {stats.note}; pass --force to run untrusted")
        return
    for name, stats in gated.items():
        if stats.kappa is None:
            raise GateRefusal(
                f"{source}: {name} has no kappa ({stats.degenerate}); label a "
                "larger sample, or pass --force"
            )
        bound = stats.ci_low if strict else stats.kappa
        what = "the 95% interval's lower bound" if strict else "kappa"
        if bound is None or bound < record.threshold:
            shown = "n/a" if bound is None else f"{bound:.2f}"
            extra = f" ({stats.note})" if stats.note else ""
            raise GateRefusal(
                f"{source}: {name} {what} is {shown}, under the threshold "
                f"{record.threshold}{extra}; pass --force to run untrusted"
            )


def fit_from(judge: Judge, record: CalibrationRecord) -> dict[str, Any]:
    """Give the judge the decision its calibration fitted, dimension by dimension, when the
    record is this very judge's (trusted or not); the fingerprint it is gated on. A record
    that measured answers is bound to the answer rubric too, whether or not this run judges
    answers; one that did not, to selection and arguments only."""
    from judge.judging._scored import Fit

    fingerprint = judge.fingerprint(answers="answer_rubric" in record.fingerprint)
    if fingerprint_sha256(fingerprint) == record.fingerprint_sha256:
        for dimension, fitted in record.fitted.items():
            if fitted.method == "scored":
                judge.calibrate(dimension, fit=Fit(dict(fitted.combine), fitted.threshold))
            elif fitted.platt is not None:
                judge.calibrate(dimension, platt=fitted.platt)
    return fingerprint


def admit(judge: Judge, record: CalibrationRecord, *, source: str, strict: bool) -> None:
    """What `judge grade --calibration` does before any request: the record's fitted
    decision given to the judge, then its gate (`GateRefusal`; `strict`, or the record's
    own, reads the interval's lower bound)."""
    fingerprint = fit_from(judge, record)
    check_gate(
        record, fingerprint, strict=strict or record.strict, source=source, answers=judge.answers
    )


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> None:
    with Path(path).open("wb") as handle:
        for row in rows:
            handle.write(dumps(row) + b"\n")
