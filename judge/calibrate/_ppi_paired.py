"""The prediction-powered difference of two paired means (two candidates graded on the same
cases): PPI++ (`_ppi.ppi_mean`) on the per-case difference, the labels' `z = y_a - y_b` on the
cases labelled for both, the judge's `g = f_a - f_b` on every case both were graded on."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from judge.calibrate._ppi import PPIMean, ppi_mean


def ppi_difference(
    y_a: ArrayLike,
    y_b: ArrayLike,
    f_a: ArrayLike,
    f_b: ArrayLike,
    g_all: ArrayLike,
    confidence: float = 0.95,
    pi: ArrayLike | None = None,
) -> PPIMean:
    """Mean of `a` minus mean of `b`: `y_a`, `y_b` the labels and `f_a`, `f_b` the
    predictions on the cases labelled for both (in one order), `g_all` the predicted
    differences on every case both were graded on; `pi`, the labelled cases' inclusion
    probabilities. None where fewer than 2 cases are labelled for both."""
    z = np.asarray(y_a, dtype=np.float64) - np.asarray(y_b, dtype=np.float64)
    g = np.asarray(f_a, dtype=np.float64) - np.asarray(f_b, dtype=np.float64)
    return ppi_mean(z, g, g_all, confidence, pi)
