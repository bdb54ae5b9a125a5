"""Estimates of a rate from hand labels on a subset and a judge's predictions on every case:
the labels alone (a normal, Wald, interval), the judge alone (a value, no interval), and
prediction-powered inference with power tuning (PPI++: Angelopoulos, Duchi, Zrnic 2023).

PPI++: theta = lambda * mean_N(f) + mean_n(y - lambda * f), over the N graded cases (the
labelled among them) and the n labelled; variance lambda^2 Var_N(f) / N + Var_n(y - lambda f)
/ n; lambda = Cov_n(y, f) / ((1 + n/N) Var(f)) clipped to [0, 1] (0: the labels alone, so
the interval is never much wider than theirs). The moments follow `ppi-python`'s
`ppi_mean_ci` (Cov and Var_n over n, Var(f) over the labelled and graded predictions with
n - 1). With inclusion probabilities pi_i the labelled terms' mean is the Hajek one,
sum x_i / pi_i over sum 1 / pi_i (equal pi: the plain mean; a stratified design: the
Horvitz-Thompson mean), and its variance the linearised with-replacement one, sum (x_i -
mean)^2 / pi_i^2 over (sum 1 / pi_i)^2: conservative for a fixed-size design drawn without
replacement (`judge sample --for-estimate`: simple random or randomized systematic PPS),
and, unlike Horvitz-Thompson's, not thrown by a random count of labels (the cases with a
prediction among those drawn)."""

from __future__ import annotations

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


def _design(values: Floats, pi: Floats | None) -> tuple[float, float]:
    """The labelled terms' mean and its variance as the design weighs them: plain without
    `pi`; the Hajek mean and its with-replacement variance with it."""
    if pi is None:
        return float(values.mean()), float(values.var()) / values.size
    if pi.shape != values.shape or np.any(pi <= 0) or np.any(pi > 1):
        raise ValueError("inclusion probabilities: one per label, each in (0, 1]")
    weights = (1.0 / pi) / float(np.mean(1.0 / pi))
    mean = float(np.mean(weights * values))
    return mean, float(np.mean((weights * (values - mean)) ** 2)) / values.size


def _normal(value: float, variance: float, confidence: float) -> tuple[float, float]:
    half = z_score(confidence) * float(np.sqrt(variance))
    return value - half, value + half


def judge_only(f_all: ArrayLike) -> float | None:
    """The predictions' mean over every graded case (biased by the judge's errors)."""
    f = _floats(f_all)
    return float(f.mean()) if f.size else None


def labels_only(y: ArrayLike, confidence: float = 0.95, pi: ArrayLike | None = None) -> Mean:
    """The labels' mean and its normal (Wald) interval; with inclusion probabilities `pi`,
    weighted by them (the Hajek mean)."""
    labels = _floats(y)
    if labels.size == 0:
        return Mean(None)
    value, variance = _design(labels, None if pi is None else _floats(pi))
    if labels.size < 2:
        return Mean(value)
    return Mean(value, *_normal(value, variance, confidence), variance)


def power_tuning(
    y: ArrayLike, f: ArrayLike, f_all: ArrayLike, pi: ArrayLike | None = None
) -> float:
    """PPI++'s lambda for a mean, clipped to [0, 1]; 0 where the predictions do not vary."""
    labels, predicted, everyone = _floats(y), _floats(f), _floats(f_all)
    n, population = labels.size, everyone.size
    weights = np.ones(n) if pi is None else 1.0 / _floats(pi)
    weights = weights / weights.mean()
    centred_y = labels - np.average(labels, weights=weights)
    centred_f = predicted - np.average(predicted, weights=weights)
    covariance = float(np.mean(weights * centred_y * centred_f))
    spread = float(np.var(np.concatenate([predicted, everyone]), ddof=1))
    if spread == 0.0:
        return 0.0
    return float(np.clip(covariance / ((1 + n / population) * spread), 0.0, 1.0))


def ppi_mean(
    y: ArrayLike,
    f: ArrayLike,
    f_all: ArrayLike,
    confidence: float = 0.95,
    pi: ArrayLike | None = None,
    lam: float | None = None,
) -> PPIMean:
    """The PPI++ mean: labels `y` with the judge's predictions `f` on the same cases, and
    `f_all` on every graded case (the labelled included); `pi`, the labelled cases'
    inclusion probabilities; `lam` fixed, or power-tuned. None where fewer than 2 labels."""
    labels, predicted, everyone = _floats(y), _floats(f), _floats(f_all)
    if labels.shape != predicted.shape:
        raise ValueError("one prediction per label")
    n, population = labels.size, everyone.size
    if n < 2 or population < n:
        return PPIMean(None)
    weights = None if pi is None else _floats(pi)
    if lam is None:
        lam = power_tuning(labels, predicted, everyone, weights)
    rectified, rectified_variance = _design(labels - lam * predicted, weights)
    value = lam * float(everyone.mean()) + rectified
    variance = lam**2 * float(everyone.var()) / population + rectified_variance
    return PPIMean(value, *_normal(value, variance, confidence), variance, lam)


def effective_labels(n: int, classical: float | None, ppi: float | None) -> float | None:
    """How many labels alone would give the PPI interval's width: n times the labels-only
    variance over the PPI variance (None where either is unknown or the PPI one is 0)."""
    if classical is None or ppi is None or ppi <= 0.0:
        return None
    return n * classical / ppi
