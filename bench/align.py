"""What `judge align` (issue 54) gains held out, as a user would run it within one
distribution: per source, 150 labelled cases, 5 outer folds, the embedded judge.

    python bench/align.py collect [--cache DIR] [--n 150] [--sources a,b] [--candidates ...]
    python bench/align.py measure [--cache DIR] [--json FILE] [--markdown FILE]

`collect` writes, per source, DIR/<source>.cases.jsonl: n cases drawn seeded (seed 54; a smaller
n is a prefix of a larger one's draw) from ../shared/datasets/ (When2Call, BFCL single-turn,
ACEBench: each labels selection and arguments), their expected calls and behaviour taken out so
that the judge decides every case as on production traffic, the labels and any `meta.label_note`
kept. Each source has its labelling rule written as a user would write it
(bench/align_policies/<source>.md, from the dataset's own rule). Then, niced, per source, the
fitting `judge align <cases> --policy <policy> --model local --judge-broken --candidates
base,weights,probe,policy,examples,examples+policy --folds 5` runs (in-process, through the
command's own parts, so that each grading is timed and its usage counted: the command prints
neither). It writes DIR/<source>.aligned.json (the spec, its `measured` figures per dimension)
and appends a line per grading to DIR/<source>.gradings.jsonl: the candidate, the cases, those
the judge asked about (not answered from its disk cache, DIR/judge-cache), the seconds, the
requests and prompt tokens, and those the server's prompt cache served. A rerun asks nothing
already answered, and a source whose spec was written with the same n, folds and candidates is
skipped.

`measure` reads the specs and the gradings and prints, per source and dimension, the labels,
the base's held-out kappa with its interval, each candidate's held-out kappa, the nested
"after" kappa with its interval (every outer fold graded with the candidate the inner
cross-validation on the other folds chose: figures on folds the choice did not see), the lift,
the choice; each candidate's seconds per asked case and the share of its prompt tokens the
prompt cache served; then the issue's targets, each met, missed or not yet measured.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT.parent / "shared" / "datasets"
POLICIES = Path(__file__).resolve().parent / "align_policies"
SOURCES = {
    "when2call": DATASETS / "when2call.jsonl",
    "bfcl_single_turn": DATASETS / "bfcl_single_turn.jsonl",
    "acebench": DATASETS / "acebench.jsonl",
}
"""The sources measured by default: each labels selection and arguments."""
OPTIONAL = {"sample": ROOT / "calibration" / "sample.jsonl"}
"""Only when named: the project's hand-labelled sample (its labels chose the embedded judge's
questions and weights, so its base figures flatter)."""
SEED = 54
N = 150
FOLDS = 5
CANDIDATES = "base,weights,probe,policy,examples,examples+policy"
STRIPPED = ("expected_calls", "expected_behavior", "match", "expected_state", "reference")
CACHE = Path.home() / ".cache" / "tool-call-judge" / "bench-align"
TARGET_LIFT = 0.10
WORST_DROP = 0.03
COST_RATIO = 1.5
SPENT = ("startup_s", "requests", "prompt_tokens", "cached_prompt_tokens", "judge_error")


def collect(cache: Path, n: int, sources: list[str], candidates: str, folds: int) -> None:
    """Write each source's cases and fit it (a source fitted already with these settings is
    skipped; the judge's disk cache answers what an interrupted run asked)."""
    cache.mkdir(parents=True, exist_ok=True)
    for source in sources:
        cases = prepare(cache, source, n)
        if _fitted(cache, source, n, candidates, folds):
            print(f"{source}: fitted already ({cache / f'{source}.aligned.json'})")
            continue
        command = [
            "nice", "-n", "19", sys.executable, __file__, "fit", str(cases), "--source", source,
            "--cache", str(cache), "--candidates", candidates, "--folds", str(folds),
        ]  # fmt: skip
        print(f"{source}: fitting {n} cases ({candidates}, {folds} folds)", flush=True)
        subprocess.run(command, check=True)


def prepare(cache: Path, source: str, n: int) -> Path:
    """DIR/<source>.cases.jsonl: n cases of the source, drawn seeded (a prefix of one seeded
    order), stripped of what would decide for the judge; kept if it holds these n already."""
    path = cache / f"{source}.cases.jsonl"
    lines = _source_path(source).read_text().splitlines()
    order = list(range(len(lines)))
    random.Random(SEED).shuffle(order)
    rows = [_stripped(json.loads(lines[i]), source) for i in sorted(order[:n])]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if path.exists() and path.read_text() != text:
        raise SystemExit(f"{path} holds other cases (another --n?): remove it, or another --cache")
    path.write_text(text)
    return path


def _source_path(source: str) -> Path:
    path = {**SOURCES, **OPTIONAL}.get(source)
    if path is None:
        known = ", ".join([*SOURCES, *OPTIONAL])
        raise SystemExit(f"unknown source {source!r}: choose among {known}")
    if not path.exists():
        raise SystemExit(f"{path}: missing (the shared datasets sit next to the project)")
    return path


def _stripped(row: dict[str, Any], source: str) -> dict[str, Any]:
    for key in STRIPPED:
        row.pop(key, None)
    meta = row.get("meta")  # a label_note in it stays
    row["meta"] = {**(meta if isinstance(meta, dict) else {}), "bench_source": source}
    if "id" not in row:
        raise SystemExit(f"{source}: a case without an id")
    return row


def _fitted(cache: Path, source: str, n: int, candidates: str, folds: int) -> bool:
    if not (cache / f"{source}.aligned.json").exists():
        return False
    ends = [e for e in _log(cache, source) if e.get("event") == "end"]
    return bool(ends) and (ends[-1]["n"], ends[-1]["candidates"], ends[-1]["folds"]) == (
        n, candidates, folds
    )  # fmt: skip


def _log(cache: Path, source: str) -> list[dict[str, Any]]:
    path = cache / f"{source}.gradings.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def fit(cases: Path, source: str, cache: Path, candidates: str, folds: int) -> None:
    """`judge align` on the cases, through the command's own parts, each grading timed and
    its usage logged (run niced by `collect`)."""
    from judge.calibrate._align import fit_alignment
    from judge.calibrate._align_probe import probe_source
    from judge.cases._case import Case
    from judge.checks._judge_summary import JudgeSummary
    from judge.checks._result import CaseResult
    from judge.cli._align import _candidates, _labelled, _print, align_command, read_policy
    from judge.cli._judge_options import make_judge
    from judge.judging._aligned import AlignedSpec

    output, policy = cache / f"{source}.aligned.json", POLICIES / f"{source}.md"
    argv = [
        str(cases), "-o", str(output), "--policy", str(policy), "--model", "local",
        "--judge-broken", "--cache-dir", str(cache / "judge-cache"),
        "--candidates", candidates, "--folds", str(folds),
    ]  # fmt: skip
    params = align_command.make_context("align", argv).params
    own = ("labelled", "output", "policy", "folds", "k", "candidates", "fold_seed")
    options = {k: v for k, v in params.items() if k not in own}
    chosen = _candidates(params["candidates"], True)
    labelled = _labelled((str(cases),))
    policy_text = read_policy(str(policy))
    options["answers"] = any(c.labels is not None and c.labels.answer is not None for c in labelled)
    log = (cache / f"{source}.gradings.jsonl").open("a")
    run = time.strftime("%Y-%m-%dT%H:%M:%S")
    log.write(json.dumps({"event": "start", "run": run}) + "\n")
    log.flush()
    began = time.monotonic()

    async def grader(spec: AlignedSpec | None, some: list[Case]) -> list[CaseResult]:
        started = time.monotonic()
        async with make_judge({**options, "aligned": spec}) as judge:
            ready = time.monotonic()
            results = list(await judge.grade(some))
            done = time.monotonic()
        summary = JudgeSummary()
        for result in results:
            if result.judge is not None:
                summary.add(result.judge)
        asked = sum(r.judge is not None and r.judge.usage.requests > 0 for r in results)
        entry = {
            "event": "grading", "run": run, "candidate": _candidate(spec), "cases": len(some),
            "asked": asked, "startup_s": round(ready - started, 3),
            "seconds": round(done - ready, 3), "requests": summary.requests,
            "cached_answers": summary.cached, "prompt_tokens": summary.prompt_tokens,
            "cached_prompt_tokens": summary.cached_prompt_tokens,
            "completion_tokens": summary.completion_tokens,
            "judge_error": summary.status["judge_error"],
        }  # fmt: skip
        log.write(json.dumps(entry) + "\n")
        log.flush()
        return results

    async def aligned() -> Any:
        async with make_judge(options) as judge:  # what `weights` and `probe` start from
            defaults = judge.decision_defaults()
            probe = probe_source(lambda: make_judge(options), judge)
        if probe is not None:  # the hidden states' reading timed as a grading is
            probe = dataclasses.replace(probe, hidden=timed(probe.hidden))
        return await fit_alignment(
            labelled, grader, policy=policy_text, folds=params["folds"], k=params["k"],
            seed=params["fold_seed"], candidates=chosen, defaults=defaults, probe=probe,
        )  # fmt: skip

    def timed(hidden: Any) -> Any:
        async def reading(some: list[Case]) -> Any:
            started = time.monotonic()
            found = await hidden(some)
            log.write(json.dumps({
                "event": "hidden", "run": run, "cases": len(some),
                "read": sum(h is not None for h in found),
                "seconds": round(time.monotonic() - started, 3),
            }) + "\n")  # fmt: skip
            log.flush()
            return found

        return reading

    fitted = asyncio.run(aligned())
    output.write_text(fitted.spec.model_dump_json(indent=2) + "\n")
    log.write(json.dumps({
        "event": "end", "run": run, "wall_s": round(time.monotonic() - began, 1),
        "n": len(labelled), "candidates": candidates, "folds": folds,
    }) + "\n")  # fmt: skip
    log.close()
    _print(fitted, str(output))


def _candidate(spec: Any) -> str:
    """Which candidate a spec being measured is (from what its dimensions add)."""
    if spec is None:
        return "base"
    found = [a for a in spec.dimensions.values() if a.choice != "base"]
    shown = "nearest" if any(a.nearest for a in found) else "examples"
    examples = shown if any(a.uses_examples for a in found) else None
    policy = "policy" if any(a.uses_policy for a in found) else None
    return "+".join(p for p in (examples, policy) if p) or "base"


def costs(cache: Path, source: str) -> dict[str, dict[str, float | None]]:
    """Per candidate: seconds per case the judge was asked about (gradings answered wholly
    from the disk cache left out), prompt tokens a request and the prompt cache's share."""
    sums: dict[str, dict[str, float]] = {}
    for entry in _log(cache, source):
        if entry.get("event") != "grading":
            continue
        total = sums.setdefault(
            entry["candidate"], dict.fromkeys(("asked", "seconds", *SPENT), 0.0)
        )
        if entry["asked"]:
            total["asked"] += entry["asked"]
            total["seconds"] += entry["seconds"]
        for key in SPENT:
            total[key] += entry[key]
    return {
        name: {
            "asked": t["asked"],
            "seconds_per_case": t["seconds"] / t["asked"] if t["asked"] else None,
            "startup_s": t["startup_s"],
            "requests": t["requests"],
            "prompt_tokens_per_request": t["prompt_tokens"] / max(t["requests"], 1),
            "prompt_cache_share": (
                t["cached_prompt_tokens"] / t["prompt_tokens"] if t["prompt_tokens"] else None
            ),
            "judge_error": t["judge_error"],
        }
        for name, t in sums.items()
    }


def measure(cache: Path, only: list[str] | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {"sources": {}, "targets": {}}
    for spec_path in sorted(cache.glob("*.aligned.json")):
        source = spec_path.name.removesuffix(".aligned.json")
        if only and source not in only:
            continue
        spec = json.loads(spec_path.read_text())
        ends = [e for e in _log(cache, source) if e.get("event") == "end"]
        entry: dict[str, Any] = {
            "wall_s": sum(e["wall_s"] for e in ends),
            "n": ends[-1]["n"] if ends else None,
            "costs": costs(cache, source),
            "dimensions": {},
        }
        for dimension, found in spec["dimensions"].items():
            measured = found.get("measured") or {}
            if not measured:
                entry["dimensions"][dimension] = {"choice": found["choice"], "why": found["why"]}
                continue
            before, after = measured["before"]["kappa"], measured["after"]["kappa"]
            nested = None if before is None or after is None else after - before
            entry["dimensions"][dimension] = {
                "labels": measured["labels"],
                "before": measured["before"],
                "after": measured["after"],
                # what the user gets: the base judge where the command kept it, else the
                # nested figure of the candidates it chose from
                "lift": 0.0 if found["choice"] == "base" and nested is not None else nested,
                "nested_lift": nested,
                "candidates": measured["candidates"],
                "choice": found["choice"] + (" (nearest)" if found.get("nearest") else ""),
                "chosen_per_fold": measured["chosen_per_fold"],
            }
        report["sources"][source] = entry
    report["targets"] = targets(report["sources"])
    return report


def targets(sources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The issue's targets, each met, missed or not yet measured (on every default source)."""
    missing = [s for s in SOURCES if s not in sources]
    pending = f"not yet measured ({', '.join(missing)} to collect)" if missing else None
    found: dict[str, dict[str, Any]] = {}
    for dimension in ("selection", "arguments"):
        lifts = [
            e["dimensions"][dimension]["lift"] for e in sources.values()
            if e["dimensions"].get(dimension, {}).get("lift") is not None
        ]  # fmt: skip
        mean = sum(lifts) / len(lifts) if lifts else None
        status = "not yet measured" if mean is None else "met" if mean >= TARGET_LIFT else "missed"
        found[f"mean {dimension} lift >= +{TARGET_LIFT:.2f}"] = {
            "value": mean, "shown": _number(mean, "+.3f") + f" ({len(lifts)} sources)",
            "status": pending or status,
        }  # fmt: skip
    drops = [
        d["lift"] for e in sources.values() for d in e["dimensions"].values()
        if d.get("lift") is not None
    ]  # fmt: skip
    worst = min(drops) if drops else None
    status = "not yet measured" if worst is None else "met" if worst >= -WORST_DROP else "missed"
    found[f"no source and dimension worse by more than {WORST_DROP:.2f}"] = {
        "value": worst, "shown": "worst " + _number(worst, "+.3f"), "status": pending or status
    }  # fmt: skip
    ratios = [r for e in sources.values() if (r := cost_ratio(e)) is not None]
    worst_ratio = max(ratios) if ratios else None
    status = (
        "not yet measured" if worst_ratio is None
        else "met" if worst_ratio <= COST_RATIO else "missed"
    )  # fmt: skip
    found[f"seconds per case at most {COST_RATIO}x the base's"] = {
        "value": worst_ratio, "shown": "dearest " + _number(worst_ratio, ".2f") + "x",
        "status": pending or status,
    }  # fmt: skip
    return found


def cost_ratio(entry: dict[str, Any]) -> float | None:
    """The chosen candidates' seconds per asked case against the base's (the dearest chosen:
    a spec that aligns two dimensions differently was not timed as a whole); 1.0 where every
    dimension kept the base. `weights` and `probe` ask what the base asks: the base's cost."""
    costs_of = entry["costs"]
    base = costs_of.get("base", {}).get("seconds_per_case")
    chosen = {d["choice"].replace(" (nearest)", "") for d in entry["dimensions"].values()}
    chosen -= {"base", "weights", "probe"}
    if not base:
        return None
    seconds = [costs_of.get(c, {}).get("seconds_per_case") for c in chosen]
    if any(s is None for s in seconds):
        return None
    return max((s / base for s in seconds if s is not None), default=1.0)


def _shown(held: dict[str, Any] | None, interval: bool = True) -> str:
    if not held or held.get("kappa") is None:
        return "n/a"
    if not interval or held.get("ci_low") is None:
        return f"{held['kappa']:.2f}"
    return f"{held['kappa']:.2f} [{held['ci_low']:.2f}, {held['ci_high']:.2f}]"


def _number(value: float | None, form: str) -> str:
    return "n/a" if value is None else format(value, form)


def markdown(report: dict[str, Any]) -> str:
    """The measured tables: kappa per source and dimension, the costs, the targets."""
    names = [c for c in ("base", "weights", "probe", "policy", "examples", "examples+policy",
                         "nearest", "nearest+policy")
             if any(c in d.get("candidates", {}) for e in report["sources"].values()
                    for d in e["dimensions"].values())]  # fmt: skip
    head = ["source / dimension", "labels", "base, held out", *names[1:], "after (nested)",
            "nested lift", "chosen", "lift kept", "chosen per outer fold"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for source, entry in report["sources"].items():
        for dimension, d in entry["dimensions"].items():
            if "labels" not in d:
                lines.append(f"| {source}/{dimension} | | | " + "| " * len(names[1:])
                             + f"| | {d['choice']} | | {d['why']} |")  # fmt: skip
                continue
            cells = [
                _shown(d["candidates"][c], interval=False) if c in d["candidates"] else "not run"
                for c in names[1:]
            ]
            lines.append(
                f"| {source}/{dimension} | {d['labels']} | {_shown(d['before'])} | "
                + "".join(f"{c} | " for c in cells)
                + f"{_shown(d['after'])} | {_number(d['nested_lift'], '+.2f')} | {d['choice']} | "
                + f"{_number(d['lift'], '+.2f')} | {', '.join(d['chosen_per_fold'])} |"
            )
    lines += ["", "| source | cases | cases asked, every candidate | wall (fitting runs) |"]
    lines.append("|---|---|---|---|")
    for source, entry in report["sources"].items():
        asked = sum(c["asked"] for c in entry["costs"].values())
        lines.append(f"| {source} | {entry['n']} | {asked:.0f} | {entry['wall_s'] / 60:.1f} min |")
    lines += [
        "",
        "| source | candidate | cases asked | s per case | x base | prompt tokens a request "
        "| served by the prompt cache | judge_error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for source, entry in report["sources"].items():
        base = entry["costs"].get("base", {}).get("seconds_per_case")
        for name, c in entry["costs"].items():
            ratio = c["seconds_per_case"] / base if base and c["seconds_per_case"] else None
            lines.append(
                f"| {source} | {name} | {c['asked']:.0f} | {_number(c['seconds_per_case'], '.2f')}"
                f" | {_number(ratio, '.2f')} | {_number(c['prompt_tokens_per_request'], ',.0f')}"
                f" | {_number(c['prompt_cache_share'], '.0%')} | {c['judge_error']:.0f} |"
            )
    lines += ["", "| target | value | status |", "|---|---|---|"]
    for name, t in report["targets"].items():
        lines.append(f"| {name} | {t['shown']} | {t['status']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("collect", "measure", "fit"))
    parser.add_argument("cases", nargs="?", type=Path, help="fit only: the cases file")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--n", type=int, default=N, help="Cases drawn per source.")
    parser.add_argument("--sources", default=",".join(SOURCES),
                        help=f"A comma list (also: {', '.join(OPTIONAL)}).")  # fmt: skip
    parser.add_argument("--source", help="fit only: the source's name")
    parser.add_argument("--candidates", default=CANDIDATES)
    parser.add_argument("--folds", type=int, default=FOLDS)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path, help="Also write the tables here.")
    args = parser.parse_args(argv)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    if args.step == "fit":
        return fit(args.cases, args.source, args.cache, args.candidates, args.folds)
    if args.step == "collect":
        return collect(args.cache, args.n, sources, args.candidates, args.folds)
    report = measure(args.cache, sources if args.sources != ",".join(SOURCES) else None)
    print(markdown(report), end="")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown(report))


if __name__ == "__main__":
    main()
