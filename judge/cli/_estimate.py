"""`judge estimate`: the judge-only, labels-only and prediction-powered rates of graded
results, per dimension and for `passed`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from judge._errors import JudgeError
from judge.calibrate._estimate import Estimate, estimate
from judge.cli._common import refuser, summary_format_option
from judge.cli._paths import refuse_overlaps


@click.command("estimate")
@click.argument("graded", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--labels",
    type=click.Path(exists=True, dir_okay=False),
    help="Cases with hand labels, keyed by id (from `judge review`, `judge label` or "
    "`judge labels import`).",
)
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option(
    "--assume-random",
    is_flag=True,
    help="The labelled cases are a uniform random sample of GRADED, though none records "
    "its inclusion probability (`meta.inclusion_probability`).",
)
@click.option(
    "--calibration",
    type=click.Path(exists=True, dir_okay=False),
    help="The `judge calibrate` record of the judge that graded GRADED: its calibrated "
    "P(correct) is the judge's prediction on the dimensions it fitted (else its verdict).",
)
@summary_format_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Also write the JSON here.")
@click.option(
    "--html",
    type=click.Path(dir_okay=False),
    help="Also write the estimates as one self-contained HTML page here.",
)
def estimate_command(
    graded: str,
    labels: str | None,
    confidence: float,
    assume_random: bool,
    calibration: str | None,
    summary_format: str,
    output: str | None,
    html: str | None,
) -> None:
    """The rates of GRADED (`judge grade` results) per dimension and for `passed`: the
    judge's alone, the hand labels' alone, and the prediction-powered estimate (PPI++) that
    corrects the judge with the labels, each with its interval."""
    refuse = refuser("judge estimate")
    refuse_overlaps()
    if not 0.0 < confidence < 1.0:
        refuse(f"--confidence must be between 0 and 1, not {confidence}")
    from judge.calibrate._record import load_record
    from judge.calibrate._review import read_results
    from judge.calibrate._sample import read_lines

    try:
        record = load_record(calibration) if calibration else None
        results = read_results(graded)
        cases = read_lines(labels)[1] if labels else []
        found = estimate(results.values(), cases, confidence, assume_random, record)
    except JudgeError as exc:
        refuse(str(exc).splitlines()[0])
    for warning in found.warnings:
        click.echo(f"judge estimate: warning: {warning}", err=True)
    text = found.model_dump_json(indent=2)
    if output:
        Path(output).write_text(text + "\n")
    if html:
        from judge.calibrate._estimate_html import render_estimate

        Path(html).write_text(render_estimate(found, graded, labels), encoding="utf-8")
    if summary_format == "json":
        click.echo(text)
    else:
        print_table(found)


def print_table(found: Estimate) -> None:
    from rich.console import Console
    from rich.table import Table

    def rate(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    def interval(low: float | None, high: float | None) -> str:
        return "n/a" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    level = f"{found.confidence:.0%}"
    design = found.design + (f", {found.strata} strata" if found.strata else "")
    table = Table(title=f"estimates ({level} intervals; design: {design})")
    for column in ("dimension", "judge only", "labels only", f"{level} CI", "PPI", f"{level} CI"):
        table.add_column(column)
    for column in ("n labelled", "N graded", "effective labels"):
        table.add_column(column, justify="right")
    for name, dim in found.dimensions.items():
        effective = "n/a" if dim.effective_labels is None else f"{dim.effective_labels:.0f}"
        table.add_row(
            name,
            rate(dim.judge_only.value),
            rate(dim.labels_only.value),
            interval(dim.labels_only.low, dim.labels_only.high),
            rate(dim.ppi.value),
            interval(dim.ppi.low, dim.ppi.high),
            str(dim.n_labelled),
            str(dim.n_graded),
            effective,
        )
    console.print(table)
    for name, dim in found.dimensions.items():
        if dim.note:
            console.print(f"{name}: {dim.note}")


COMMANDS = (estimate_command,)
