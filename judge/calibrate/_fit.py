"""Fitting the judge's decision on hand labels, by k-fold cross-validation, and the figures read
from the held-out folds only: kappa, reliability and expected calibration error, risk-coverage.

Per dimension, what is fitted depends on what the verdicts carry:
- `scored`: verdicts of a scored rubric carry their answers (`features`): a small logistic
  regression (scikit-learn) re-weighs them, per branch (responses with calls, without), and the
  decision is a threshold on its P(correct);
- `platt`: other verdicts with a confidence (logprobs or samples) keep their labels; a logistic
  map of the confidence (Platt scaling) makes it a calibrated probability that the label is
  right.
Derived verdicts (decided by code) are certain and fitted by nothing. Verdicts without any
confidence fit nothing: the record then reports what it always did."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from judge.cases._case import Case
from judge.checks._outcome import AnswerVerdict, ArgumentVerdict, SelectionVerdict
from judge.checks._result import CaseResult
from judge.judging._questions import used_tools
from judge.judging._rubric import Combine
from judge.judging._scored import feature, logit, platt, probability

FOLDS = 5
INNER_FOLDS = 3
"""Folds of the inner cross-validation that picks how a scored rubric is fitted."""
SEED = 20261201
COVERAGES = (0.2, 0.4, 0.6, 0.8, 1.0)
BINS = 5  # reliability bins over [0.5, 1] (and one below 0.5)
_MIN_CLASS = 2  # each class at least this often per branch, or the branch keeps its weights


class Fitted(BaseModel):
    """What `judge grade --calibration` applies to one dimension's verdicts."""

    model_config = ConfigDict(frozen=True)

    method: Literal["scored", "platt"]
    threshold: float = 0.5
    """`scored`: P(correct) at or above it is `correct`."""
    combine: dict[str, Combine] = {}
    """`scored`: the refitted weights per branch (`called`, `not_called`)."""
    platt: tuple[float, float] | None = None
    """`platt`: P(label right) = sigmoid(a x logit(confidence) + b)."""


class Bin(BaseModel):
    model_config = ConfigDict(frozen=True)

    low: float
    high: float
    n: int
    confidence: float | None
    """Mean confidence of the verdicts in the bin."""
    accuracy: float | None
    """Share of them that agree with the label."""


class Coverage(BaseModel):
    model_config = ConfigDict(frozen=True)

    coverage: float
    n: int
    kappa: float | None
    agreement: float | None
    min_confidence: float | None
    """The confidence of the least sure verdict kept: abstaining below it keeps this share."""


class ConfidenceStats(BaseModel):
    """How well the cross-validated confidence tells right verdicts from wrong ones."""

    model_config = ConfigDict(frozen=True)

    method: Literal["scored", "platt"]
    folds: int
    """The folds of the cross-validation (5, fewer when a class has fewer labels)."""
    ece: float
    reliability: tuple[Bin, ...]
    risk_coverage: tuple[Coverage, ...]
    confidences: tuple[float, ...] = ()
    """Every cross-validated confidence, most sure first: where `--coverage` cuts."""
    at_coverage: Coverage | None = None
    """At the coverage `judge calibrate --coverage` asked for: what its gate reads."""

    def cut(self, coverage: float) -> float:
        """The confidence that keeps this share of verdicts (abstaining below it)."""
        if not self.confidences:
            return 0.0
        return self.confidences[max(1, math.ceil(coverage * len(self.confidences))) - 1]


@dataclass
class Item:
    """One labelled case on one dimension: what the judge's verdicts say about it."""

    label: bool
    branch: str
    calls: list[dict[str, float]] = field(default_factory=list)
    """Per judged call (arguments) or one entry (selection): a scored rubric's features."""
    says: bool | None = None
    """The judge's own label: correct or not."""
    confidence: float | None = None
    """The judge's confidence in its own label."""
    derived: bool = False


@dataclass
class Prediction:
    p: float
    """Cross-validated P(correct)."""
    verdict: bool
    confidence: float


def items_of(
    cases: Sequence[Case], results: Sequence[CaseResult], dimension: str
) -> list[Item | None]:
    """Each case's item on the dimension (None: no label, or no usable verdict)."""
    found: list[Item | None] = []
    for case, result in zip(cases, results, strict=True):
        label = getattr(case.labels, dimension, None) if case.labels else None
        judged = result.judge
        if label is None or judged is None or judged.status != "ok":
            found.append(None)
            continue
        branch = "called" if case.tool_calls else "not_called"
        if dimension == "selection":
            found.append(selection_item(label == "correct", branch, judged.selection))
        elif dimension == "answer":  # the branch a scored answer rubric took: tools used or not
            branch = "called" if used_tools(case) else "not_called"
            found.append(selection_item(label == "correct", branch, judged.answer))
        else:
            found.append(arguments_item(label == "correct", branch, judged.arguments))
    return found


def selection_item(
    label: bool, branch: str, verdict: SelectionVerdict | AnswerVerdict | None
) -> Item | None:
    if verdict is None or verdict.verdict == "uncertain":
        return None
    if verdict.source == "derived":
        return Item(label, branch, derived=True)
    calls = [verdict.features] if verdict.features is not None else []
    return Item(label, branch, calls, verdict.verdict == "correct", verdict.confidence)


def arguments_item(label: bool, branch: str, verdicts: Sequence[ArgumentVerdict]) -> Item | None:
    applicable = [v for v in verdicts if v.verdict != "not_applicable"]
    if not applicable or any(v.verdict == "uncertain" for v in applicable):
        return None
    if any(v.source == "derived" for v in applicable):
        return Item(label, branch, derived=True)
    features = [v.features for v in applicable]
    calls = [f for f in features if f is not None] if all(f is not None for f in features) else []
    # The case is correct when every call is (as sure as the least sure of them), else
    # incorrect (as sure as the surest incorrect call).
    says = all(v.verdict == "correct" for v in applicable)
    deciding = [v for v in applicable if (v.verdict == "correct") == says]
    confidences = [v.confidence for v in deciding]
    confidence = None
    if all(c is not None for c in confidences):
        known = [c for c in confidences if c is not None]
        confidence = min(known) if says else max(known)
    return Item(label, branch, calls, says, confidence)


def method_for(items: Sequence[Item]) -> Literal["scored", "platt"] | None:
    """`scored` when every judged verdict carries its answers; `platt` when most carry a
    confidence (the others are kept, least confident); None otherwise."""
    judged = [i for i in items if not i.derived]
    if not judged:
        return None
    if all(i.calls for i in judged):
        return "scored"
    if sum(i.confidence is not None for i in judged) >= 0.9 * len(judged):
        return "platt"
    return None


def cross_validate(
    items: Sequence[Item], method: Literal["scored", "platt"], defaults: dict[str, Combine]
) -> tuple[list[Prediction], int]:
    """Held-out predictions for every item (each fold predicted by a fit on the others), and
    how many folds there were."""
    predictions: list[Prediction | None] = [None] * len(items)
    folds = _folds([i.label for i in items])
    for train, test in folds:
        fitted = fit([items[i] for i in train], method, defaults)
        for index in test:
            predictions[index] = predict(fitted, items[index])
    return [p for p in predictions if p is not None], len(folds)


def fit(
    items: Sequence[Item],
    method: Literal["scored", "platt"],
    defaults: dict[str, Combine],
) -> Fitted:
    """Fit on these items: the weights per branch and the threshold, or the Platt map.

    For a scored rubric four decisions compete, each over every branch: the rubric's own
    combination rescaled (two parameters a branch: steadier with few labels) or every weight
    refitted, each cut where its P(correct) reaches 0.5 or at the threshold with the best kappa
    on these items (which follows the labels closer, and overfits a few dozen of them). The one
    with the best kappa in an inner cross-validation of these items wins, ties going to the one
    listed first in `_DECISIONS`, so the choice never sees the fold being predicted. Too few
    labels for that inner cross-validation get the rescaling with the tuned cut."""
    judged = [i for i in items if not i.derived]
    if method == "platt":
        known = [i for i in judged if i.confidence is not None]
        x = [[logit(i.confidence or 0.5)] for i in known]
        y = [i.says == i.label for i in known]  # its own label right
        coef = _logistic(x, y)
        platt = None if coef is None else (coef[1][0], coef[0])
        return Fitted(method="platt", platt=platt)
    # Derived verdicts are decided by code whatever the fit: they take no part in it.
    items = judged
    labels = [i.label for i in items]
    if len(items) < 2 * INNER_FOLDS or min(sum(labels), len(labels) - sum(labels)) < INNER_FOLDS:
        return _scored_fit(items, defaults, _rescaled, tuned_cut=True)
    best, chosen = -2.0, _DECISIONS[0]
    for how, tuned_cut in _DECISIONS:
        verdicts: list[bool | None] = [None] * len(items)
        for train, test in _folds(labels, INNER_FOLDS):
            inner = _scored_fit([items[i] for i in train], defaults, how, tuned_cut=tuned_cut)
            for index in test:
                verdicts[index] = predict(inner, items[index]).verdict
        found = kappa([bool(v) for v in verdicts], labels)
        score = -1.0 if found is None else found
        if score > best + 1e-9:
            best, chosen = score, (how, tuned_cut)
    how, tuned_cut = chosen
    return _scored_fit(items, defaults, how, tuned_cut=tuned_cut)


Refit = Callable[[list[tuple[dict[str, float], bool]], Combine], Combine | None]


def _scored_fit(
    items: Sequence[Item], defaults: dict[str, Combine], how: Refit, *, tuned_cut: bool
) -> Fitted:
    """One fit of a scored rubric's decision: each branch by `how`, then the threshold: the
    best kappa's on these items (`tuned_cut`), else 0.5 on the fitted P(correct)."""
    combine = dict(defaults)
    for branch, default in defaults.items():
        rows = [(c, i.label) for i in items if i.branch == branch for c in _rows(i)]
        found = how(rows, default)
        if found is not None:
            combine[branch] = found
    probe = Fitted(method="scored", combine=combine)
    if not tuned_cut:
        return probe
    scores = [predict(probe, i).p for i in items]
    threshold = best_threshold(scores, [i.label for i in items])
    return probe.model_copy(update={"threshold": threshold})


def _refitted(rows: list[tuple[dict[str, float], bool]], default: Combine) -> Combine | None:
    """Every feature's weight fitted anew."""
    names = sorted({name for c, _ in rows for name in c})
    coef = _logistic([[feature(c, n) for n in names] for c, _ in rows], [y for _, y in rows])
    if coef is None:
        return None
    bias, weights = coef
    return Combine(bias=bias, weights=dict(zip(names, weights, strict=True)))


def _rescaled(rows: list[tuple[dict[str, float], bool]], default: Combine) -> Combine | None:
    """The rubric's combination z, rescaled: sigmoid(a x z + b), as weights a x w, bias
    a x bias + b."""
    z = [default.bias + sum(w * feature(c, n) for n, w in default.weights.items()) for c, _ in rows]
    coef = _logistic([[v] for v in z], [y for _, y in rows])
    if coef is None:
        return None
    b, (a,) = coef
    weights = {n: a * w for n, w in default.weights.items()}
    return Combine(bias=a * default.bias + b, weights=weights)


_DECISIONS: tuple[tuple[Refit, bool], ...] = (
    (_rescaled, False),
    (_refitted, False),
    (_rescaled, True),
    (_refitted, True),
)
"""What `fit` chooses from (how the weights are fitted, whether the cut is tuned), fitting
less first. Measured on the embedded judge's verdicts of three labelled sets (the sample, 85
and 170 public cases; both dimensions; 5-fold kappa averaged over 5 fold seeds), choosing among
these four beat choosing the weights alone with a tuned cut on 4 of the 6 (arguments on the 85
public cases: 0.44 against 0.15) and was at most 0.04 behind on the other 2."""


def _rows(item: Item) -> list[dict[str, float]]:
    """Training rows of an item: a selection's one; an arguments case's calls when the label
    is correct (every call is), or its one call when incorrect (which call is wrong is unknown
    when there are several)."""
    if item.label or len(item.calls) == 1:
        return item.calls
    return []


def predict(fitted: Fitted, item: Item) -> Prediction:
    if item.derived:
        return Prediction(0.0, False, 1.0)
    if fitted.method == "platt":
        says = bool(item.says)
        right = (
            0.5 if item.confidence is None else platt(fitted.platt or (1.0, 0.0), item.confidence)
        )
        return Prediction(right if says else 1 - right, says, right)
    combine = fitted.combine[item.branch]
    p = min(probability(combine, features) for features in item.calls)
    verdict = p >= fitted.threshold
    return Prediction(p, verdict, p if verdict else 1 - p)


def best_threshold(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The cut on P(correct) with the best kappa: 0.5, or a midpoint between two neighbouring
    scores (ties: the one nearest 0.5)."""
    best, chosen = -2.0, 0.5
    ordered = sorted(set(scores))
    cuts = {0.5, *((a + b) / 2 for a, b in zip(ordered, ordered[1:], strict=False))}
    for t in sorted(cuts, key=lambda t: abs(t - 0.5)):
        if not 0.02 <= t <= 0.98:
            continue
        k = kappa([s >= t for s in scores], labels)
        if k is not None and k > best + 1e-9:
            best, chosen = k, t
    return chosen


def kappa(verdicts: Sequence[bool], labels: Sequence[bool]) -> float | None:
    n = len(labels)
    if n == 0 or len(set(labels)) < 2:
        return None
    observed = sum(v == y for v, y in zip(verdicts, labels, strict=True)) / n
    pv, py = sum(verdicts) / n, sum(labels) / n
    expected = pv * py + (1 - pv) * (1 - py)
    return None if expected >= 1 else (observed - expected) / (1 - expected)


def confidence_stats(
    method: Literal["scored", "platt"],
    predictions: Sequence[Prediction],
    labels: Sequence[bool],
    coverage: float | None = None,
    folds: int = FOLDS,
) -> ConfidenceStats:
    right = [p.verdict == y for p, y in zip(predictions, labels, strict=True)]
    bins = []
    ece = 0.0
    # Below 0.5 (a calibrated judge less sure of its label than of the other), then BINS
    # equal bins over [0.5, 1].
    edges = [(0.0, 0.5), *((0.5 + b * 0.5 / BINS, 0.5 + (b + 1) * 0.5 / BINS) for b in range(BINS))]
    for low, high in edges:
        inside = [
            i
            for i, p in enumerate(predictions)
            if low <= p.confidence < high or (high == 1.0 and p.confidence == high)
        ]
        conf = sum(predictions[i].confidence for i in inside) / len(inside) if inside else None
        acc = sum(right[i] for i in inside) / len(inside) if inside else None
        if conf is not None and acc is not None:
            ece += len(inside) / len(predictions) * abs(acc - conf)
        bins.append(Bin(low=low, high=high, n=len(inside), confidence=conf, accuracy=acc))
    order = sorted(range(len(predictions)), key=lambda i: -predictions[i].confidence)

    def at(share: float) -> Coverage:
        kept = order[: max(1, math.ceil(share * len(order)))] if order else []
        verdicts = [predictions[i].verdict for i in kept]
        return Coverage(
            coverage=share,
            n=len(kept),
            kappa=kappa(verdicts, [labels[i] for i in kept]),
            agreement=sum(right[i] for i in kept) / len(kept) if kept else None,
            min_confidence=predictions[kept[-1]].confidence if kept else None,
        )

    return ConfidenceStats(
        method=method,
        folds=folds,
        ece=ece,
        reliability=tuple(bins),
        risk_coverage=tuple(at(share) for share in COVERAGES),
        confidences=tuple(predictions[i].confidence for i in order),
        at_coverage=None if coverage is None else at(coverage),
    )


def _folds(labels: Sequence[bool], folds: int = FOLDS) -> list[tuple[list[int], list[int]]]:
    from sklearn.model_selection import StratifiedKFold

    smallest = min(sum(labels), len(labels) - sum(labels))
    k = max(2, min(folds, smallest))
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=SEED)
    return [(list(a), list(b)) for a, b in splitter.split([[0]] * len(labels), labels)]


def _logistic(x: list[list[float]], y: list[bool]) -> tuple[float, list[float]] | None:
    """An L2-regularised logistic regression; None when a class is (nearly) missing."""
    if min(sum(y), len(y) - sum(y)) < _MIN_CLASS or not x or not x[0]:
        return None
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0, max_iter=1000).fit(x, y)
    return float(model.intercept_[0]), [float(w) for w in model.coef_[0]]
