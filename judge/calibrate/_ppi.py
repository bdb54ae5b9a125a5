"""Estimates of a rate from hand labels on a subset and a judge's predictions on every case:
the labels alone (a normal, Wald, interval), the judge alone (a value, no interval), and
prediction-powered inference with power tuning (PPI++: Angelopoulos, Duchi, Zrnic 2023).

PPI++ on a simple random sample of the N graded cases: theta = lambda * mean_u(f) +
mean_n(y - lambda * f), over the N_u graded cases nobody labelled and the n labelled (two
independent samples); variance lambda^2 Var_u(f) / N_u + Var_n(y - lambda f) / n; lambda =
Cov_n(y, f) / ((1 + n/N_u) Var(f)) clipped to [0, 1] (0: the labels alone, so the interval
is never much wider than theirs). The moments follow `ppi-python`'s `ppi_mean_ci` given the
unlabelled cases (Cov and Var_n over n, Var(f) over every graded prediction with N - 1).
Counting the labelled cases among the unlabelled ones too, as passing every graded case to
`ppi-python` does, leaves out the covariance of the two terms: intervals too narrow where
the labels are a large share of the graded cases.

A draw with unequal probabilities (or strata): theta = lambda * mean_N(f) + the Hajek mean
of y - lambda f; variance the Hajek mean's (with replacement, or stratified) + (Var(y) -
Var(y - lambda f)) / N: the graded cases' own spread, Var(y) / N, less the share of it the
with-replacement variance already holds (exactly, for a simple random sample), so that at
lambda 0 it is the labels' alone; lambda the weighted Cov(y, f) / Var(f). With inclusion
probabilities pi_i the labelled terms' mean is the Hajek one,
sum x_i / pi_i over sum 1 / pi_i (equal pi: the plain mean; a stratified design: the
Horvitz-Thompson mean), and its variance the linearised with-replacement one, sum (x_i -
mean)^2 / pi_i^2 over (sum 1 / pi_i)^2: conservative for a fixed-size design drawn without
replacement (`judge sample --for-estimate`: simple random or randomized systematic PPS),
and, unlike Horvitz-Thompson's, not thrown by a random count of labels (the cases with a
prediction among those drawn)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

Floats = NDArray[np.float64]


@dataclass(frozen=True)
class Mean:
    """An estimated mean; `low`, `high` and `variance` (the estimate's) are None where they
    cannot be measured (fewer than 2 labels), all of it None without a label."""

    value: float | None
    low: float | None = None
    high: float | None = None
    variance: float | None = None


@dataclass(frozen=True)
class PPIMean(Mean):
    """A PPI++ mean and the `lam` (lambda) it used."""

    lam: float | None = None


def z_score(confidence: float) -> float:
    """The two-sided normal quantile for `confidence` (0.95: 1.96)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _floats(values: ArrayLike) -> Floats:
    return np.asarray(values, dtype=np.float64).reshape(-1)


def _design(
    values: Floats, pi: Floats | None, strata: Sequence[str] | None = None
) -> tuple[float, float]:
    """The labelled terms' mean and its variance as the design weighs them: plain without
    `pi`; the Hajek mean and its with-replacement variance with it; with `strata` too (each
    label's), the stratified variance, sum over strata of W_h^2 Var_h / n_h, W_h the share of
    the weight in stratum h (the with-replacement one where a stratum has a single label)."""
    if pi is None:
        return float(values.mean()), float(values.var()) / values.size
    if pi.shape != values.shape or np.any(pi <= 0) or np.any(pi > 1):
        raise ValueError("inclusion probabilities: one per label, each in (0, 1]")
    weights = (1.0 / pi) / float(np.mean(1.0 / pi))
    mean = float(np.mean(weights * values))
    pooled = float(np.mean((weights * (values - mean)) ** 2)) / values.size
    if strata is None:
        return mean, pooled
    if len(strata) != values.size:
        raise ValueError("strata: one per label")
    groups: dict[str, list[int]] = {}
    for index, name in enumerate(strata):
        groups.setdefault(name, []).append(index)
    if any(len(members) < 2 for members in groups.values()):
        return mean, pooled
    variance = 0.0
    for members in groups.values():
        share = float(weights[members].sum()) / values.size
        within = values[members]
        if np.ptp(pi[members]) > 0:  # unequal within the stratum: its own Hajek terms
            local = weights[members] / float(weights[members].mean())
            spread = float(np.mean((local * (within - np.mean(local * within))) ** 2))
        else:
            spread = float(within.var())
        variance += share**2 * spread / len(members)
    return mean, variance


def _normal(value: float, variance: float, confidence: float) -> tuple[float, float]:
    half = z_score(confidence) * float(np.sqrt(variance))
    return value - half, value + half


def judge_only(f_all: ArrayLike) -> float | None:
    """The predictions' mean over every graded case (biased by the judge's errors)."""
    f = _floats(f_all)
    return float(f.mean()) if f.size else None


def labels_only(
    y: ArrayLike,
    confidence: float = 0.95,
    pi: ArrayLike | None = None,
    strata: Sequence[str] | None = None,
) -> Mean:
    """The labels' mean and its normal (Wald) interval; with inclusion probabilities `pi`,
    weighted by them (the Hajek mean), and with `strata`, the stratified variance."""
    labels = _floats(y)
    if labels.size == 0:
        return Mean(None)
    value, variance = _design(labels, None if pi is None else _floats(pi), strata)
    if labels.size < 2:
        return Mean(value)
    return Mean(value, *_normal(value, variance, confidence), variance)


def power_tuning(
    y: ArrayLike, f: ArrayLike, f_all: ArrayLike, pi: ArrayLike | None = None
) -> float:
    """PPI++'s lambda for a mean, clipped to [0, 1]; 0 where the predictions do not vary.
    Uniform: Cov_n(y, f) / ((1 + n / N_u) Var(f)), N_u the graded cases left unlabelled (as
    `ppi-python`); weighted by `pi`: the weighted Cov(y, f) / Var(f), which minimises the
    weighted estimator's variance."""
    labels, predicted, everyone = _floats(y), _floats(f), _floats(f_all)
    n, rest = labels.size, everyone.size - labels.size
    weights = np.ones(n) if pi is None else 1.0 / _floats(pi)
    weights = weights / weights.mean()
    centred_y = labels - np.average(labels, weights=weights)
    centred_f = predicted - np.average(predicted, weights=weights)
    covariance = float(np.mean(weights * centred_y * centred_f))
    if pi is not None:
        spread = float(np.mean(weights * centred_f**2))
        return 0.0 if spread == 0.0 else float(np.clip(covariance / spread, 0.0, 1.0))
    spread = float(np.var(everyone, ddof=1))
    if spread == 0.0 or rest == 0:
        return 0.0
    return float(np.clip(covariance / ((1 + n / rest) * spread), 0.0, 1.0))


def ppi_mean(
    y: ArrayLike,
    f: ArrayLike,
    f_all: ArrayLike,
    confidence: float = 0.95,
    pi: ArrayLike | None = None,
    lam: float | None = None,
    strata: Sequence[str] | None = None,
) -> PPIMean:
    """The PPI++ mean: labels `y` with the judge's predictions `f` on the same cases, and
    `f_all` on every graded case (the labelled among them); `pi`, the labelled cases'
    inclusion probabilities (and `strata`, each label's stratum: stratified PPI, Fisch et al.
    2024); `lam` fixed, or power-tuned. None where fewer than 2 labels."""
    labels, predicted, everyone = _floats(y), _floats(f), _floats(f_all)
    if labels.shape != predicted.shape:
        raise ValueError("one prediction per label")
    n, population = labels.size, everyone.size
    if n < 2 or population < n:
        return PPIMean(None)
    weights = None if pi is None else _floats(pi)
    if weights is not None and strata is None and np.ptp(weights) == 0:
        weights = None  # equal probabilities: a simple random sample
    if lam is None:
        lam = power_tuning(labels, predicted, everyone, weights)
    if weights is None and strata is None:
        value, variance = _uniform(labels, predicted, everyone, lam)
    else:
        residual = labels - lam * predicted
        rectified, rectified_variance = _design(residual, weights, strata)
        value = lam * float(everyone.mean()) + rectified
        # the graded cases' own spread, less what the design's with-replacement variance
        # already counts of it (exactly so for a simple random sample): at lambda 0, the
        # labels alone
        own = (_spread(labels, weights) - _spread(residual, weights)) / population
        variance = max(rectified_variance + own, 0.0)
    return PPIMean(value, *_normal(value, variance, confidence), variance, lam)


def _uniform(
    labels: Floats, predicted: Floats, everyone: Floats, lam: float
) -> tuple[float, float]:
    """PPI++ on a simple random sample: the unlabelled graded cases are the N_u in `f_all`
    beside the labelled ones, a sample independent of theirs: theta = lambda mean_u(f) +
    mean_n(y - lambda f), variance lambda^2 Var_u(f) / N_u + Var_n(y - lambda f) / n."""
    n, rest = labels.size, everyone.size - labels.size
    residual = labels - lam * predicted
    if rest == 0 or lam == 0.0:  # every graded case labelled, or the labels alone
        return float(labels.mean()), float(labels.var()) / n
    total, squares = (
        float(everyone.sum() - predicted.sum()),
        float((everyone**2).sum() - (predicted**2).sum()),
    )
    mean_rest = total / rest
    var_rest = max(0.0, squares / rest - mean_rest**2)
    value = lam * mean_rest + float(residual.mean())
    return value, lam**2 * var_rest / rest + float(residual.var()) / n


def _spread(labels: Floats, pi: Floats | None) -> float:
    """The labels' variance in the population, as the design weighs them."""
    weights = np.ones(labels.size) if pi is None else 1.0 / pi
    mean = float(np.average(labels, weights=weights))
    return float(np.average((labels - mean) ** 2, weights=weights))


def effective_labels(n: int, classical: float | None, ppi: float | None) -> float | None:
    """How many labels alone would give the PPI interval's width: n times the labels-only
    variance over the PPI variance (None where either is unknown or the PPI one is 0)."""
    if classical is None or ppi is None or ppi <= 0.0:
        return None
    return n * classical / ppi
