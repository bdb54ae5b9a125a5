"""Agreement on one dimension between hand labels and verdicts (the judge's, or the
deterministic checks'): the (label, verdict) pairs, Cohen's kappa with a seeded bootstrap
interval, the confusion matrix, TPR and TNR."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from judge.cases._case import Case
from judge.checks._result import CaseResult

Dimension = Literal["selection", "arguments", "answer"]
DIMENSIONS: tuple[Dimension, ...] = ("selection", "arguments")
"""Always measured; `answer` too when the sample has answer labels."""


def dimensions_of(cases: Iterable[Case]) -> tuple[Dimension, ...]:
    """The dimensions a sample calibrates: selection and arguments, and the answer when
    some case carries an answer label."""
    answers = any(c.labels is not None and c.labels.answer is not None for c in cases)
    return (*DIMENSIONS, "answer") if answers else DIMENSIONS


LABELS = ("correct", "incorrect")
MIN_PAIRS = 10
"""Fewer labelled pairs than this: no kappa is reported, only that the sample is too small."""
BOOTSTRAP_ROUNDS = 2000
BOOTSTRAP_SEED = 20261130


class Confusion(BaseModel):
    """Rows: the hand label; columns: the verdict; order `correct`, `incorrect`."""

    model_config = ConfigDict(frozen=True)

    labels: tuple[str, str] = LABELS
    matrix: tuple[tuple[int, int], tuple[int, int]]


class DimensionStats(BaseModel):
    """Agreement on one dimension. `kappa` is None when the sample cannot support one."""

    model_config = ConfigDict(frozen=True)

    n: int
    """Cases with both a label and a verdict."""
    kappa: float | None
    ci_low: float | None
    ci_high: float | None
    agreement: float | None
    """Raw agreement: the share of cases where verdict and label are the same."""
    confusion: Confusion
    tpr: float | None
    """Of the cases labelled `correct`, the share the verdict calls `correct`."""
    tnr: float | None
    """Of the cases labelled `incorrect`, the share the verdict calls `incorrect`."""
    label_counts: dict[str, int]
    verdict_counts: dict[str, int]
    excluded: dict[str, int] = Field(default_factory=dict)
    """Cases left out, by reason: `judge_error`, `no_label`, `no_verdict`."""
    degenerate: str | None = None
    """Why no kappa is given (one class only, too few pairs)."""
    passed: bool | None = None
    """Against the record's threshold (judge dimensions only)."""
    note: str | None = None
    """What the threshold can and cannot be read into, for this sample."""


def judge_verdict(result: CaseResult, dimension: Dimension) -> tuple[str | None, str]:
    """The judge's case-level verdict on a dimension, or None and why there is none."""
    judged = result.judge
    if judged is None or judged.status != "ok":
        return None, "judge_error" if judged and judged.status == "judge_error" else "no_verdict"
    verdict = judged.selection.verdict if dimension == "selection" and judged.selection else None
    if dimension == "arguments":
        verdict = judged.arguments_verdict
    if dimension == "answer":
        verdict = judged.answer.verdict if judged.answer else None
    if verdict == "uncertain":
        return None, "uncertain"
    return verdict, "no_verdict"


def check_verdict(result: CaseResult, dimension: Dimension) -> tuple[str | None, str]:
    """The deterministic checks as a verdict (`tool_selection`, `argument_values`; none for
    the answer)."""
    if dimension == "answer":
        return None, "no_verdict"
    value = result.tool_selection if dimension == "selection" else result.argument_values
    return (None if value is None else "correct" if value else "incorrect"), "no_verdict"


def pairs_of(
    cases: Iterable[Case],
    results: Iterable[CaseResult],
    dimension: Dimension,
    verdict_of: Callable[[CaseResult, Dimension], tuple[str | None, str]] = judge_verdict,
) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """(label, verdict) pairs of one dimension, and the count of cases left out by reason."""
    pairs: list[tuple[str, str]] = []
    excluded = {"judge_error": 0, "no_label": 0, "no_verdict": 0}
    for case, result in zip(cases, results, strict=True):
        label = getattr(case.labels, dimension, None) if case.labels else None
        verdict, reason = verdict_of(result, dimension)
        if label is None:
            excluded["no_label"] += 1
        elif verdict is None:
            excluded[reason] = excluded.get(reason, 0) + 1
        else:
            pairs.append((label, verdict))
    return pairs, excluded


def bootstrap_interval(pairs: list[tuple[str, str]]) -> tuple[float | None, float | None]:
    """A seeded percentile bootstrap 95% interval of kappa. Resamples whose labels hold one
    class only (kappa undefined) are dropped."""
    import numpy as np

    cells = np.array([LABELS.index(a) * 2 + LABELS.index(b) for a, b in pairs])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    drawn = cells[rng.integers(0, len(cells), (BOOTSTRAP_ROUNDS, len(cells)))]
    # Per resample, the 2x2 table [[cc, ci], [ic, ii]] as counts, then kappa from it.
    cc, ci, ic, ii = ((drawn == k).sum(axis=1).astype(float) for k in range(4))
    n = float(len(cells))
    observed = (cc + ii) / n
    expected = ((cc + ci) * (cc + ic) + (ic + ii) * (ci + ii)) / n**2
    defined = (cc + ci > 0) & (ic + ii > 0) & (expected < 1)
    if not defined.any():
        return None, None
    kappas = (observed[defined] - expected[defined]) / (1 - expected[defined])
    low, high = np.percentile(kappas, [2.5, 97.5])
    return float(low), float(high)


def dimension_stats(
    pairs: list[tuple[str, str]],
    excluded: dict[str, int],
    threshold: float | None = None,
    strict: bool = False,
) -> DimensionStats:
    """Kappa, its bootstrap interval, agreement, the confusion matrix, TPR and TNR."""
    from sklearn.metrics import cohen_kappa_score

    labels = [a for a, _ in pairs]
    verdicts = [b for _, b in pairs]
    matrix = tuple(
        tuple(sum(1 for a, b in pairs if a == row and b == col) for col in LABELS) for row in LABELS
    )
    (tp, fn), (fp, tn) = matrix
    n = len(pairs)
    degenerate = None
    if n < MIN_PAIRS:
        degenerate = f"too few labelled pairs ({n} < {MIN_PAIRS})"
    elif len(set(labels)) < 2:
        degenerate = f"the labels hold one class only ({labels[0]!r}): kappa cannot be measured"
    kappa = ci_low = ci_high = None
    if degenerate is None:
        kappa = float(cohen_kappa_score(labels, verdicts, labels=list(LABELS)))
        ci_low, ci_high = bootstrap_interval(pairs)
    passed = note = None
    if threshold is not None:
        bound = ci_low if strict else kappa
        passed = bound is not None and bound >= threshold
        if degenerate:
            note = f"no kappa: {degenerate}"
        elif ci_low is not None and ci_high is not None and ci_low < threshold <= ci_high:
            note = (
                f"the sample (n={n}) is too small to support kappa >= {threshold}: the 95% "
                f"interval [{ci_low:.2f}, {ci_high:.2f}] holds the threshold"
            )
    return DimensionStats(
        n=n,
        kappa=kappa,
        ci_low=ci_low,
        ci_high=ci_high,
        agreement=(tp + tn) / n if n else None,
        confusion=Confusion(matrix=matrix),  # type: ignore[arg-type]
        tpr=tp / (tp + fn) if tp + fn else None,
        tnr=tn / (tn + fp) if tn + fp else None,
        label_counts={k: labels.count(k) for k in LABELS},
        verdict_counts={k: verdicts.count(k) for k in LABELS},
        excluded=excluded,
        degenerate=degenerate,
        passed=passed,
        note=note,
    )
