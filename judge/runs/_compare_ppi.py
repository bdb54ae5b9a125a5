"""Prediction-powered pass rates of the models of a runs file, and their paired differences,
from hand labels on part of each model's cases (`_ppi`, `_ppi_paired`).

A label is of one model's response to one case: a labels file's line (a case, as `judge
label`, `judge review` or `judge labels import` write them) whose `id` is the case's id and
whose `meta.model` is the model's name (as in the run records); its `passed` label is the one
`judge estimate` reads (a selection label, and every label given `correct`). With several
runs of a case, the label is of any one of them (the runs are alike), and the prediction is
the case's share of passing runs. The labelled cases' design is read from `meta.
inclusion_probability` as `judge estimate` reads it, per model; refused when unknown unless
`assume_random`. A difference is measured on the cases labelled for both models."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from judge._errors import InputError
from judge.calibrate._estimate import MIN_LABELS, design_of, hand_label, labels_by_id
from judge.calibrate._ppi import Mean, effective_labels, judge_only, labels_only, ppi_mean
from judge.calibrate._ppi_paired import ppi_difference
from judge.cases._case import Case
from judge.runs._intervals import Interval

MODEL_KEY = "model"
"""The `meta` key of a label that names the model whose response it labels."""


@dataclass(frozen=True)
class ModelEstimate:
    """One model's pass rate: the judge's alone, the labels' alone, and PPI++."""

    model: str
    judge_only: float | None
    labels_only: Interval | None
    ppi: Interval | None
    """None with fewer than 2 labelled cases."""
    n_labelled: int
    n_graded: int
    effective_labels: float | None
    lam: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "judge_only": self.judge_only,
            "labels_only": self.labels_only.to_dict() if self.labels_only else None,
            "ppi": self.ppi.to_dict() if self.ppi else None,
            "n_labelled": self.n_labelled,
            "n_graded": self.n_graded,
            "effective_labels": self.effective_labels,
            "lam": self.lam,
        }


@dataclass(frozen=True)
class PPIDifference:
    """The PPI++ pass rate of `a` minus that of `b`: `labelled`, the cases labelled for both;
    `cases`, those both were graded on."""

    a: str
    b: str
    labelled: int
    cases: int
    judge_only: float | None
    difference: Interval | None

    def reversed(self) -> PPIDifference:
        d = self.difference
        flipped = None if d is None else d.mirrored()
        judged = None if self.judge_only is None else -self.judge_only
        return PPIDifference(self.b, self.a, self.labelled, self.cases, judged, flipped)

    @property
    def significant(self) -> bool:
        d = self.difference
        return d is not None and d.excludes_zero

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "labelled": self.labelled,
            "cases": self.cases,
            "judge_only": self.judge_only,
            "difference": self.difference.to_dict() if self.difference else None,
            "significant": self.significant,
        }


@dataclass(frozen=True)
class PPIComparison:
    confidence: float
    designs: dict[str, str]
    """Per model, how its labelled cases were drawn (as in `judge estimate`)."""
    models: list[ModelEstimate]
    pairs: list[PPIDifference]
    warnings: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence,
            "designs": self.designs,
            "models": [m.to_dict() for m in self.models],
            "pairs": [p.to_dict() for p in self.pairs],
            "warnings": self.warnings,
        }


def labels_by_model(
    labels: Iterable[Case], graded: dict[str, set[str]]
) -> dict[str, dict[str, Case]]:
    """The labelled cases per model (`meta.model`) and case id. InputError: a label naming no
    model or one the runs lack, and what `labels_by_id` refuses."""
    grouped: dict[str, list[Case]] = defaultdict(list)
    unnamed: list[str] = []
    for case in labels:
        if case.labels is None:
            continue
        model = case.meta.get(MODEL_KEY)
        if not isinstance(model, str) or not model:
            unnamed.append(case.id)
            continue
        grouped[model].append(case)
    if unnamed:
        raise InputError(
            f"labels must name the model whose response they label (`meta.{MODEL_KEY}`): "
            + ", ".join(repr(i) for i in sorted(unnamed)[:10])
        )
    unknown = sorted(set(grouped) - set(graded))
    if unknown:
        raise InputError(f"labels on models the runs lack: {', '.join(map(repr, unknown))}")
    found = {}
    for model, cases in grouped.items():
        try:
            found[model] = labels_by_id(cases, graded[model])
        except InputError as exc:
            raise InputError(f"{model}: {exc}") from None
    return found


def ppi_comparison(
    per_case: dict[str, dict[str, float]],
    labels: Iterable[Case],
    *,
    confidence: float = 0.95,
    assume_random: bool = False,
) -> PPIComparison:
    """Each model's PPI++ pass rate over its graded cases, from `per_case` (per model, in
    the comparison's order: each case's share of passing runs), and each pair's difference
    (in the order `combinations` gives, as the comparison's pairs)."""
    stats = [_Graded(model, cases) for model, cases in per_case.items()]
    labelled = labels_by_model(labels, {s.model: set(s.per_case) for s in stats})
    designs: dict[str, str] = {}
    weights: dict[str, dict[str, float]] = {}
    hands: dict[str, dict[str, int]] = {}
    for s in stats:
        designs[s.model], weights[s.model] = design_of(labelled.get(s.model, {}), assume_random)
        given = labelled.get(s.model, {}).items()
        hands[s.model] = {i: y for i, c in given if (y := hand_label(c, "passed")) is not None}
    models = [_model(s, hands[s.model], weights[s.model], confidence) for s in stats]
    warnings = [
        f"{m.model}: {m.n_labelled} labelled cases (fewer than {MIN_LABELS}): its PPI "
        "interval is not to be trusted"
        for m in models
        if m.n_labelled < MIN_LABELS
    ]
    pairs = []
    for a, b in combinations(stats, 2):
        pair, warning = _pair(a, b, hands, weights, confidence)
        pairs.append(pair)
        warnings += [warning] if warning else []
    return PPIComparison(confidence, designs, models, pairs, warnings)


@dataclass(frozen=True)
class _Graded:
    model: str
    per_case: dict[str, float]


def _model(
    stats: _Graded, hands: dict[str, int], pi: dict[str, float], confidence: float
) -> ModelEstimate:
    ids = sorted(hands)
    y = [hands[i] for i in ids]
    f = [stats.per_case[i] for i in ids]
    f_all = list(stats.per_case.values())
    weights = [pi[i] for i in ids] if pi else None
    classical = labels_only(y, confidence, weights)
    powered = ppi_mean(y, f, f_all, confidence, weights)
    return ModelEstimate(
        model=stats.model,
        judge_only=judge_only(f_all),
        labels_only=_interval(classical, 0.0),
        ppi=_interval(powered, 0.0),
        n_labelled=len(ids),
        n_graded=len(f_all),
        effective_labels=effective_labels(len(ids), classical.variance, powered.variance),
        lam=powered.lam,
    )


def _pair(
    a: _Graded,
    b: _Graded,
    hands: dict[str, dict[str, int]],
    weights: dict[str, dict[str, float]],
    confidence: float,
) -> tuple[PPIDifference, str | None]:
    common = sorted(a.per_case.keys() & b.per_case.keys())
    both = [i for i in common if i in hands[a.model] and i in hands[b.model]]
    g_all = [a.per_case[i] - b.per_case[i] for i in common]
    judged = sum(g_all) / len(g_all) if g_all else None
    pi_a, pi_b = weights[a.model], weights[b.model]
    pi = [pi_a[i] for i in both] if pi_a else None
    if (pi_a or pi_b) and (not pi_a or not pi_b or any(pi_a[i] != pi_b[i] for i in both)):
        warning = (
            f"{a.model} - {b.model}: the cases labelled for both were not drawn alike (their "
            "inclusion probabilities differ): no PPI difference"
        )
        return PPIDifference(a.model, b.model, len(both), len(common), judged, None), warning
    found = ppi_difference(
        [hands[a.model][i] for i in both],
        [hands[b.model][i] for i in both],
        [a.per_case[i] for i in both],
        [b.per_case[i] for i in both],
        g_all,
        confidence,
        pi,
    )
    difference = _interval(found, -1.0)
    return PPIDifference(a.model, b.model, len(both), len(common), judged, difference), None


def _interval(mean: Mean, floor: float) -> Interval | None:
    """The mean's interval clipped to [floor, 1]; None without one."""
    if mean.value is None or mean.low is None or mean.high is None:
        return None
    return Interval(mean.value, max(floor, mean.low), min(1.0, mean.high))
