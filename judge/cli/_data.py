"""Commands around the judge: calibrate it, make and label samples, load BFCL files."""

from __future__ import annotations

import asyncio
import codecs
import sys
from pathlib import Path
from typing import Any

import click

from judge._errors import InputError, JudgeError
from judge.calibrate._record import CalibrationRecord, build_record, dimensions_of, write_jsonl
from judge.calibrate._record import disagreements as find_disagreements
from judge.calibrate._report import render_report
from judge.cases._json import dumps
from judge.cases._loading import load_cases
from judge.checks._result import CaseResult
from judge.cli._common import (
    EXIT_BELOW_THRESHOLD,
    EXIT_ENDPOINT,
    EXIT_UNREADABLE,
    FORMER_NAMES_UNTIL,
    RENAMED_ON,
    progress_bar,
    renamed_option,
    stack_options,
    strict_interval_option,
    summary_format_option,
)
from judge.cli._judge_options import judge_options, make_judge
from judge.cli._paths import refuse_overlaps
from judge.cli._probe import probe_names, probe_table
from judge.endpoints._client import JudgeEndpointError
from judge.judging._grade import Judge
from judge.judging._probes import ProbeStats, probe

_calibrate_options = stack_options(
    click.option(
        "-o",
        "--output",
        default="calibration.json",
        show_default=True,
        type=click.Path(dir_okay=False),
        help="Write the calibration record here, overwritten.",
    ),
    click.option(
        "--min-kappa",
        type=click.FloatRange(-1, 1),
        default=0.6,
        show_default=True,
        help="Each dimension's kappa must reach this.",
    ),
    strict_interval_option(
        "The lower bound of the 95% interval must reach it, not just the kappa."
    ),
    renamed_option(
        "--results-out",
        was="--results",
        since=RENAMED_ON,
        until=FORMER_NAMES_UNTIL,
        type=click.Path(dir_okay=False),
        help="Write the per-case verdicts here, overwritten (default: <record "
        "stem>.results.jsonl beside it).",
    ),
    click.option(
        "--disagreements",
        type=click.Path(dir_okay=False),
        help="Every disagreement (default: <record stem>.disagreements.jsonl).",
    ),
    click.option("--report", type=click.Path(dir_okay=False), help="Write an HTML report here."),
    click.option(
        "--coverage",
        type=click.FloatRange(0, 1, min_open=True),
        help="Gate on the kappa of this share of the most confident verdicts (the rest left "
        "to abstention: judge grade --coverage).",
    ),
    click.option(
        "--probes",
        callback=probe_names,
        help="Also ask the sample with these invariance probes (tool_order, call_order, "
        "call_ids, key_order) and add each one's flip rate to the record and the report.",
    ),
    click.option(
        "--abstain-below",
        type=click.FloatRange(0, 1),
        help="Measure the judge as it will run with this abstention (and, with --escalate-*, "
        "the cascade): uncertain verdicts are left out of the figures, counted as excluded.",
    ),
    judge_options,
    summary_format_option,
)


@click.command("calibrate")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False, allow_dash=False))
@_calibrate_options
def calibrate_command(
    sample: str,
    output: str,
    min_kappa: float,
    strict: bool,
    results_out: str | None,
    disagreements: str | None,
    report: str | None,
    coverage: float | None,
    probes: list[str] | None,
    abstain_below: float | None,
    summary_format: str,
    **judge_options: Any,
) -> None:
    """Measure the judge against the hand labels of SAMPLE: Cohen's kappa per dimension;
    for a judge whose verdicts carry a confidence, the decision is fitted by 5-fold
    cross-validation and only held-out figures are reported."""
    stem = Path(output).with_suffix("")
    results = results_out or f"{stem}.results.jsonl"
    disagreements = disagreements or f"{stem}.disagreements.jsonl"
    refuse_overlaps(results_out=results, disagreements=disagreements)
    cases, judge = _sample_and_judge(sample, {**judge_options, "abstain_below": abstain_below})
    try:
        graded, probed = asyncio.run(_grade_all(judge, cases, probes or []))
    except JudgeEndpointError as exc:
        click.echo(f"judge calibrate: {exc}", err=True)
        sys.exit(EXIT_ENDPOINT)
    record = build_record(
        cases=cases,
        results=graded,
        fingerprint=judge.fingerprint(),
        threshold=min_kappa,
        strict=strict,
        sample=sample,
        results_path=results,
        disagreements_path=disagreements,
        defaults=judge.decision_defaults(),
        coverage=coverage,
    )
    if probed:
        record = record.model_copy(update={"probes": [p.to_dict() for p in probed]})
    rows = find_disagreements(cases, graded)
    write_jsonl(results, (r.to_json_dict() for r in graded))
    write_jsonl(disagreements, rows)
    Path(output).write_text(record.model_dump_json(indent=2) + "\n")
    if report:
        Path(report).write_text(render_report(record, rows), encoding="utf-8")
    if summary_format == "json":
        click.echo(record.model_dump_json(indent=2))
    else:
        if probed:
            click.echo("invariance probes, " + probe_table(probed, len(cases)))
        _print_calibration(record, len(rows), output)
    sys.exit(0 if record.passed else EXIT_BELOW_THRESHOLD)


def _sample_and_judge(sample: str, options: dict[str, Any]) -> tuple[list[Any], Judge]:
    """The labelled cases of `sample` (each one that cannot be read said on standard error)
    and the judge the options give, which judges answers when the sample labels them."""
    try:
        loaded = load_cases(sample)
        cases = list(loaded)
        answers = "answer" in dimensions_of(cases)  # answer labels: answers judged and measured
        judge = make_judge({**options, "answers": answers})
        _refuse_fitted_on(judge, cases)
    except (JudgeError, InputError) as exc:
        click.echo(f"judge calibrate: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    for error in loaded.errors:
        click.echo(f"judge calibrate: skipped {error}", err=True)
    return cases, judge


def _refuse_fitted_on(judge: Judge, cases: list[Any]) -> None:
    """`InputError` when some labelled cases are ones the aligned spec was fitted on: its
    kappa on them would not be held out."""
    if judge.aligned is None:
        return
    labelled = [c for c in cases if c.labels is not None]
    fitted = judge.aligned.fitted_among(labelled)
    if fitted:
        shown = ", ".join(fitted[:3]) + (", ..." if len(fitted) > 3 else "")
        raise InputError(
            f"{len(fitted)} of the {len(labelled)} labelled cases ({shown}) are ones the "
            "--aligned spec was fitted on: calibration needs new labels, ones `judge align` "
            "never saw"
        )


async def _grade_all(
    judge: Judge, cases: list[Any], probes: list[str]
) -> tuple[list[CaseResult], list[ProbeStats]]:
    with progress_bar("calibrating", len(cases), sys.stderr.isatty()) as step:
        async with judge:
            graded = list(await judge.grade(cases, on_result=lambda _: step(1)))
            # The unchanged cases come from the cache: only the changed ones are asked.
            return graded, (await probe(judge, cases, probes) if probes else [])


def _print_calibration(record: CalibrationRecord, disagreeing: int, output: str) -> None:
    from rich.console import Console
    from rich.table import Table

    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    for title, stats in (
        ("judge vs labels", record.dimensions),
        ("deterministic checks vs labels", record.deterministic),
    ):
        if not stats:
            continue
        table = Table(title=title, title_justify="left")
        for column in (
            "dimension",
            "n",
            "kappa",
            "95% CI",
            "agreement",
            "TPR",
            "TNR",
            "confusion [[cc, ci], [ic, ii]]",
            "excluded",
            "passed",
        ):
            table.add_column(column)
        for name, dim in stats.items():
            ci = "n/a" if dim.ci_low is None else f"[{dim.ci_low:.2f}, {dim.ci_high:.2f}]"
            excluded = ", ".join(f"{k} {v}" for k, v in dim.excluded.items() if v) or "-"
            passed = "-" if dim.passed is None else ("yes" if dim.passed else "NO")
            table.add_row(
                name,
                str(dim.n),
                number(dim.kappa),
                ci,
                number(dim.agreement),
                number(dim.tpr),
                number(dim.tnr),
                str([list(r) for r in dim.confusion.matrix]),
                excluded,
                passed,
            )
        console.print(table)
        for name, dim in stats.items():
            if dim.degenerate or dim.note:
                console.print(f"{name}: {dim.note or dim.degenerate}")
    for name, confidence in record.confidence.items():
        fitted = record.fitted[name]
        table = Table(
            title=f"{name}: confidence ({confidence.method}, {confidence.folds}-fold "
            f"cross-validated; threshold {fitted.threshold:.2f}, ECE {confidence.ece:.3f})",
            title_justify="left",
        )
        for column in ("coverage", "n", "kappa", "agreement", "abstain below"):
            table.add_column(column)
        for row in confidence.risk_coverage:
            table.add_row(
                f"{row.coverage:.0%}",
                str(row.n),
                number(row.kappa),
                number(row.agreement),
                number(row.min_confidence),
            )
        console.print(table)
    verdict = "PASSED" if record.passed else "NOT PASSED"
    console.print(
        f"{verdict}: kappa >= {record.threshold}"
        f"{' (CI lower bound)' if record.strict else ''}; {record.judge_errors} "
        f"judge errors excluded; {disagreeing} disagreements in {record.disagreements};"
        f" record: {output}"
    )


@click.command("bfcl")
@click.argument("questions", type=click.Path(exists=True, dir_okay=False))
@renamed_option(
    "--possible-answers",
    was="--answers",
    since=RENAMED_ON,
    until=FORMER_NAMES_UNTIL,
    type=click.Path(exists=True, dir_okay=False),
    help="BFCL's possible_answer file for the same category (its ground truth: the "
    "expected calls).",
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def bfcl_command(questions: str, possible_answers: str | None, output: str) -> None:
    """Convert a BFCL category file (as shipped in bfcl-eval) into cases that judge check
    grades by BFCL's own rules."""
    from judge.cases._bfcl import bfcl_cases

    refuse_overlaps()
    try:
        cases = bfcl_cases(questions, possible_answers)
    except JudgeError as exc:
        click.echo(f"judge bfcl: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    Path(output).write_bytes(b"".join(dumps(c) + b"\n" for c in cases))
    click.echo(f"{len(cases)} cases -> {output}")


@click.command("label")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@click.option("--relabel", is_flag=True, help="Ask again about cases already labelled.")
def label_command(sample: str, relabel: bool) -> None:
    """Label SAMPLE by hand in the terminal: saves after every answer, resumes where it
    stopped. The labels mean what the labelling rule in calibration/README.md says."""
    from judge.calibrate._label import label_file

    try:
        done, left = label_file(sample, relabel=relabel)
    except JudgeError as exc:
        click.echo(f"judge label: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    click.echo(f"labelled {done} cases; {left} left" + (" (run again to go on)" if left else ""))


@click.group("labels")
def labels_group() -> None:
    """Label a sample in a spreadsheet: export to CSV, fill in, import back."""


@labels_group.command("export")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def labels_export(sample: str, output: str) -> None:
    """Write SAMPLE as a CSV with `selection`, `arguments` and `note` columns to fill."""
    from judge.calibrate._sample import read_lines
    from judge.calibrate._spreadsheet import export_csv

    refuse_overlaps()
    try:
        _, loaded = read_lines(sample)
    except JudgeError as exc:
        click.echo(f"judge labels export: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    export_csv(output, loaded)
    click.echo(f"{len(loaded)} cases -> {output}")


def _known_encoding(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        codecs.lookup(value)
    except LookupError:
        raise click.BadParameter(
            f"unknown encoding {value!r} (utf-8, cp1252, latin-1, ...)"
        ) from None
    return value


@labels_group.command("import")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@click.argument("csv_file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Where to write the labelled cases (default: SAMPLE itself).",
)
@click.option(
    "--encoding",
    default="utf-8",
    show_default=True,
    callback=_known_encoding,
    help="CSV_FILE's text encoding (UTF-8 is read with or without a byte order mark); "
    "cp1252, say, for a sheet saved as plain CSV by Excel on Windows.",
)
def labels_import(sample: str, csv_file: str, output: str | None, encoding: str) -> None:
    """Copy the labels filled in CSV_FILE into the cases of SAMPLE (matched by id)."""
    from judge.calibrate._labels import LabelFile
    from judge.calibrate._spreadsheet import import_csv

    refuse_overlaps()
    try:  # under the sample's lock: a `judge review` serving it loses no label
        LabelFile(sample).rewrite(
            lambda raw, cases: import_csv(csv_file, raw, cases, encoding), output
        )
    except JudgeError as exc:
        click.echo(f"judge labels import: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    click.echo(f"labels of {csv_file} -> {output or sample}")


COMMANDS = (
    calibrate_command,
    bfcl_command,
    label_command,
    labels_group,
)
