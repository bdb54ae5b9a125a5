"""Comparing models from a runs file: pass rates with their uncertainty, the breakdown by
check, pass^k / pass@k over runs, spend and latency, and paired differences between models.

The unit of analysis is the case: a case's runs are averaged first, so repeating runs never
narrows an interval as if the repeats were new cases.
- Pass rate: the mean over cases of each case's share of passing runs, with a 95% Wilson
  score interval whose n is the number of cases (honest at 0% and 100%, and for few cases).
- Difference between two models: a paired bootstrap over the cases both have graded
  (resampling cases, seeded), the 95% percentile interval of the mean difference.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

import orjson

from judge.runs._failing import FailingCase, Structural, failing_cases, structural
from judge.runs._intervals import Interval, wilson
from judge.runs._records import RunRecord
from judge.runs._repeats import repeat_stats

if TYPE_CHECKING:
    from judge.cases._case import Case
    from judge.runs._compare_ppi import PPIComparison

BOOTSTRAP_SAMPLES = 10_000
BOOTSTRAP_SEED = 20240607
FEW_CASES = 10
_BREAKDOWN = ("tool_selection", "schema_valid", "argument_values", "tool_assertions", "judge")


@dataclass(frozen=True)
class ModelStats:
    """One model's results over its cases and runs."""

    model: str
    responses: int
    """Records, failed requests included."""
    errors: int
    """Requests that failed for good (left out of every rate)."""
    user_errors: int
    """Runs whose simulated user broke its scenario (`user_error`): the simulator's mistake,
    not the agent's, so left out of every rate."""
    tool_errors: int
    """Tool calls of agent runs that failed in the environment (a tool's refusal, a server
    that did not answer), over all runs."""
    runs_with_tool_errors: int
    cases: int
    """Cases with at least one graded run (the n of the interval)."""
    pass_rate: Interval | None
    mean_f1: float | None
    """Partial credit: the mean `call_scores.f1` of the graded responses that have one."""
    breakdown: dict[str, float | None]
    """Share of graded responses where each check holds (`judge`: the judge passed it)."""
    pass_hat_k: dict[int, float]
    pass_at_k: dict[int, float]
    varying: list[str]
    """Cases that passed in some runs and failed in others."""
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    """Null when no response was priced."""
    latency_p50: float | None
    latency_p95: float | None
    per_case: dict[str, float] = field(repr=False, default_factory=dict)
    """Each case's share of passing runs."""
    structural: Structural | None = None
    """Its calls' structural error rates (reference-free)."""
    failing: list[FailingCase] = field(default_factory=list)
    """Every run it failed, by case and run."""
    per_case_f1: dict[str, float] = field(repr=False, default_factory=dict)
    """Each case's mean `call_scores.f1` over its runs (where it has one)."""
    per_case_structural: dict[str, float] = field(repr=False, default_factory=dict)
    """Each case's share of calls with a structural failure (where it made calls)."""
    user_error_runs: list[dict[str, Any]] = field(default_factory=list)
    """The runs whose simulated user broke its scenario: `{"case_id", "run", "reason"}`."""
    pass_k_cases: dict[int, int] = field(default_factory=dict)
    """Per k, the cases pass^k and pass@k are over (those with k gradable runs or more)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "responses": self.responses,
            "errors": self.errors,
            "user_errors": self.user_errors,
            "tool_errors": self.tool_errors,
            "runs_with_tool_errors": self.runs_with_tool_errors,
            "cases": self.cases,
            "pass_rate": self.pass_rate.to_dict() if self.pass_rate else None,
            "mean_f1": self.mean_f1,
            "breakdown": self.breakdown,
            "pass_hat_k": {str(k): v for k, v in self.pass_hat_k.items()},
            "pass_at_k": {str(k): v for k, v in self.pass_at_k.items()},
            "pass_k_cases": {str(k): v for k, v in self.pass_k_cases.items()},
            "varying": self.varying,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "latency_s": {"p50": self.latency_p50, "p95": self.latency_p95},
            "structural": self.structural.to_dict() if self.structural else None,
            "failing": [f.to_dict() for f in self.failing],
            "user_error_runs": self.user_error_runs,
        }


@dataclass(frozen=True)
class PairedDifference:
    """Pass rate of `a` minus that of `b`, on the cases both have graded."""

    a: str
    b: str
    cases: int
    difference: Interval | None

    def reversed(self) -> PairedDifference:
        """`b` minus `a`: the same bootstrap, its interval mirrored."""
        d = self.difference
        flipped = None if d is None else d.mirrored()
        return PairedDifference(self.b, self.a, self.cases, flipped)

    @property
    def significant(self) -> bool:
        """The 95% interval leaves out zero."""
        d = self.difference
        return d is not None and d.excludes_zero

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "cases": self.cases,
            "difference": self.difference.to_dict() if self.difference else None,
            "significant": self.significant,
        }


@dataclass(frozen=True)
class Comparison:
    """Every model, best first, and every pair of them."""

    models: list[ModelStats]
    pairs: list[PairedDifference]
    warnings: list[str]
    method: dict[str, Any]
    structural_pairs: list[PairedDifference] = field(default_factory=list)
    """Per pair, the share of calls with a structural failure of `a` minus that of `b`."""
    estimates: PPIComparison | None = None
    """With hand labels: the prediction-powered pass rates and differences."""

    def to_dict(self) -> dict[str, Any]:
        found = {
            "models": [m.to_dict() for m in self.models],
            "pairs": [p.to_dict() for p in self.pairs],
            "structural_pairs": [p.to_dict() for p in self.structural_pairs],
            "warnings": self.warnings,
            "method": self.method,
        }
        return found if self.estimates is None else found | {"ppi": self.estimates.to_dict()}


def compare_runs(
    records: Sequence[RunRecord],
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
    labels: Iterable[Case] | None = None,
    assume_random: bool = False,
) -> Comparison:
    """The comparison of the models of `records`; with `labels` (see `_compare_ppi`), their
    prediction-powered pass rates and differences too (InputError: labels it refuses)."""
    by_model: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        by_model[record.model].append(record)
    stats = [_model_stats(name, rows) for name, rows in by_model.items()]
    stats.sort(key=lambda s: (s.pass_rate is None, -(s.pass_rate.value if s.pass_rate else 0)))
    pairs = [
        paired_difference(a.model, a.per_case, b.model, b.per_case, samples=samples, seed=seed)
        for a, b in combinations(stats, 2)
    ]
    structural_pairs = [
        paired_difference(
            a.model,
            a.per_case_structural,
            b.model,
            b.per_case_structural,
            samples=samples,
            seed=seed,
        )  # fmt: skip
        for a, b in combinations(stats, 2)
    ]
    warnings = _fairness_warnings(by_model)
    if any(0 < pair.cases < FEW_CASES for pair in pairs):
        warnings.append(
            f"paired intervals from fewer than {FEW_CASES} common cases are unreliable: a "
            "bootstrap cannot see variation that so few cases do not show"
        )
    estimates = None
    if labels is not None:
        from judge.runs._compare_ppi import ppi_comparison

        per_case = {s.model: s.per_case for s in stats}
        estimates = ppi_comparison(per_case, labels, assume_random=assume_random)
        warnings += [f"PPI: {w}" for w in estimates.warnings]
    return Comparison(
        models=stats,
        pairs=pairs,
        warnings=warnings,
        method={
            "pass_rate_interval": "95% Wilson score, n = cases (runs averaged per case)",
            "difference_interval": "95% paired bootstrap over common cases, percentile",
            "bootstrap_samples": samples,
            "bootstrap_seed": seed,
            "structural_interval": "95% Wilson score, n = calls; paired: bootstrap over cases",
        },
        structural_pairs=structural_pairs,
        estimates=estimates,
    )


METRICS = ("pass_rate", "mean_f1", "ppi_pass_rate")


def regressions(comparison: Comparison, baseline: str, metric: str = "pass_rate") -> list[str]:
    """What is worse than `baseline` for sure: each candidate whose paired difference in
    `metric` (per case: the share of passing runs, or the mean F1; or the prediction-powered
    pass rate) against it has its whole 95% interval below 0, said with the figures.
    `ValueError` when `baseline` is no model, or `ppi_pass_rate` without labels."""
    by_name = {m.model: m for m in comparison.models}
    if baseline not in by_name:
        raise ValueError(
            f"--fail-if-worse {baseline}: not a model of these runs ({', '.join(by_name)})"
        )
    if metric == "ppi_pass_rate":
        return _ppi_regressions(comparison, baseline)
    worse = []
    for model in comparison.models:
        if model.model == baseline:
            continue
        pair = _against(comparison, model, by_name[baseline], metric)
        d = pair.difference
        if d is not None and d.high < 0:
            worse.append(
                f"{model.model} is worse than {baseline} in {metric}: {d.value:+.3f} "
                f"[{d.low:+.3f}, {d.high:+.3f}] over {pair.cases} common cases"
            )
    return worse


def _ppi_regressions(comparison: Comparison, baseline: str) -> list[str]:
    if comparison.estimates is None:
        raise ValueError("--metric ppi_pass_rate needs hand labels (--labels)")
    worse = []
    for found in comparison.estimates.pairs:
        if baseline not in (found.a, found.b):
            continue
        pair = found if found.b == baseline else found.reversed()
        d = pair.difference
        if d is not None and d.high < 0:
            worse.append(
                f"{pair.a} is worse than {baseline} in ppi_pass_rate: {d.value:+.3f} "
                f"[{d.low:+.3f}, {d.high:+.3f}] over {pair.cases} common cases, "
                f"{pair.labelled} labelled for both"
            )
    return worse


def _against(
    comparison: Comparison, model: ModelStats, base: ModelStats, metric: str
) -> PairedDifference:
    """`model` minus `base` in `metric`: the comparison's own pair for the pass rate, one
    bootstrapped alike (same samples and seed) for the mean F1."""
    if metric == "pass_rate":
        for pair in comparison.pairs:
            if (pair.a, pair.b) == (model.model, base.model):
                return pair
            if (pair.a, pair.b) == (base.model, model.model):
                return pair.reversed()
    return paired_difference(
        model.model,
        model.per_case if metric == "pass_rate" else model.per_case_f1,
        base.model,
        base.per_case if metric == "pass_rate" else base.per_case_f1,
        samples=comparison.method["bootstrap_samples"],
        seed=comparison.method["bootstrap_seed"],
    )


def paired_difference(
    a: str,
    a_cases: dict[str, float],
    b: str,
    b_cases: dict[str, float],
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PairedDifference:
    """Mean per-case pass rate of `a` minus `b`, with a seeded paired bootstrap interval."""
    import numpy as np

    common = sorted(a_cases.keys() & b_cases.keys())
    if not common:
        return PairedDifference(a, b, 0, None)
    diffs = np.array([a_cases[c] - b_cases[c] for c in common])
    rng = np.random.default_rng(seed)
    means: list[Any] = []
    batch = max(1, 2_000_000 // len(diffs))  # bounded memory for large case sets
    for start in range(0, samples, batch):
        picks = rng.integers(0, len(diffs), size=(min(batch, samples - start), len(diffs)))
        means.append(diffs[picks].mean(axis=1))
    resampled = np.concatenate(means)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return PairedDifference(
        a, b, len(common), Interval(float(diffs.mean()), float(low), float(high))
    )


def _model_stats(model: str, rows: list[RunRecord]) -> ModelStats:
    outcomes: dict[str, list[bool | None]] = defaultdict(list)
    graded = [r for r in rows if r.error is None and r.user_error is None]
    for record in graded:
        outcomes[record.case_id].append(record.passed)
    repeats = repeat_stats(outcomes)
    per_case = {c.case_id: c.passes / c.runs for c in repeats.cases if c.runs}
    rate = sum(per_case.values()) / len(per_case) if per_case else None
    latencies = [r.latency_s for r in graded if r.latency_s is not None]
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]
    f1s = [r.call_scores.f1 for r in graded if r.call_scores is not None]
    case_f1s: dict[str, list[float]] = defaultdict(list)
    for record in graded:
        if record.call_scores is not None:
            case_f1s[record.case_id].append(record.call_scores.f1)
    rates, structural_shares = structural(graded)
    return ModelStats(
        model=model,
        responses=len(rows),
        errors=sum(r.error is not None for r in rows),
        user_errors=sum(r.error is None and r.user_error is not None for r in rows),
        tool_errors=sum(len(r.tool_errors) for r in rows),
        runs_with_tool_errors=sum(bool(r.tool_errors) for r in rows),
        cases=len(per_case),
        pass_rate=wilson(rate, len(per_case)) if rate is not None else None,
        mean_f1=sum(f1s) / len(f1s) if f1s else None,
        breakdown={name: _share(graded, name) for name in _BREAKDOWN},
        pass_hat_k=repeats.pass_hat,
        pass_at_k=repeats.pass_at,
        pass_k_cases=repeats.covered,
        varying=repeats.varying,
        prompt_tokens=sum(_tokens(r, "prompt_tokens") for r in rows),
        completion_tokens=sum(_tokens(r, "completion_tokens") for r in rows),
        cost_usd=sum(costs) if costs else None,
        latency_p50=_quantile(latencies, 0.50),
        latency_p95=_quantile(latencies, 0.95),
        per_case=per_case,
        structural=rates,
        failing=failing_cases(graded),
        per_case_f1={case: sum(f) / len(f) for case, f in case_f1s.items()},
        per_case_structural=structural_shares,
        user_error_runs=[
            {"case_id": r.case_id, "run": r.run, "reason": r.user_error}
            for r in rows
            if r.error is None and r.user_error is not None
        ],
    )


def _share(rows: list[RunRecord], name: str) -> float | None:
    values = [
        (r.judge.passed if r.judge else None) if name == "judge" else getattr(r, name) for r in rows
    ]
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _tokens(record: RunRecord, name: str) -> int:
    value = (record.usage or {}).get(name)
    return int(value) if isinstance(value, int | float) else 0


def _quantile(values: list[float], q: float) -> float | None:
    import numpy as np

    return float(np.quantile(values, q)) if values else None


def _fairness_warnings(by_model: dict[str, list[RunRecord]]) -> list[str]:
    """Models asked with different settings, or on different cases, are not comparable as is."""
    warnings: list[str] = []
    # Compared as each model's set: `judge run` stores the same settings with every record,
    # and a file whose settings vary by case or run is still fair when every model shares them.
    settings = {
        model: frozenset(
            orjson.dumps(r.settings, option=orjson.OPT_SORT_KEYS)
            for r in rows
            if r.settings is not None
        )
        for model, rows in by_model.items()
    }
    if len({found for found in settings.values() if found}) > 1:  # none stored: unknown
        warnings.append(
            "the models were not all asked with the same settings: the comparison is not fair "
            "(run them together with `judge run`)"
        )
    case_sets = {model: {r.case_id for r in rows} for model, rows in by_model.items()}
    if len({frozenset(s) for s in case_sets.values()}) > 1:
        warnings.append(
            "the models were run on different cases: pass rates are not directly comparable; "
            "the paired differences use the cases in common"
        )
    for model, rows in by_model.items():
        errors = sum(r.error is not None for r in rows)
        if errors:
            warnings.append(
                f"{model}: {errors} of {len(rows)} requests failed and are left out of its rates"
            )
        faulty = sum(r.error is None and r.user_error is not None for r in rows)
        if faulty:
            warnings.append(
                f"{model}: in {faulty} of {len(rows)} runs the simulated user broke its scenario "
                "(user_error): the simulator's mistakes, left out of its rates"
            )
    return warnings
