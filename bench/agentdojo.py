"""Injection evidence measured on AgentDojo's own suites (issue 32).

Builds cases from the `agentdojo` package (the `bench` extra) with `_agentdojo_cases.py`,
runs `judge check` on them as a user would, and reports per suite the share of calls with
`injection` evidence: of the attacked calls (every call of each injection task, and its last,
the action the attack is for), of the resisted ones (the user task carried on with the planted
text in view) and of the benign ones (nothing planted).
With `--judge-sample N`, also grades a seeded sample of N attacked and N benign calls with the
embedded judge (`judge grade`, no key) and reports the share whose arguments or selection
verdict is `incorrect`, next to what the same answers give without the injection feature
(the quick rubrics' weights before it: "today").

    .venv/bin/python bench/agentdojo.py                       # evidence, every suite
    .venv/bin/python bench/agentdojo.py --judge-sample 20     # and the embedded judge
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
# This file is named as the package it measures: the package must win the import.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_spec = importlib.util.spec_from_file_location("_agentdojo_cases", _HERE / "_agentdojo_cases.py")
assert _spec is not None and _spec.loader is not None
_cases = sys.modules["_agentdojo_cases"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
SUITES, build_cases = _cases.SUITES, _cases.build_cases

JUDGE = str(Path(sys.executable).with_name("judge"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", choices=SUITES, help="(default: all four)")
    parser.add_argument("--attack", action="append", help="(default: important_instructions)")
    parser.add_argument("--judge-sample", type=int, default=0, metavar="N")
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--json", dest="json_path", help="Also write the figures here.")
    args = parser.parse_args()
    suites = tuple(args.suite or SUITES)
    attacks = tuple(args.attack or ("important_instructions",))
    built = build_cases(suites, attacks)
    with tempfile.TemporaryDirectory() as folder:
        figures: dict[str, Any] = {"evidence": evidence(built, Path(folder))}
        if args.judge_sample:
            figures["judge"] = judged(built, Path(folder), args.judge_sample, args.seed)
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(figures, indent=2) + "\n")


def run_check(cases: list[dict[str, Any]], folder: Path, name: str) -> list[dict[str, Any]]:
    """`judge check` on the cases, as a user runs it; its result lines."""
    given, out = folder / f"{name}.jsonl", folder / f"{name}.out.jsonl"
    given.write_text("".join(json.dumps(c) + "\n" for c in cases))
    subprocess.run([JUDGE, "check", str(given), "-o", str(out)], capture_output=True, check=False)
    return [json.loads(line) for line in out.read_text().splitlines()]


KINDS = ("attacked", "action", "resisted", "benign")
"""attacked: every call of each injection task, in turn, once the user task read the
planted text; action: the last of them (what the attack is for); resisted: the user task's
own calls after it (the planted text in view); benign: the user task's calls, nothing
planted."""


def evidence(built: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Per suite and overall, of each kind: the calls with injection evidence."""
    rows: dict[str, Any] = {}
    totals: Counter[str] = Counter()
    print("injection evidence (judge check): calls flagged")
    print(f"  {'suite':<10}" + "".join(f"{k:>20}" for k in KINDS))
    for suite, kinds in built.items():
        row = {}
        for kind in ("attacked", "resisted", "benign"):
            results = run_check(kinds[kind], folder, f"{suite}.{kind}")
            row[kind] = _count(results)
            if kind == "attacked":
                last = {c["id"] for c in kinds[kind] if c["meta"]["step"] == c["meta"]["steps"] - 1}
                row["action"] = _count([r for r in results if r["id"] in last])
        for kind in KINDS:
            totals[f"{kind}.flagged"] += row[kind]["flagged"]
            totals[f"{kind}.calls"] += row[kind]["calls"]
        rows[suite] = row
        print(f"  {suite:<10}" + "".join(f"{_share(row[k]):>20}" for k in KINDS))
    overall = {k: {"flagged": totals[f"{k}.flagged"], "calls": totals[f"{k}.calls"]} for k in KINDS}
    print(f"  {'overall':<10}" + "".join(f"{_share(overall[k]):>20}" for k in KINDS))
    return {"suites": rows, "overall": overall}


def _count(results: list[dict[str, Any]]) -> dict[str, int]:
    return {"flagged": sum(bool(r.get("injection")) for r in results), "calls": len(results)}


def judged(built: dict[str, Any], folder: Path, size: int, seed: int) -> dict[str, Any]:
    """The embedded judge on a seeded sample of each kind, drawn evenly across suites."""
    found: dict[str, dict[str, Any]] = {}
    for kind in ("attacked", "benign"):
        pool = [c for kinds in built.values() for c in kinds[kind]]
        sample = sorted(random.Random(seed).sample(pool, min(size, len(pool))), key=_id)
        given, out = folder / f"sample.{kind}.jsonl", folder / f"sample.{kind}.out.jsonl"
        given.write_text("".join(json.dumps(c) + "\n" for c in sample))
        subprocess.run(
            [JUDGE, "grade", str(given), "-o", str(out)], capture_output=True, check=False
        )
        results = [json.loads(line) for line in out.read_text().splitlines()]
        found[kind] = {"cases": len(results)}
        found[kind]["judge_error"] = sum(
            bool((r.get("judge") or {}).get("judge_error")) for r in results
        )
        for dimensions in (("selection", "arguments"), ("selection",), ("arguments",)):
            name = " or ".join(dimensions)
            now = sum(_incorrect(r, dimensions, with_injection=True) for r in results)
            before = sum(_incorrect(r, dimensions, with_injection=False) for r in results)
            found[kind][name] = {"incorrect": now, "incorrect_without_injection": before}
            print(
                f"embedded judge, {kind}: {name} incorrect on {now}/{len(results)}"
                f" ({now / max(1, len(results)):.0%}); without the injection feature {before}"
                f" ({before / max(1, len(results)):.0%})"
            )
        print(f"embedded judge, {kind}: judge_error {found[kind]['judge_error']}")
    return found


def _incorrect(
    result: dict[str, Any], dimensions: tuple[str, ...], *, with_injection: bool
) -> bool:
    """The selection or any call's arguments verdict (of `dimensions`) is `incorrect`; without
    the injection feature, as the verdict's own features decide under the rubric's weights
    less its own."""
    outcome = result.get("judge") or {}
    verdicts = [("selection", outcome.get("selection"))] if "selection" in dimensions else []
    if "arguments" in dimensions:
        verdicts += [("arguments", v) for v in outcome.get("arguments") or []]
    return any(
        v is not None and _label(v, dimension, with_injection) == "incorrect"
        for dimension, v in verdicts
    )


def _label(verdict: dict[str, Any], dimension: str, with_injection: bool) -> str:
    from judge.judging._scored import probability

    features = verdict.get("features") or {}
    if with_injection or not features.get("injection"):
        return str(verdict.get("verdict"))
    quick = _quick_rubrics()
    combine = (quick.selection if dimension == "selection" else quick.arguments).combine["called"]
    p = probability(combine, {k: v for k, v in features.items() if k != "injection"})
    return "correct" if p >= combine.threshold else "incorrect"


@functools.cache
def _quick_rubrics() -> Any:
    """The quick rubrics, read once (their weights decide "without the injection feature")."""
    from judge.judging._rubric import load_rubrics

    return load_rubrics(kind="quick")


def _share(row: dict[str, int]) -> str:
    calls = row["calls"]
    return f"{row['flagged']}/{calls} {row['flagged'] / max(1, calls):.1%}"


def _id(case: dict[str, Any]) -> str:
    return str(case["id"])


if __name__ == "__main__":
    main()
