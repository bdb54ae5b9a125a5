"""`judge align`: fit an aligned spec (aligned.json) on the user's labelled cases, by nested
cross-validation, and say per dimension what each candidate did held out."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import click

from judge._errors import InputError, JudgeError
from judge.calibrate._align import (
    DEFAULT,
    SIMPLEST_FIRST,
    AlignmentFit,
    Candidate,
    DimensionFit,
    Held,
    fit_alignment,
)
from judge.calibrate._align_folds import refuse_duplicate_ids
from judge.calibrate._align_probe import probe_source
from judge.cases._case import Case
from judge.cases._loading import load_cases
from judge.checks._result import CaseResult
from judge.cli._common import EXIT_ENDPOINT, EXIT_UNREADABLE, progress_bar
from judge.cli._judge_options import judge_options, make_judge
from judge.cli._paths import refuse_overlaps
from judge.endpoints._client import JudgeEndpointError
from judge.judging._aligned import AlignedSpec

MAX_POLICY_CHARS = 8000
"""The longest policy read: it joins every prompt of the dimensions it is chosen for."""


@click.command("align")
@click.argument("labelled", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="Write the aligned spec here (read by --aligned), overwritten.",
)
@click.option(
    "--policy",
    type=click.Path(exists=True, dir_okay=False),
    help="Your labelling rule in your own words (a text or Markdown file): a candidate.",
)
@click.option(
    "--folds",
    type=click.IntRange(min=3),
    default=5,
    show_default=True,
    help="Outer folds of the nested cross-validation (by case, a conversation in one).",
)
@click.option(
    "--k",
    "k",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Labelled examples in the examples and nearest candidates' prompts.",
)
@click.option(
    "--candidates",
    default=",".join(DEFAULT),
    show_default=True,
    help="The candidates measured, a comma list (the base always is; those with policy "
    "only with --policy; probe, the embedded judge's, only when named).",
)
@click.option(
    "--fold-seed",
    type=int,
    default=0,
    show_default=True,
    help="Seeds the folds and the examples drawn (--seed is the judge's own).",
)
@judge_options
def align_command(
    labelled: tuple[str, ...], output: str, policy: str | None, folds: int, k: int,
    candidates: str, fold_seed: int, **options: Any,
) -> None:  # fmt: skip
    """Choose per dimension, by nested cross-validation on the labels of LABELLED, whether
    your policy, labelled examples of your own cases (one fixed set, or the nearest of each
    case), both or neither go into the judge's prompt, or (a scored rubric: the embedded
    judge's) its answers weighed anew on your labels; keep a choice only where it beats the
    base judge held out."""
    refuse_overlaps()
    try:
        if options.get("aligned"):
            raise InputError(
                "--aligned: judge align fits a spec from the base judge; give "
                "the spec it writes to grade, calibrate, run or serve"
            )
        chosen = _candidates(candidates, policy is not None)
        cases = _labelled(labelled)
        policy_text = read_policy(policy) if policy else None
        answers = any(c.labels is not None and c.labels.answer is not None for c in cases)
        options = {**options, "answers": answers}
        make_judge(options)  # its options refused before any request
        _writable(output)  # before the paid grading, not after it
        fitted = asyncio.run(_fit(cases, options, policy_text, folds, k, fold_seed, chosen))
    except JudgeEndpointError as exc:  # a JudgeError too: caught first
        click.echo(f"judge align: {exc}", err=True)
        sys.exit(EXIT_ENDPOINT)
    except (JudgeError, InputError) as exc:
        click.echo(f"judge align: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    Path(output).write_text(fitted.spec.model_dump_json(indent=2) + "\n")
    _print(fitted, output)


def _candidates(given: str, policy: bool) -> list[Candidate]:
    """The candidates named (`InputError` for an unknown one, or one with policy and no
    --policy)."""
    names = [name.strip() for name in given.split(",") if name.strip()]
    unknown = [name for name in names if name not in SIMPLEST_FIRST]
    if unknown or not names:
        raise InputError(
            f"--candidates: {', '.join(map(repr, unknown)) or 'none given'}: choose among "
            f"{', '.join(SIMPLEST_FIRST)}"
        )
    if not policy and given != ",".join(DEFAULT):
        needing = [name for name in names if "policy" in name]
        if needing:
            raise InputError(f"--candidates: {', '.join(needing)} needs --policy")
    return [c for c in SIMPLEST_FIRST if c in names]


def _labelled(paths: tuple[str, ...]) -> list[Case]:
    sources: list[tuple[str, list[Case]]] = []
    for path in paths:
        loaded = load_cases(path)
        for error in loaded.errors:
            click.echo(f"judge align: skipped {error}", err=True)
        sources.append((path, list(loaded)))
    refuse_duplicate_ids(sources)
    return [c for _, cases in sources for c in cases]


def _writable(output: str) -> None:
    """InputError where the spec could not be written once fitted."""
    folder = Path(output).resolve().parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise InputError(f"-o {output}: cannot write there ({folder} is not a writable folder)")
    if Path(output).exists() and not os.access(output, os.W_OK):
        raise InputError(f"-o {output}: the file is not writable")


def read_policy(path: str) -> str:
    """A policy file's text: `InputError` when it cannot be read, is empty or too long."""
    try:
        with Path(path).open("rb") as stream:  # bounded: never a whole large file
            raw = stream.read(MAX_POLICY_CHARS * 4 + 1)
        if len(raw) > MAX_POLICY_CHARS * 4:
            raise InputError(
                f"{path}: the policy is over {MAX_POLICY_CHARS:,} characters: too "
                "long for the judge's context (say the rule shorter)"
            )
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the policy: {exc}") from None
    if not text.strip():
        raise InputError(f"{path}: the policy is empty")
    if len(text) > MAX_POLICY_CHARS:
        raise InputError(
            f"{path}: the policy is {len(text):,} characters, over {MAX_POLICY_CHARS:,}: too "
            "long for the judge's context (say the rule shorter)"
        )
    return text.strip()


async def _fit(
    cases: list[Case], options: dict[str, Any], policy: str | None, folds: int, k: int,
    seed: int, candidates: list[Candidate],
) -> AlignmentFit:  # fmt: skip
    with progress_bar("aligning", 0, sys.stderr.isatty()) as step:

        async def grader(spec: AlignedSpec | None, chosen: list[Case]) -> list[CaseResult]:
            async with make_judge({**options, "aligned": spec}) as judge:
                return list(await judge.grade(chosen, on_result=lambda _: step(1)))

        async with make_judge(options) as judge:  # what `weights` and `probe` start from
            defaults = judge.decision_defaults()
            probe = probe_source(lambda: make_judge(options), judge)
        return await fit_alignment(
            cases, grader, policy=policy, folds=folds, k=k, seed=seed, candidates=candidates,
            defaults=defaults, probe=probe,
        )  # fmt: skip


def _print(fitted: AlignmentFit, output: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    for found in fitted.fits:
        table = Table(
            title=f"{found.dimension}: {found.labels} labels, {fitted.folds} folds (held out)",
            title_justify="left",
        )
        for column in ("candidate", "n", "held-out kappa", "95% CI", "chosen"):
            table.add_column(column)
        for name, held in found.candidates.items():
            table.add_row(name, str(held.n), *_figures(held), _chosen(found, name))
        assert found.after is not None
        table.add_row("nested (after)", str(found.after.n), *_figures(found.after), "")
        console.print(table)
        console.print(f"{found.dimension}: {found.why}")
    for dimension, count in fitted.left_base.items():
        console.print(f"{dimension}: left base, {count} labels (fewer than 20)")
    for dimension in fitted.unweighable:
        console.print(
            f"{dimension}: weights not measured: the judge's verdicts carry no answers to "
            "weigh anew (a scored rubric's do: the embedded judge's)"
        )
    for dimension in fitted.unprobed:
        console.print(
            f"{dimension}: probe not measured: it learns from the embedded judge's hidden "
            "states and answers (this judge is another, or none could be read)"
        )
    console.print(f"aligned spec: {output}")


def _figures(held: Held) -> tuple[str, str]:
    if held.kappa is None:
        return "n/a", "n/a"
    interval = "n/a" if held.ci_low is None else f"[{held.ci_low:.2f}, {held.ci_high:.2f}]"
    return f"{held.kappa:.2f}", interval


def _chosen(found: DimensionFit, name: str) -> str:
    return "yes" if found.choice == name else ""


COMMANDS = (align_command,)
