"""`judge estimate`: per dimension (and for `passed`), the judge-only rate, the labels-only
rate and the PPI++ rate (`_ppi`), from graded results and hand labels on some of them.

A case's prediction is the judge's verdict (the checks' where the result has no judge
outcome; for `passed`, the result's `passed`); the cases without one (an abstention, a
`judge_error`) are outside the estimate. A case's `passed` label: its selection label is
given and every label it has is `correct`. The labelled subset's design is read from each
labelled case's `meta.inclusion_probability` (`judge sample --for-estimate` records it); a
set without it is refused unless `assume_random`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from judge._errors import InputError
from judge.calibrate._agreement import check_verdict, judge_verdict
from judge.calibrate._estimate_p import calibrated_p
from judge.calibrate._fit import Fitted
from judge.calibrate._ppi import effective_labels, judge_only, labels_only, ppi_mean
from judge.cases._case import Case
from judge.checks._result import CaseResult

if TYPE_CHECKING:
    from judge.calibrate._record import CalibrationRecord

EstimateDimension = Literal["selection", "arguments", "answer", "trajectory", "passed"]
ORDER: tuple[EstimateDimension, ...] = ("selection", "arguments", "answer", "trajectory", "passed")
INCLUSION_KEY = "inclusion_probability"
"""The `meta` key of a labelled case that says how likely it was to be drawn."""
STRATUM_KEY = "stratum"
"""The `meta` key of a labelled case that names the stratum it was drawn from (a stratified
`judge sample --for-estimate`): the estimate's variance is then the stratified one."""
MIN_LABELS = 10
"""Fewer labels on a dimension than this: a warning (the interval is not to be trusted)."""
Design = Literal["none", "known", "assumed_random"]


class Value(BaseModel):
    model_config = ConfigDict(frozen=True)

    value: float | None


class Interval(BaseModel):
    """A rate and its interval at the estimate's confidence (clipped to [0, 1])."""

    model_config = ConfigDict(frozen=True)

    value: float | None
    low: float | None
    high: float | None


class DimensionEstimate(BaseModel):
    model_config = ConfigDict(frozen=True)

    judge_only: Value
    labels_only: Interval
    ppi: Interval
    n_labelled: int
    n_graded: int
    """Cases with a prediction: the population the rates are of."""
    effective_labels: float | None
    """The labels alone that would give the PPI interval's width."""
    lam: float | None = None
    """PPI++'s power-tuning weight on the judge (0: the labels alone)."""
    calibrated: int = 0
    """Cases whose prediction is a calibration's P(correct) rather than the verdict."""
    note: str | None = None
    """Why a field is null, or what to mind reading it."""


class Estimate(BaseModel):
    model_config = ConfigDict(frozen=True)

    confidence: float
    design: Design
    """How the labelled cases were drawn: `known` (their inclusion probabilities), assumed
    random (`assume_random`), or `none` (no labels)."""
    dimensions: dict[str, DimensionEstimate]
    warnings: list[str]
    strata: int | None = None
    """The strata of a stratified draw (`meta.stratum`), whose variance is the stratified one."""


def labels_by_id(labels: Iterable[Case], graded: set[str]) -> dict[str, Case]:
    """The labelled cases by id; refused: the same id twice (naming `conflicting` where the
    labels differ), and labels on cases the graded results lack."""
    found: dict[str, Case] = {}
    duplicate: set[str] = set()
    conflicting: set[str] = set()
    for case in labels:
        if case.labels is None:
            continue
        before = found.get(case.id)
        if before is not None:
            same = before.labels == case.labels or _hand(before) == _hand(case)
            (duplicate if same else conflicting).add(case.id)
        found[case.id] = case
    if conflicting:
        raise InputError(f"conflicting labels for one case: {_ids(conflicting)}")
    if duplicate:
        raise InputError(f"labels given twice for one case: {_ids(duplicate)}")
    missing = set(found) - graded
    if missing:
        raise InputError(f"labels on cases the graded results lack: {_ids(missing)}")
    return found


def _hand(case: Case) -> tuple[str | None, ...]:
    labels = case.labels
    return tuple(getattr(labels, name, None) for name in ORDER[:4])


def _ids(ids: Iterable[str], most: int = 10) -> str:
    ordered = sorted(ids)
    more = f" (and {len(ordered) - most} more)" if len(ordered) > most else ""
    return ", ".join(repr(i) for i in ordered[:most]) + more


def design_of(labelled: dict[str, Case], assume_random: bool) -> tuple[Design, dict[str, float]]:
    """The labelled set's design and each case's inclusion probability (empty: random)."""
    if not labelled:
        return "none", {}
    given = {i: c.meta.get(INCLUSION_KEY) for i, c in labelled.items()}
    known = {i: p for i, p in given.items() if p is not None}
    if not known:
        if assume_random:
            return "assumed_random", {}
        raise InputError(
            f"the labelled cases record no `meta.{INCLUSION_KEY}`: how they were chosen is "
            "unknown, and a hand-picked set biases every estimate; label a random sample, or "
            "say it is one with --assume-random"
        )
    if len(known) < len(given):
        raise InputError(
            f"some labelled cases record no `meta.{INCLUSION_KEY}`: {_ids(set(given) - set(known))}"
        )
    bad = {i for i, p in known.items() if not isinstance(p, int | float) or not 0 < p <= 1}
    if bad:
        raise InputError(f"`meta.{INCLUSION_KEY}` must be a number in (0, 1]: {_ids(bad)}")
    return "known", {i: float(p) for i, p in known.items()}


def strata_of(labelled: dict[str, Case], pi: dict[str, float]) -> dict[str, str] | None:
    """Each labelled case's stratum, where every one records it (with its inclusion
    probability); None where none does. InputError: some record it and some do not."""
    given = {i: c.meta.get(STRATUM_KEY) for i, c in labelled.items()}
    known = {i: str(v) for i, v in given.items() if v is not None}
    if not known:
        return None
    if len(known) < len(given):
        raise InputError(
            f"some labelled cases record no `meta.{STRATUM_KEY}`: {_ids(set(given) - set(known))}"
        )
    if not pi:
        raise InputError(
            f"labelled cases record `meta.{STRATUM_KEY}` but no "
            f"`meta.{INCLUSION_KEY}`: a stratified draw needs both"
        )
    return known


def predictions(
    graded: list[CaseResult], dimension: EstimateDimension, fitted: Fitted | None
) -> tuple[dict[str, float], int]:
    """Each graded case's prediction by id (none where it has none), and how many of them
    are a calibration's P(correct) (`fitted`) rather than the verdict."""
    found: dict[str, float] = {}
    calibrated = 0
    for result in graded:
        p = None if fitted is None else calibrated_p(result, dimension, fitted)
        calibrated += p is not None
        p = prediction(result, dimension) if p is None else p
        if p is not None:
            found[result.id] = p
    return found, calibrated


def prediction(result: CaseResult, dimension: EstimateDimension) -> int | None:
    """The graded verdict on a dimension as 1 (correct) or 0, None where there is none."""
    if dimension == "passed":
        return None if result.passed is None else int(result.passed)
    verdict: str | None
    if dimension == "trajectory":
        judged = result.judge
        ok = judged is not None and judged.status == "ok" and judged.trajectory is not None
        verdict = judged.trajectory.verdict if ok and judged and judged.trajectory else None
    else:
        verdict, _ = judge_verdict(result, dimension)
        if verdict is None and result.judge is None:
            verdict, _ = check_verdict(result, dimension)
    return None if verdict in (None, "uncertain") else int(verdict == "correct")


def hand_label(case: Case, dimension: EstimateDimension) -> int | None:
    labels = case.labels
    if labels is None:
        return None
    if dimension != "passed":
        value = getattr(labels, dimension)
        return None if value is None else int(value == "correct")
    given = [v for v in _hand(case) if v is not None]
    return None if labels.selection is None else int(all(v == "correct" for v in given))


def estimate(
    results: Iterable[CaseResult],
    labels: Iterable[Case] = (),
    confidence: float = 0.95,
    assume_random: bool = False,
    calibration: CalibrationRecord | None = None,
) -> Estimate:
    """The three estimates per dimension present (and `passed`); with a `calibration` record
    (of the judge that graded `results`), its calibrated P(correct) is the prediction on the
    dimensions it fitted. InputError: labels on cases the results lack, duplicate or
    conflicting labels, a labelled set of unknown design (without `assume_random`).
    ValueError: a confidence outside (0, 1)."""
    fits = {} if calibration is None else calibration.fitted
    graded = list(results)
    labelled = labels_by_id(labels, {r.id for r in graded})
    design, pi = design_of(labelled, assume_random)
    strata = strata_of(labelled, pi)
    dimensions: dict[str, DimensionEstimate] = {}
    warnings: list[str] = []
    for dimension in ORDER:
        predicted, calibrated = predictions(graded, dimension, fits.get(dimension))
        hands = [c for c in labelled.values() if hand_label(c, dimension) is not None]
        if dimension not in ("selection", "passed") and not predicted and not hands:
            continue
        found = _dimension(dimension, predicted, labelled, (pi, strata), confidence)
        found = found.model_copy(update={"calibrated": calibrated})
        dimensions[dimension] = found
        if labelled and found.n_labelled < MIN_LABELS:
            ids = [i for i in sorted(labelled) if i in predicted]
            ids = [i for i in ids if hand_label(labelled[i], dimension) is not None]
            warnings.append(
                f"{dimension}: {found.n_labelled} labels (fewer than {MIN_LABELS}): "
                f"its intervals are not to be trusted{': ' + _ids(ids) if ids else ''}"
            )
    return Estimate(
        confidence=confidence,
        design=design,
        dimensions=dimensions,
        warnings=warnings,
        strata=None if strata is None else len(set(strata.values())),
    )


def _dimension(
    dimension: EstimateDimension,
    predicted: dict[str, float],
    labelled: dict[str, Case],
    design: tuple[dict[str, float], dict[str, str] | None],
    confidence: float,
) -> DimensionEstimate:
    hands = {
        i: label for i, c in labelled.items() if (label := hand_label(c, dimension)) is not None
    }
    ids = [i for i in hands if i in predicted]
    y = [hands[i] for i in ids]
    f = [predicted[i] for i in ids]
    pi, strata = design
    weights = [pi[i] for i in ids] if pi else None
    groups = [strata[i] for i in ids] if strata else None
    f_all = list(predicted.values())
    classical = labels_only(y, confidence, weights, groups)
    powered = ppi_mean(y, f, f_all, confidence, weights, strata=groups)
    unpredicted = len(hands) - len(ids)
    notes = []
    if len(ids) < 2:
        notes.append(f"{len(ids)} labelled cases with a prediction: no interval")
    if unpredicted:
        notes.append(f"{unpredicted} labelled cases have no prediction and are left out")
    return DimensionEstimate(
        judge_only=Value(value=judge_only(f_all)),
        labels_only=_clipped(classical.value, classical.low, classical.high),
        ppi=_clipped(powered.value, powered.low, powered.high),
        n_labelled=len(ids),
        n_graded=len(f_all),
        effective_labels=effective_labels(len(ids), classical.variance, powered.variance),
        lam=powered.lam,
        note="; ".join(notes) or None,
    )


def _clipped(value: float | None, low: float | None, high: float | None) -> Interval:
    return Interval(
        value=value,
        low=None if low is None else max(0.0, low),
        high=None if high is None else min(1.0, high),
    )
