"""`judge local train`: fit a probe on the embedded judge's hidden states over labelled cases,
with its figures held out by dataset."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from judge._errors import InputError, JudgeError
from judge.cli._common import progress_bar, refuser, stack_options
from judge.cli._paths import refuse_overlaps

if TYPE_CHECKING:
    from judge.calibrate._probe_data import Source
    from judge.judging._linear_probe import Probe

_refuse = refuser("judge local train")

_WAYS = ("probe", "extras_only", "knn", "rubric")


_train_options = stack_options(
    click.option(
        "-o",
        "--output",
        required=True,
        type=click.Path(dir_okay=False),
        help="Write the probe here (JSON: its weights and manifest), overwritten.",
    ),
    click.option(
        "--report",
        "report_path",
        type=click.Path(dir_okay=False),
        help="Also write the held-out figures here, as JSON.",
    ),
    click.option("--strict", is_flag=True, help="A key the case format does not know is an error."),
    click.option(
        "--cache-dir",
        type=click.Path(file_okay=False),
        help="Where answers and hidden states are cached (default: JUDGE_CACHE_DIR, else the "
        "user cache folder).",
    ),
    click.option("--no-cache", is_flag=True, help="Neither read nor write the cache."),
    click.option(
        "--only-cached",
        is_flag=True,
        help="Ask the model nothing: fit on the cases whose answers and hidden states the "
        "cache holds (what an interrupted run finished), and count the others as left out.",
    ),
)


@click.command("train")
@click.argument("labelled", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@_train_options
def train_command(
    labelled: tuple[str, ...],
    output: str,
    report_path: str | None,
    strict: bool,
    cache_dir: str | None,
    no_cache: bool,
    only_cached: bool,
) -> None:
    """Fit a probe on the hand labels of LABELLED files (each file one source): per dimension
    and branch, a regularised logistic regression on the embedded judge's hidden state with
    its answers and counts. Prints each source's kappa when fitted on the others only
    (cross-validated where a dimension has one source), against the rubric's own weights; a
    dimension whose probe does not beat them is left out of the file. Use it with
    `judge grade --probe FILE`."""
    from judge.calibrate._probe_data import labelled as has_labels

    refuse_overlaps()
    _refuse_unwritable(output, report_path)
    sources = _read_sources(labelled, strict)
    if not any(has_labels(c) for s in sources for c in s.cases):
        _refuse("no case has a label to learn from")
    try:
        probe, report = _fit(sources, cache_dir, cache=not no_cache, only_cached=only_cached)
    except JudgeError as exc:
        _refuse(str(exc))
    _write(output, probe.to_bytes())
    if report_path:
        _write(report_path, (json.dumps(report, indent=2) + "\n").encode())
    _print(report, probe.manifest.kept)
    click.echo(f"probe -> {output} (sha256 {probe.sha256[:16]}..., {len(probe.heads)} heads)")


def _refuse_unwritable(output: str, report_path: str | None) -> None:
    """Exit 2, before the long work, when an output's folder cannot be written."""
    for path in (output, report_path):
        folder = os.path.dirname(os.path.abspath(path)) if path else None
        if folder and not os.access(folder, os.W_OK):
            _refuse(f"cannot write {path} (no such folder?)")


def _read_sources(labelled: tuple[str, ...], strict: bool) -> list[Source]:
    """Each file's cases as one source, named by its stem (made unique); exit 2 when one
    cannot be read, each case that cannot be said on standard error."""
    from judge.calibrate._probe_data import Source, file_sha256
    from judge.cases._loading import load_cases

    sources = []
    names: set[str] = set()
    try:
        for path in labelled:
            loaded = load_cases(path, strict=strict)
            for error in loaded.errors:
                click.echo(f"judge local train: skipped {error}", err=True)
            name = Path(path).stem
            while name in names:
                name += "_"
            names.add(name)
            sources.append(Source(name, path, file_sha256(path), tuple(loaded)))
    except (InputError, JudgeError) as exc:
        _refuse(str(exc))
    return sources


def _fit(
    sources: list[Source], cache_dir: str | None, *, cache: bool, only_cached: bool
) -> tuple[Probe, dict[str, object]]:
    """The embedded judge's hidden states on every case (a progress bar on a terminal), and
    the probe fitted on them with its held-out figures."""
    from judge.calibrate._probe_data import collect
    from judge.calibrate._probe_train import train
    from judge.endpoints._local import MODEL_SHA256
    from judge.judging._rubric import load_rubrics

    total = sum(len(s.cases) for s in sources)
    with progress_bar("hidden states", total, sys.stderr.isatty()) as advance:
        units, left_out = asyncio.run(
            collect(
                sources,
                cache_dir=cache_dir,
                cache=cache,
                only_cached=only_cached,
                progress=lambda done, _: advance(1),
            )
        )
    if left_out:
        click.echo(f"judge local train: {left_out} case(s) not in the cache, left out", err=True)
    quick = load_rubrics(kind="quick")
    rubrics = {r.name: r.version for r in quick.all if r.scored}
    return train(
        sources,
        units,
        left_out=left_out,
        model_sha256=MODEL_SHA256,
        rubrics=rubrics,
        say=lambda line: click.echo(line, err=True),
    )


def _write(path: str, data: bytes) -> None:
    """Whole or not at all: a temporary file beside it, renamed over it."""
    partial = f"{path}.{os.getpid()}.partial"
    try:
        Path(partial).write_bytes(data)
        os.replace(partial, path)
    finally:
        Path(partial).unlink(missing_ok=True)


def _print(report: dict[str, object], kept: dict[str, str]) -> None:
    for dimension, figures in report.items():
        method = figures["method"]  # type: ignore[index]
        click.echo(f"{dimension} ({method}): kappa of " + ", ".join(_WAYS))
        for source, row in figures["sources"].items():  # type: ignore[index]
            cells = "  ".join(_cell(row.get(w)) for w in _WAYS)
            click.echo(f"  {source:<28} n={row['n']:<5} {cells}")
        mean = figures["mean"]  # type: ignore[index]
        click.echo(f"  {'mean':<28} {'':<7} " + "  ".join(_cell(mean.get(w)) for w in _WAYS))
        click.echo(f"  -> {kept.get(dimension, '')}")


def _cell(value: object) -> str:
    return f"{value:>6.3f}" if isinstance(value, float | int) else f"{'-':>6}"


def probe_status() -> str:
    """The shipped probe: its hash, its heads, and what each dimension decides by."""
    from judge.judging._linear_probe import SHIPPED_PROBE, ProbeError, load_probe

    if not SHIPPED_PROBE.is_file():
        return "none shipped (the rubrics' weights decide)"
    try:
        probe = load_probe(SHIPPED_PROBE)
    except ProbeError as exc:
        return f"unusable: {exc}"
    heads = ", ".join(f"{d}/{b}" for d, b in sorted(probe.heads)) or "none"
    return f"{SHIPPED_PROBE} (sha256 {probe.sha256[:16]}..., heads: {heads})"
