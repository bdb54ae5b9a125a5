"""Coverage and width of `judge estimate` (issue 53) on real labels with the embedded
judge's real verdicts, and on the same labels with scripted judges of known quality.

    python bench/estimate.py collect [--cache DIR]   # once: niced, resumable, about 2 hours
    python bench/estimate.py measure [--cache DIR] [--reps 2000] [--json FILE]

`collect` writes DIR/cases.jsonl (seeded draws of three sources of ../shared/datasets, with
their expected calls and behaviour taken out, so the judge decides every case as on
production traffic; not the project's sample, whose labels chose the embedded judge's
questions and weights: its figures would flatter) and grades it with `judge grade --model
local` (DIR/graded.jsonl). `measure` then, per source, dimension and n: each repetition
draws a graded set with replacement from its cases (so the source's
own rate is the truth the draws are independent samples of; 10,000 cases, as a user grades
traffic and labels a few), labels n of them (uniformly,
or actively: `judge sample --for-estimate --active`'s probabilities and draw) and computes
the labels-only and the PPI++ intervals of `judge estimate` (`_ppi`), with the verdict as
the prediction and with the calibrated P(correct). The calibration is fitted as `judge
calibrate` fits it (`fit_dimension`), on the other sources only: no figure is reported on
a source its fit saw; the active floor is the one `judge sample` ships, fixed before.
Scripted judges: the same labels, verdicts flipped at random so that kappa is 0.5 or 0.8.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judge.calibrate._estimate import hand_label, prediction
from judge.calibrate._estimate_p import calibrated_p
from judge.calibrate._fit import Fitted
from judge.calibrate._for_estimate import (
    draw_for_estimate,
    inclusion_probabilities,
    wrong_chance,
)
from judge.calibrate._ppi import labels_only, ppi_mean
from judge.calibrate._record import fit_dimension
from judge.cases._case import Case
from judge.checks._result import CaseResult
from judge.judging._probing import decision_defaults
from judge.judging._rubric import load_rubrics

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT.parent / "shared" / "datasets"
SOURCES = {"when2call": 300, "bfcl_single_turn": 260, "acebench": 260}
"""The cases drawn from each source (seed 53)."""
STRIPPED = ("expected_calls", "expected_behavior", "match", "expected_state", "reference")
DIMENSIONS = ("selection", "arguments")
SIZES = (50, 100, 200)
GRADED = 10_000
"""The graded cases of each repetition, drawn with replacement from a source's pool."""
CACHE = Path.home() / ".cache" / "tool-call-judge" / "bench-estimate"


def collect(cache: Path) -> None:
    """Write the cases and grade them (resuming what is graded already)."""
    cache.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, n in SOURCES.items():
        lines = (DATASETS / f"{name}.jsonl").read_text().splitlines()
        for index in sorted(random.Random(53).sample(range(len(lines)), n)):
            rows.append(_stripped(json.loads(lines[index]), name))
    cases = cache / "cases.jsonl"
    if not cases.exists():
        cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    judge = [sys.executable, "-m", "judge", "grade", str(cases), "--model", "local"]
    command = ["nice", "-n", "19", *judge, "--judge-broken", "-o", str(cache / "graded.jsonl")]
    subprocess.run(command, check=True)


def _stripped(row: dict[str, object], source: str) -> dict[str, object]:
    for key in STRIPPED:
        row.pop(key, None)
    meta = row.get("meta") if isinstance(row.get("meta"), dict) else {}
    row["meta"] = {**meta, "bench_source": source}  # type: ignore[dict-item]
    return row


@dataclass(frozen=True)
class Pool:
    """One source's cases on one dimension: the label, the verdict, the calibrated
    P(correct), and the judge's chance of being wrong (what an active draw reads)."""

    y: np.ndarray
    verdict: np.ndarray
    calibrated: np.ndarray
    chance: np.ndarray


def read(cache: Path) -> tuple[dict[str, list[Case]], dict[str, CaseResult]]:
    by_source: dict[str, list[Case]] = {}
    for path in sorted(cache.glob("cases*.jsonl")):
        for line in path.read_text().splitlines():
            case = Case.model_validate_json(line)
            by_source.setdefault(str(case.meta["bench_source"]), []).append(case)
    results = {}
    for path in sorted(cache.glob("graded*.jsonl")):
        for line in path.read_text().splitlines():
            result = CaseResult.model_validate_json(line)
            results[result.id] = result
    return by_source, results


def fitted_without(
    source: str, by_source: dict[str, list[Case]], results: dict[str, CaseResult], dimension: str
) -> Fitted | None:
    """The calibration `judge calibrate` would fit on every other source's labels."""
    cases = [c for s, cs in by_source.items() if s != source for c in cs if c.id in results]
    defaults = decision_defaults(load_rubrics(None, kind="quick"), None).get(dimension, {})
    found = fit_dimension(cases, [results[c.id] for c in cases], dimension, defaults)  # type: ignore[arg-type]
    return None if found is None else found[1]


def pool_of(
    cases: list[Case], results: dict[str, CaseResult], dimension: str, fitted: Fitted | None
) -> Pool | None:
    rows = []
    for case in cases:
        result = results.get(case.id)
        label = hand_label(case, dimension)  # type: ignore[arg-type]
        verdict = None if result is None else prediction(result, dimension)  # type: ignore[arg-type]
        if result is None or label is None or verdict is None:
            continue
        p = calibrated_p(result, dimension, fitted) if fitted is not None else None
        rows.append((label, verdict, verdict if p is None else p, wrong_chance(result)))
    if len(rows) < 60:
        return None
    table = np.array(rows, dtype=float)
    return Pool(table[:, 0], table[:, 1], table[:, 2], table[:, 3])


def scripted(pool: Pool, kappa: float, seed: int) -> np.ndarray:
    """Verdicts that agree with the labels at the rate giving this kappa (symmetric flips)."""
    p = float(pool.y.mean())
    expected = p * p + (1 - p) * (1 - p)  # chance agreement when the verdicts share the rate
    agree = kappa * (1 - expected) + expected
    flips = np.random.default_rng(seed).random(pool.y.size) >= agree
    return np.where(flips, 1 - pool.y, pool.y)


@dataclass
class Tally:
    held: int = 0
    width: float = 0.0
    variance: float = 0.0
    reps: int = 0

    def add(self, low: float, high: float, variance: float, truth: float) -> None:
        self.held += low <= truth <= high
        self.width += high - low
        self.variance += variance
        self.reps += 1

    def row(self, n: int) -> dict[str, float]:
        per_label = n * self.variance / self.reps  # n x the estimate's variance
        return {
            "coverage": self.held / self.reps,
            "width": self.width / self.reps,
            "labels_for_5_points": math.ceil(1.959964**2 * per_label / 0.05**2),
        }


def simulate(
    pool: Pool, predictions: dict[str, np.ndarray], n: int, active: bool, reps: int, seed: int
) -> dict[str, dict[str, float]]:
    """Coverage, mean width and labels needed for +-5 points, labels-only and PPI per
    prediction, over `reps` graded sets of `GRADED` cases drawn from the pool."""
    rng = np.random.default_rng(seed)
    truth, size = float(pool.y.mean()), pool.y.size
    tallies = {"labels_only": Tally(), **{name: Tally() for name in predictions}}
    pi_of = _active_probabilities(pool, n, rng) if active else None
    for rep in range(reps):
        graded = rng.integers(0, size, GRADED)
        if pi_of is not None:
            pi = pi_of[graded]
            chosen = np.array(draw_for_estimate(list(pi), n, seed * 100_000 + rep))
            weights = pi[chosen]
        else:
            chosen, weights = rng.choice(GRADED, n, replace=False), None
        labelled = graded[chosen]
        y = pool.y[labelled]
        found = labels_only(y, 0.95, weights)
        tallies["labels_only"].add(found.low, found.high, found.variance, truth)  # type: ignore[arg-type]
        for name, f in predictions.items():
            powered = ppi_mean(y, f[labelled], f[graded], 0.95, weights)
            tallies[name].add(powered.low, powered.high, powered.variance, truth)  # type: ignore[arg-type]
    return {name: tally.row(n) for name, tally in tallies.items()}


def _active_probabilities(pool: Pool, n: int, rng: np.random.Generator) -> np.ndarray:
    """Each pool case's inclusion probability in an active draw of n from `GRADED` cases, as
    `judge sample --for-estimate --active` sets them (`inclusion_probabilities`) on one
    graded set: the scale they share barely moves between graded sets of this size."""
    graded = rng.integers(0, pool.y.size, GRADED)
    pi = inclusion_probabilities(list(pool.chance[graded]), n)
    found = np.zeros(pool.y.size)
    found[graded] = pi
    return found


def measure(cache: Path, reps: int, only: list[str] | None = None) -> dict[str, object]:
    by_source, results = read(cache)
    report: dict[str, object] = {}
    for source, cases in by_source.items():
        if only and source not in only:
            continue
        for dimension in DIMENSIONS:
            fitted = fitted_without(source, by_source, results, dimension)
            pool = pool_of(cases, results, dimension, fitted)
            if pool is None:
                continue
            predictions = dict(
                zip(
                    PREDICTIONS,
                    (pool.verdict, pool.calibrated, scripted(pool, 0.5, 5), scripted(pool, 0.8, 8)),
                    strict=True,
                )
            )
            entry: dict[str, object] = {
                "cases": int(pool.y.size),
                "rate": float(pool.y.mean()),
                "judge_only_bias": float(pool.verdict.mean() - pool.y.mean()),
                "kappa": _kappa(pool.verdict, pool.y),
                "calibration": None if fitted is None else fitted.method,
            }
            for n in SIZES:
                for active in (False, True):
                    key = f"n={n} {'active' if active else 'uniform'}"
                    entry[key] = simulate(pool, predictions, n, active, reps, seed=n + active)
            report[f"{source}/{dimension}"] = entry
            _print(f"{source}/{dimension}", entry)
    return report


def _kappa(verdict: np.ndarray, y: np.ndarray) -> float:
    observed = float((verdict == y).mean())
    p, q = float(verdict.mean()), float(y.mean())
    expected = p * q + (1 - p) * (1 - q)
    return (observed - expected) / (1 - expected) if expected < 1 else float("nan")


def _print(name: str, entry: dict[str, object]) -> None:
    head = {k: v for k, v in entry.items() if not k.startswith("n=")}
    print(name, json.dumps(head))
    for key, rows in entry.items():
        if key.startswith("n="):
            assert isinstance(rows, dict)
            base = rows["labels_only"]["width"]
            said = ", ".join(
                f"{what} {r['coverage']:.3f} cov, width {r['width'] / base:.2f}x, "
                f"{r['labels_for_5_points']} for +-5"
                for what, r in rows.items()
            )
            print(f"  {key}: {said}")


PREDICTIONS = ("ppi_verdict", "ppi_calibrated", "ppi_kappa_0.5", "ppi_kappa_0.8")


def markdown(report: dict[str, object]) -> str:
    """The measured tables: the sources, then coverage and width per n and draw."""
    lines = [
        "| source / dimension | cases | true rate | judge-only bias | kappa | calibration |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in report.items():
        assert isinstance(entry, dict)
        lines.append(
            f"| {name} | {entry['cases']} | {entry['rate']:.3f} | "
            f"{entry['judge_only_bias']:+.3f} | {entry['kappa']:.2f} | {entry['calibration']} |"
        )
    lines += [
        "",
        "| source / dimension | n, draw | labels only: coverage, width | PPI, verdict | "
        "PPI, calibrated | PPI, kappa 0.5 | PPI, kappa 0.8 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, entry in report.items():
        assert isinstance(entry, dict)
        for key, rows in entry.items():
            if not key.startswith("n="):
                continue
            base = rows["labels_only"]
            cells = [f"{base['coverage']:.3f}, {base['width']:.3f}"]
            cells += [
                f"{rows[p]['coverage']:.3f}, {rows[p]['width'] / base['width']:.2f}x"
                for p in PREDICTIONS
            ]
            lines.append(f"| {name} | {key.removeprefix('n=')} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| source / dimension (n = 100, uniform) | labels only | PPI, verdict | PPI, calibrated "
        "| PPI, kappa 0.5 | PPI, kappa 0.8 |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in report.items():
        assert isinstance(entry, dict)
        rows = entry.get("n=100 uniform")
        if isinstance(rows, dict):
            needed = [str(rows[p]["labels_for_5_points"]) for p in ("labels_only", *PREDICTIONS)]
            lines.append(f"| {name} | " + " | ".join(needed) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("collect", "measure"))
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path, help="Also write the tables here.")
    parser.add_argument("--source", action="append", help="Only this source (repeatable).")
    args = parser.parse_args(argv)
    if args.step == "collect":
        return collect(args.cache)
    report = measure(args.cache, args.reps, args.source)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown(report))


if __name__ == "__main__":
    main()
