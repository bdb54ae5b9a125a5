"""pass^k and pass@k from repeated runs of the same cases.

For a case run n times with c passes, the unbiased estimators are
pass@k = 1 - C(n-c, k) / C(n, k)   (at least one of k runs passes; Chen et al., 2021) and
pass^k = C(c, k) / C(n, k)         (all k runs pass; tau-bench, Yao et al., 2024).
The overall value is the mean over cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import comb
from typing import Any


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k runs, drawn without replacement from n, passes."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all k runs, drawn without replacement from n, pass (pass^k)."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"passes ({c}) must be between 0 and the runs ({n})")
    if not 1 <= k <= n:
        raise ValueError(f"k ({k}) must be between 1 and the runs ({n})")


@dataclass(frozen=True)
class CaseRepeats:
    """One case's outcomes over its runs."""

    case_id: str
    runs: int
    passes: int
    pass_hat: dict[int, float]
    pass_at: dict[int, float]

    @property
    def varies(self) -> bool:
        """Some runs pass and some fail."""
        return 0 < self.passes < self.runs

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "runs": self.runs,
            "passes": self.passes,
            "pass_hat_k": {str(k): v for k, v in self.pass_hat.items()},
            "pass_at_k": {str(k): v for k, v in self.pass_at.items()},
        }


@dataclass(frozen=True)
class RepeatStats:
    """pass^k and pass@k per case and overall (the mean over cases that have at least k runs)."""

    cases: list[CaseRepeats]
    pass_hat: dict[int, float] = field(default_factory=dict)
    pass_at: dict[int, float] = field(default_factory=dict)
    covered: dict[int, int] = field(default_factory=dict)
    """Per k, the cases its mean is over (those with at least k gradable runs): a case with
    fewer (a run undecided, or its simulated user off its scenario) drops out of it."""

    @property
    def varying(self) -> list[str]:
        """The cases whose outcome differs between runs."""
        return [c.case_id for c in self.cases if c.varies]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pass_hat_k": {str(k): v for k, v in self.pass_hat.items()},
            "pass_at_k": {str(k): v for k, v in self.pass_at.items()},
            "pass_k_cases": {str(k): v for k, v in self.covered.items()},
            "varying": self.varying,
            "cases": [c.to_dict() for c in self.cases],
        }


def repeat_stats(
    outcomes: Mapping[str, Sequence[bool | None]], ks: Iterable[int] | None = None
) -> RepeatStats:
    """pass^k and pass@k for every k in `ks` (default 1..the most runs of any case).

    `outcomes` maps a case id to the `passed` of each of its runs; a null outcome (nothing to
    grade against) is left out of the count, so a case's n is its gradable runs.
    """
    counted = {
        case_id: [bool(o) for o in runs if o is not None] for case_id, runs in outcomes.items()
    }
    most = max((len(runs) for runs in counted.values()), default=0)
    chosen = sorted(set(ks)) if ks is not None else list(range(1, most + 1))
    cases = []
    for case_id, runs in counted.items():
        n, c = len(runs), sum(runs)
        usable = [k for k in chosen if 1 <= k <= n]
        cases.append(
            CaseRepeats(
                case_id=case_id,
                runs=n,
                passes=c,
                pass_hat={k: pass_hat_k(n, c, k) for k in usable},
                pass_at={k: pass_at_k(n, c, k) for k in usable},
            )
        )
    pass_hat: dict[int, float] = {}
    pass_at: dict[int, float] = {}
    covered: dict[int, int] = {}
    for k in chosen:
        eligible = [case for case in cases if k in case.pass_hat]
        if eligible:
            pass_hat[k] = sum(case.pass_hat[k] for case in eligible) / len(eligible)
            pass_at[k] = sum(case.pass_at[k] for case in eligible) / len(eligible)
            covered[k] = len(eligible)
    return RepeatStats(cases=cases, pass_hat=pass_hat, pass_at=pass_at, covered=covered)
