"""`--labels` of `judge compare`, `judge regrade` and `judge run`: hand labels on part of each
model's responses, for the prediction-powered pass rates and differences (`_compare_ppi`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from judge._errors import JudgeError
from judge.cli._common import EXIT_UNREADABLE
from judge.runs._compare import Comparison, compare_runs
from judge.runs._records import RunRecord

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
