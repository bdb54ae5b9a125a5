"""How well each trajectory match mode agrees with tau-bench's own reward.

The data: ../shared/datasets/taubench_airline_gpt4o.jsonl, 200 real gpt-4o airline
trajectories (50 tasks x 4 trials) with the benchmark's pass/fail reward (a database-state
check) and the task's expected actions as `expected_calls` (writes; reads may be omitted).
For every match mode and argument mode, with and without the read-only tools ignored,
prints Cohen's kappa of `passed` against the reward, and the agreement. The baseline the
dataset records (exact match of the expected actions) is kappa 0.32.

    python bench/trajectory_taubench.py [PATH]
"""

from __future__ import annotations

import sys
from itertools import product
from pathlib import Path

from sklearn.metrics import cohen_kappa_score

from judge import Match, check, load_cases

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets"
DEFAULT = DATA / "taubench_airline_gpt4o.jsonl"
# The airline domain's tools that change nothing in the database.
READ_ONLY = (
    "get_user_details",
    "get_reservation_details",
    "search_direct_flight",
    "search_onestop_flight",
    "list_all_airports",
    "calculate",
    "think",
)


def main(path: Path) -> None:
    cases = load_cases(str(path))
    rewards = [case.meta["reward"] == 1.0 for case in cases]
    baseline = [bool(case.meta.get("baseline_exact_action_match")) for case in cases]
    print(f"{len(cases)} trajectories, {sum(rewards)} rewarded")
    print(f"{'dataset baseline (exact action match)':44} kappa {kappa(baseline, rewards):+.3f}")
    print(f"{'mode':10} {'args':9} {'reads':8} {'kappa':>7} {'agree':>6} {'pass':>5}")
    rows = []
    for mode, args, ignore in product(
        ("strict", "unordered", "subset", "superset"),
        ("exact", "superset", "subset", "ignore"),
        (False, True),
    ):
        match = Match.model_validate(
            {"mode": mode, "args": args, "ignore_tools": READ_ONLY if ignore else ()}
        )
        passed = [bool(r.passed) for r in check(cases, match=match)]
        k = kappa(passed, rewards)
        agree = sum(p == r for p, r in zip(passed, rewards, strict=True)) / len(rewards)
        rows.append((k, mode, args, ignore))
        reads = "ignored" if ignore else "counted"
        print(f"{mode:10} {args:9} {reads:8} {k:+7.3f} {agree:6.1%} {sum(passed):5d}")
    best = max(rows)
    print(
        f"best: --match {best[1]} --args-match {best[2]}"
        + (" with reads ignored" if best[3] else "")
        + f": kappa {best[0]:.3f}"
    )


def kappa(a: list[bool], b: list[bool]) -> float:
    return float(cohen_kappa_score(a, b)) if len(set(a)) > 1 or len(set(b)) > 1 else 0.0


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
