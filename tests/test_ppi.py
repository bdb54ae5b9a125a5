"""The rate estimators of `judge estimate`: closed-form cases, and on seeded synthetic data
that PPI++ is unbiased, covers at its confidence, and is narrower than the labels alone when
the judge is good (never much wider when it is noise), with a design's weights."""

from __future__ import annotations

import numpy as np
import pytest

from judge.calibrate._ppi import effective_labels, judge_only, labels_only, ppi_mean, z_score

TRUE_RATE = 0.7
N, n = 2000, 100
REPEATS = 300


def population(rng: np.random.Generator, accuracy: float | None) -> tuple[np.ndarray, np.ndarray]:
    """True outcomes at TRUE_RATE and a judge right with `accuracy` (None: a coin toss)."""
    y = (rng.random(N) < TRUE_RATE).astype(float)
    if accuracy is None:
        return y, (rng.random(N) < 0.5).astype(float)
    right = rng.random(N) < accuracy
    return y, np.where(right, y, 1 - y)


def test_a_closed_form_case() -> None:
    y, f = [1, 1, 0, 0], [1, 1, 0, 0]
    f_all = [1, 1, 0, 0, 1, 0, 1, 0]
    found = ppi_mean(y, f, f_all)
    lam = 0.25 / (2 * 2 / 7)  # Cov_n / ((1 + n/N_u) Var of the 8 predictions, N - 1)
    assert found.lam == pytest.approx(lam)
    assert found.value == pytest.approx(0.5)
    # the 4 unlabelled ([1, 0, 1, 0]) and the 4 labelled, independent samples
    variance = lam**2 * 0.25 / 4 + (1 - lam) ** 2 / 4 / 4
    assert found.variance == pytest.approx(variance)
    half = 1.959964 * variance**0.5
    assert (found.low, found.high) == pytest.approx((0.5 - half, 0.5 + half))
    classical = labels_only(y)
    assert (classical.value, classical.variance) == pytest.approx((0.5, 0.25 / 4))
    assert judge_only(f_all) == 0.5
    assert effective_labels(4, classical.variance, found.variance) == pytest.approx(
        4 * 0.0625 / variance
    )


def test_lambda_zero_is_the_labels_alone_and_one_is_classical_ppi() -> None:
    rng = np.random.default_rng(1)
    y, f = population(rng, 0.8)
    labelled = rng.choice(N, n, replace=False)
    alone = labels_only(y[labelled])
    zero = ppi_mean(y[labelled], f[labelled], f, lam=0.0)
    assert (zero.value, zero.variance) == pytest.approx((alone.value, alone.variance))
    one = ppi_mean(y[labelled], f[labelled], f, lam=1.0)
    rest = np.setdiff1d(np.arange(N), labelled)
    assert one.value == pytest.approx(f[rest].mean() + (y[labelled] - f[labelled]).mean())


@pytest.mark.parametrize(
    ("y", "f", "f_all"),
    [
        pytest.param([], [], [1, 0], id="no-label"),
        pytest.param([1], [1], [1, 0], id="one-label"),
    ],
)
def test_too_few_labels_give_no_ppi_estimate(y: list[int], f: list[int], f_all: list[int]) -> None:
    assert ppi_mean(y, f, f_all).value is None
    assert labels_only(y).low is None
    assert labels_only(y).value == (None if not y else 1.0)


def test_a_constant_judge_leaves_the_labels_alone() -> None:
    y = [1, 0, 1, 1]
    found = ppi_mean(y, [1, 1, 1, 1], [1] * 20)
    assert found.lam == 0.0
    assert (found.value, found.variance) == pytest.approx((0.75, labels_only(y).variance))


def test_no_variance_at_all_gives_a_point_and_no_effective_labels() -> None:
    found = ppi_mean([1, 1, 1], [1, 1, 1], [1] * 10)
    assert (found.value, found.low, found.high, found.variance) == (1.0, 1.0, 1.0, 0.0)
    assert effective_labels(3, labels_only([1, 1, 1]).variance, found.variance) is None


def test_the_confidence_must_be_a_probability() -> None:
    assert z_score(0.95) == pytest.approx(1.959964, abs=1e-6)
    with pytest.raises(ValueError, match="between 0 and 1"):
        ppi_mean([1, 0], [1, 0], [1, 0, 1], confidence=1.0)


def simulate(accuracy: float | None, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    covered = widths = alone_widths = estimates = judged = 0.0
    for _ in range(REPEATS):
        y, f = population(rng, accuracy)
        labelled = rng.choice(N, n, replace=False)
        found = ppi_mean(y[labelled], f[labelled], f)
        alone = labels_only(y[labelled])
        assert found.low is not None and found.high is not None and found.value is not None
        assert alone.low is not None and alone.high is not None
        covered += found.low <= TRUE_RATE <= found.high
        widths += found.high - found.low
        alone_widths += alone.high - alone.low
        estimates += found.value
        judged += judge_only(f) or 0.0
    return {
        "coverage": covered / REPEATS,
        "width_ratio": widths / alone_widths,
        "bias": estimates / REPEATS - TRUE_RATE,
        "judge_bias": judged / REPEATS - TRUE_RATE,
    }


def test_a_good_judge_is_unbiased_covers_and_narrows() -> None:
    found = simulate(0.9, seed=53)
    assert 0.92 <= found["coverage"] <= 0.98
    assert abs(found["bias"]) < 0.01
    assert found["judge_bias"] < -0.03  # the judge alone: 0.9 * 0.7 + 0.1 * 0.3 = 0.66
    assert found["width_ratio"] < 0.8


def test_a_random_judge_costs_next_to_nothing() -> None:
    found = simulate(None, seed=54)
    assert 0.92 <= found["coverage"] <= 0.98
    assert abs(found["bias"]) < 0.01
    assert found["width_ratio"] <= 1.02


def test_equal_inclusion_probabilities_are_the_unweighted_estimate() -> None:
    rng = np.random.default_rng(2)
    y, f = population(rng, 0.8)
    labelled = rng.choice(N, n, replace=False)
    pi = np.full(n, n / N)
    plain = ppi_mean(y[labelled], f[labelled], f)
    weighted = ppi_mean(y[labelled], f[labelled], f, pi=pi)
    assert weighted.value == pytest.approx(plain.value, abs=1e-12)
    assert weighted.variance == pytest.approx(plain.variance, abs=1e-12)
    assert weighted.lam == pytest.approx(plain.lam, abs=1e-12)
    alone = labels_only(y[labelled], pi=pi)
    assert alone.value == pytest.approx(labels_only(y[labelled]).value)


def test_a_stratified_design_stays_unbiased_with_its_weights() -> None:
    """Half the cases at rate 0.9, half at 0.5 (0.7 overall); 20 labels drawn from the
    first half, 80 from the second: unweighted, the labels say 0.58."""
    rng = np.random.default_rng(3)
    half = N // 2
    weighted = unweighted = covered = 0.0
    for _ in range(REPEATS):
        rates = np.r_[np.full(half, 0.9), np.full(half, 0.5)]
        y = (rng.random(N) < rates).astype(float)
        f = np.where(rng.random(N) < 0.85, y, 1 - y)
        labelled = np.r_[rng.choice(half, 20, replace=False), half + rng.choice(half, 80, False)]
        pi = np.r_[np.full(20, 20 / half), np.full(80, 80 / half)]
        found = ppi_mean(y[labelled], f[labelled], f, pi=pi)
        assert found.value is not None and found.low is not None and found.high is not None
        weighted += found.value
        covered += found.low <= TRUE_RATE <= found.high
        unweighted += labels_only(y[labelled]).value or 0.0
    assert abs(weighted / REPEATS - TRUE_RATE) < 0.01
    assert unweighted / REPEATS < 0.62
    assert covered / REPEATS >= 0.92


@pytest.mark.parametrize("seed", range(12))
def test_the_same_numbers_as_ppi_python(seed: int) -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(seed)
    quality = rng.uniform(0.5, 0.95)
    y, f = population(rng, quality)
    labelled = rng.choice(N, int(rng.integers(20, 300)), replace=False)
    alpha = float(rng.choice([0.05, 0.1, 0.2]))
    found = ppi_mean(y[labelled], f[labelled], f, confidence=1 - alpha)
    rest = np.setdiff1d(np.arange(N), labelled)  # the graded cases nobody labelled
    value = ppi_py.ppi_mean_pointestimate(y[labelled], f[labelled], f[rest])
    low, high = ppi_py.ppi_mean_ci(y[labelled], f[labelled], f[rest], alpha=alpha)
    assert found.value == pytest.approx(float(np.ravel(value)[0]), abs=1e-6)
    assert (found.low, found.high) == pytest.approx(
        (float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-6
    )


@pytest.mark.parametrize("weighted", [False, True])
def test_labels_that_are_most_of_the_graded_cases_still_cover(weighted: bool) -> None:
    """100 labels of 120 graded cases and a good judge: counting the labelled among the
    unlabelled too (the covariance of the two terms left out) covered 88.5% here."""
    rng = np.random.default_rng(120)
    held = 0
    for _ in range(400):
        y = (rng.random(120) < TRUE_RATE).astype(float)
        f = np.where(rng.random(120) < 0.9, y, 1 - y)
        labelled = rng.choice(120, 100, replace=False)
        pi = np.where(np.arange(100) % 2 == 0, 0.8, 0.8 + 1e-9) if weighted else None
        found = ppi_mean(y[labelled], f[labelled], f, pi=pi)
        assert found.low is not None and found.high is not None
        held += found.low <= TRUE_RATE <= found.high
    assert 0.92 <= held / 400 <= 0.98


def test_a_weighted_draw_at_lambda_zero_is_the_labels_alone() -> None:
    rng = np.random.default_rng(7)
    y, f = population(rng, 0.8)
    labelled = rng.choice(N, n, replace=False)
    pi = rng.uniform(0.05, 0.5, n)
    alone = labels_only(y[labelled], pi=pi)
    zero = ppi_mean(y[labelled], f[labelled], f, pi=pi, lam=0.0)
    assert (zero.value, zero.variance) == pytest.approx((alone.value, alone.variance))
    tuned = ppi_mean(y[labelled], f[labelled], f, pi=pi)
    assert tuned.variance is not None and alone.variance is not None
    assert tuned.variance < alone.variance  # a good judge narrows a weighted draw too
