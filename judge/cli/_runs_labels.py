"""`--labels` of `judge compare`, `judge regrade` and `judge run`: hand labels on part of each
model's responses, for the prediction-powered pass rates and differences (`_compare_ppi`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from judge._errors import JudgeError
from judge.cli._common import EXIT_UNREADABLE
from judge.runs._compare import Comparison, compare_runs
from judge.runs._records import RunRecord


@dataclass(frozen=True)
class Gate:
    """`--fail-if-worse BASELINE --metric M` of one command, and its `--labels`."""

    command: str
    baseline: str | None = None
    metric: str = "pass_rate"
    labels: str | None = None
    assume_random: bool = False


LABEL_OPTIONS: list[Callable[..., Any]] = [
    click.option(
        "--labels",
        type=click.Path(exists=True, dir_okay=False),
        help="Hand labels on part of each model's responses, for prediction-powered pass rates "
        "and differences: cases (from `judge label` or `judge review`) whose `id` is the "
        "case's id and `meta.model` the model's name in the runs; with several runs, of any "
        "one of them.",
    ),
    click.option(
        "--assume-random",
        is_flag=True,
        help="With --labels: each model's labelled cases are a uniform random sample of its "
        "cases, though none records its inclusion probability (`meta.inclusion_probability`).",
    ),
]


def compared(
    records: list[RunRecord], command: str, labels: str | None, assume_random: bool
) -> Comparison:
    """The comparison, with the hand labels of `labels` when given (exit 2 when they cannot
    be read or are refused)."""
    if labels is None:
        return compare_runs(records)
    from judge.calibrate._sample import read_lines

    try:
        cases = read_lines(labels)[1]
        return compare_runs(records, labels=cases, assume_random=assume_random)
    except JudgeError as exc:
        click.echo(f"judge {command}: {exc}".splitlines()[0], err=True)
        sys.exit(EXIT_UNREADABLE)


def graded_by_model(records: list[RunRecord]) -> dict[str, set[str]]:
    """The case ids of each model's records."""
    found: dict[str, set[str]] = {}
    for record in records:
        found.setdefault(record.model, set()).add(record.case_id)
    return found


def refuse_before_run(gate: Gate, graded: dict[str, set[str]]) -> None:
    """Exit 2 before any request (`graded`: the case ids each model will be graded on) for
    labels the run could not use once it is paid for: a gate on the PPI difference without
    labels, and labels `compared` would refuse (a model or case the run lacks, an unknown
    design, duplicates)."""
    command, labels = gate.command, gate.labels
    if gate.baseline is not None and gate.metric == "ppi_pass_rate" and labels is None:
        needs = "--metric ppi_pass_rate needs hand labels (--labels)"
        click.echo(f"judge {command}: {needs}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if labels is None:
        return
    from judge.calibrate._estimate import design_of
    from judge.calibrate._sample import read_lines
    from judge.runs._compare_ppi import labels_by_model

    try:
        cases = read_lines(labels)[1]
        for found in labels_by_model(cases, graded).values():
            design_of(found, gate.assume_random)
    except JudgeError as exc:
        click.echo(f"judge {command}: {exc}".splitlines()[0], err=True)
        sys.exit(EXIT_UNREADABLE)
