"""The `judge` command line: parse options, call the library, print."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

import click
import orjson

from judge._calibration import (
    CalibrationRecord,
    GateRefusal,
    build_record,
    check_gate,
    load_record,
    write_jsonl,
)
from judge._calibration import disagreements as find_disagreements
from judge._check import iter_check
from judge._client import JudgeEndpointError
from judge._errors import InputError, JudgeError
from judge._grade import DEFAULT_SEED, Judge, Plan
from judge._loading import load_cases
from judge._report import render_report
from judge._result import CaseResult
from judge._resume import finished_results
from judge._rubric import load_rubrics
from judge._summary import Summary

EXIT_BELOW_THRESHOLD = 1
EXIT_UNREADABLE = 2
EXIT_GATE = 3
EXIT_ENDPOINT = 4


def _parse_rate(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    text = value.strip()
    try:
        rate = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a rate (0.9 or 90%)") from None
    if not 0.0 <= rate <= 1.0:
        raise click.BadParameter(f"{value!r} is outside 0..1 (0.9 or 90%)")
    return rate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tool-call-judge", prog_name="judge")
def main() -> None:
    """Grade the tool calls of LLM agents."""


@main.command("check")
@click.argument("cases", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write one result per line here (default: standard output, with the "
    "summary on standard error).",
)
@click.option(
    "--format",
    "summary_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="How to print the summary.",
)
@click.option(
    "--fail-under",
    callback=_parse_rate,
    metavar="RATE",
    help="Exit 1 when the pass rate (passed / gradable cases) is lower, e.g. 0.9 or 90%.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar (default: when standard error is a terminal).",
)
def check_command(
    cases: tuple[str, ...],
    output: str | None,
    summary_format: str,
    fail_under: float | None,
    progress: bool | None,
) -> None:
    """Grade CASES (JSON Lines files, or - for standard input) deterministically: well-formed
    calls, the right tools, the expected argument values."""
    _require_files(cases)
    summary = Summary()
    to_stdout = output in (None, "-")
    try:
        with ExitStack() as stack:
            sink: IO[bytes] = (
                sys.stdout.buffer if to_stdout else stack.enter_context(open(output or "", "wb"))
            )
            show = progress if progress is not None else sys.stderr.isatty()
            for path in cases:
                total = _line_count(path) if show else None
                with _progress(os.path.basename(path), total, show) as advance:
                    for seen, result in enumerate(iter_check(path), start=1):
                        summary.add(result)
                        sink.write(
                            orjson.dumps(result.to_json_dict(), option=orjson.OPT_APPEND_NEWLINE)
                        )
                        _report_invalid(result)
                        if seen % 256 == 0:
                            advance(256)
            sink.flush()
    except InputError as exc:
        click.echo(f"judge check: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    except OSError as exc:
        click.echo(f"judge check: cannot write {output}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_UNREADABLE)

    _print_summary(summary, summary_format, sys.stderr if to_stdout else sys.stdout)
    if fail_under is not None:
        rate = summary.pass_rate
        if rate is None or rate < fail_under:
            shown = "no gradable case" if rate is None else f"pass rate {rate:.1%}"
            click.echo(f"judge check: {shown} is under --fail-under {fail_under:.1%}", err=True)
            sys.exit(EXIT_BELOW_THRESHOLD)


def _judge_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that fix a judge; shared by every command that runs one."""
    options = [
        click.option(
            "--model",
            help="Judge model (`local` for the embedded one; default: "
            "JUDGE_MODEL, or the provider's default).",
        ),
        click.option(
            "--base-url",
            help="Any OpenAI-compatible endpoint (default: "
            "JUDGE_BASE_URL; OPENROUTER_API_KEY selects OpenRouter, OPENAI_API_KEY "
            "OpenAI; none: the embedded judge).",
        ),
        click.option(
            "--rubrics",
            type=click.Path(file_okay=False, exists=True),
            help="A folder of your own rubrics (*.j2), one per dimension.",
        ),
        click.option(
            "--samples",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Ask N times; report the majority verdict and the flip rate.",
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            default=8,
            show_default=True,
            help="Requests in flight at once.",
        ),
        click.option("--temperature", type=float, default=0.0, show_default=True),
        click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True),
        click.option("--reasoning-effort", help="Passed through to the provider."),
        click.option("--extra-body", help="JSON object of provider fields, passed through."),
        click.option(
            "--response-format",
            default="auto",
            show_default=True,
            type=click.Choice(["auto", "json_schema", "json_object", "tool"]),
            help="How to ask for structured output (auto: json_schema, stepping "
            "down when the endpoint refuses it).",
        ),
        click.option(
            "--timeout",
            type=float,
            default=120.0,
            show_default=True,
            help="Seconds before one request is abandoned (and retried).",
        ),
        click.option(
            "--cache-dir",
            type=click.Path(file_okay=False),
            help="Where verdicts are cached (default: JUDGE_CACHE_DIR, else the user "
            "cache folder).",
        ),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the cache."),
        click.option(
            "--judge-broken",
            is_flag=True,
            help="Ask the judge about calls that already failed structurally too.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _make_judge(options: dict[str, Any]) -> Judge:
    extra = options.pop("extra_body")
    try:
        extra_body = json.loads(extra) if extra else None
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"--extra-body is not JSON: {exc}") from None
    no_cache = options.pop("no_cache")
    return Judge(extra_body=extra_body, cache=not no_cache, **options)


@main.command("grade")
@click.argument("cases", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Append one result per line here as cases finish; rerun with the same file "
    "to resume (default: standard output).",
)
@_judge_options
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False),
    help="A record from `judge calibrate`: refuse (exit 3) a judge that differs from the "
    "calibrated one or whose kappa is under the record's threshold.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="With --calibration: the kappa's 95% interval lower bound must clear it.",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --calibration: run anyway, every verdict marked trusted: false.",
)
@click.option(
    "--dry-run", is_flag=True, help="Print the requests and prompt tokens it would send; send none."
)
@click.option(
    "--price-per-mtok", type=float, help="USD per million prompt tokens, to price a --dry-run."
)
@click.option(
    "--format",
    "summary_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
)
@click.option(
    "--fail-under",
    callback=_parse_rate,
    metavar="RATE",
    help="Exit 1 when the judge's pass rate (selection and arguments correct, over "
    "cases judged ok) is lower.",
)
def grade_command(
    cases: tuple[str, ...],
    output: str | None,
    calibration: str | None,
    strict: bool,
    force: bool,
    dry_run: bool,
    price_per_mtok: float | None,
    summary_format: str,
    fail_under: float | None,
    **judge_options: Any,
) -> None:
    """Grade CASES with the deterministic checks and the LLM judge."""
    _require_files(cases)
    try:
        judge = _make_judge(judge_options)
    except JudgeError as exc:
        click.echo(f"judge grade: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if calibration is not None:
        judge.trusted = _gate(judge, calibration, strict=strict, force=force)
    if dry_run:
        plan = asyncio.run(_plan(judge, cases))
        lines = [
            f"cases to judge: {plan.cases}",
            f"requests to send: {plan.requests} ({dict(plan.by_dimension)})",
            f"answered from cache: {plan.cached}",
            f"prompt tokens (estimated): {plan.prompt_tokens}",
        ]
        if price_per_mtok is not None:
            lines.append(
                f"prompt cost (estimated): ${plan.prompt_tokens * price_per_mtok / 1e6:.4f}"
            )
        click.echo("\n".join(lines))
        return
    summary = Summary()
    try:
        asyncio.run(_grade(judge, cases, output, summary))
    except JudgeEndpointError as exc:
        click.echo(f"judge grade: {exc}", err=True)
        sys.exit(EXIT_ENDPOINT)
    except InputError as exc:
        click.echo(f"judge grade: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    _print_summary(summary, summary_format, sys.stderr if output is None else sys.stdout)
    verdicts = summary.verdicts
    if fail_under is not None:
        rate = verdicts.pass_rate if verdicts else None
        if rate is None or rate < fail_under:
            shown = "no case judged" if rate is None else f"judge pass rate {rate:.1%}"
            click.echo(f"judge grade: {shown} is under --fail-under {fail_under:.1%}", err=True)
            sys.exit(EXIT_BELOW_THRESHOLD)


def _gate(judge: Judge, path: str, *, strict: bool, force: bool) -> bool:
    """Whether the judge's verdicts are trusted; exits 3 when the record refuses it."""
    try:
        record = load_record(path)
        check_gate(record, judge.fingerprint(), strict=strict or record.strict, source=path)
    except GateRefusal as exc:
        if not force:
            click.echo(f"judge grade: refused: {exc}", err=True)
            sys.exit(EXIT_GATE)
        click.echo(f"judge grade: --force: running untrusted: {exc}", err=True)
        return False
    return True


@main.command("calibrate")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False, allow_dash=False))
@click.option(
    "-o",
    "--output",
    default="calibration.json",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The calibration record.",
)
@click.option(
    "--min-kappa",
    type=click.FloatRange(-1, 1),
    default=0.6,
    show_default=True,
    help="Each dimension's kappa must reach this.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="The lower bound of the 95% interval must reach it, not just the kappa.",
)
@click.option(
    "--results",
    type=click.Path(dir_okay=False),
    help="Per-case verdicts (default: <record stem>.results.jsonl beside it).",
)
@click.option(
    "--disagreements",
    type=click.Path(dir_okay=False),
    help="Every disagreement (default: <record stem>.disagreements.jsonl).",
)
@click.option("--report", type=click.Path(dir_okay=False), help="Write an HTML report here.")
@_judge_options
@click.option(
    "--format",
    "summary_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
)
def calibrate_command(
    sample: str,
    output: str,
    min_kappa: float,
    strict: bool,
    results: str | None,
    disagreements: str | None,
    report: str | None,
    summary_format: str,
    **judge_options: Any,
) -> None:
    """Measure the judge against the hand labels of SAMPLE: Cohen's kappa per dimension."""
    stem = Path(output).with_suffix("")
    results = results or f"{stem}.results.jsonl"
    disagreements = disagreements or f"{stem}.disagreements.jsonl"
    try:
        judge = _make_judge(judge_options)
        loaded = load_cases(sample)
    except (JudgeError, InputError) as exc:
        click.echo(f"judge calibrate: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    for error in loaded.errors:
        click.echo(f"judge calibrate: skipped {error}", err=True)
    cases = list(loaded)
    try:
        graded = asyncio.run(_grade_all(judge, cases))
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
    )
    rows = find_disagreements(cases, graded)
    write_jsonl(results, (r.to_json_dict() for r in graded))
    write_jsonl(disagreements, rows)
    Path(output).write_text(record.model_dump_json(indent=2) + "\n")
    if report:
        Path(report).write_text(render_report(record, rows), encoding="utf-8")
    if summary_format == "json":
        click.echo(record.model_dump_json(indent=2))
    else:
        _print_calibration(record, len(rows), output)
    sys.exit(0 if record.passed else EXIT_BELOW_THRESHOLD)


async def _grade_all(judge: Judge, cases: list[Any]) -> list[CaseResult]:
    with _progress("calibrating", len(cases), sys.stderr.isatty()) as step:
        async with judge:
            return list(await judge.grade(cases, on_result=lambda _: step(1)))


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
    verdict = "PASSED" if record.passed else "NOT PASSED"
    console.print(
        f"{verdict}: kappa >= {record.threshold}"
        f"{' (CI lower bound)' if record.strict else ''}; {record.judge_errors} "
        f"judge errors excluded; {disagreeing} disagreements in {record.disagreements};"
        f" record: {output}"
    )


async def _plan(judge: Judge, cases: tuple[str, ...]) -> Plan:
    async with judge:
        total = Plan()
        for path in cases:
            plan = await judge.plan(path)
            total.cases += plan.cases
            total.requests += plan.requests
            total.cached += plan.cached
            total.prompt_tokens += plan.prompt_tokens
            total.by_dimension.update(plan.by_dimension)
        return total


async def _grade(
    judge: Judge, cases: tuple[str, ...], output: str | None, summary: Summary
) -> None:
    done = finished_results(output) if output else []
    for result in done:
        summary.add(result)
    skip = {r.id for r in done}
    sink = open(output, "ab") if output else sys.stdout.buffer  # noqa: SIM115
    show = sys.stderr.isatty()
    try:
        async with judge:
            for path in cases:
                total = _line_count(path)
                with _progress(os.path.basename(path), total and total - len(skip), show) as step:
                    async for result in judge.iter_grade(path, skip=skip):
                        summary.add(result)
                        sink.write(
                            orjson.dumps(result.to_json_dict(), option=orjson.OPT_APPEND_NEWLINE)
                        )
                        sink.flush()  # a finished result is never lost
                        _report_invalid(result)
                        step(1)
    finally:
        if output:
            sink.close()


def _require_files(paths: tuple[str, ...]) -> None:
    for path in paths:  # refuse before writing anything
        if path != "-" and not os.path.isfile(path):
            why = "is a directory" if os.path.isdir(path) else "no such file"
            click.echo(f"judge: {path}: cannot read cases: {why}", err=True)
            sys.exit(EXIT_UNREADABLE)


def _print_summary(summary: Summary, summary_format: str, stream: IO[str]) -> None:
    if summary_format == "json":
        stream.write(json.dumps(summary.to_dict(), indent=2) + "\n")
    else:
        summary.print_table(stream)


@main.group("rubric")
def rubric_group() -> None:
    """Inspect rubrics."""


@rubric_group.command("list")
@click.option("--rubrics", type=click.Path(file_okay=False, exists=True))
@click.option("--small", is_flag=True, help="The rubrics of the embedded small judge.")
def rubric_list(rubrics: str | None, small: bool) -> None:
    """List the rubrics with their version and content hash."""
    found = load_rubrics(rubrics, kind="small" if small else "default")
    for rubric in (found.selection, found.arguments):
        click.echo(
            f"{rubric.name}\t{rubric.dimension}\tv{rubric.version}\t"
            f"{rubric.sha256[:12]}\t{rubric.path}"
        )


@rubric_group.command("show")
@click.argument("name")
@click.option("--case", "case_file", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--id", "case_id", required=True, help="The case to render.")
@click.option("--rubrics", type=click.Path(file_okay=False, exists=True))
@click.option("--small", is_flag=True, help="The rubrics of the embedded small judge.")
@click.option("--judge-broken", is_flag=True)
def rubric_show(
    name: str, case_file: str, case_id: str, rubrics: str | None, small: bool, judge_broken: bool
) -> None:
    """Print exactly what rubric NAME would send for one case: messages and reply schema."""
    found = load_rubrics(rubrics, kind="small" if small else "default")
    rubric = found.named(name)
    case = next((c for c in load_cases(case_file) if c.id == case_id), None)
    if case is None:
        click.echo(f"judge rubric show: no case {case_id!r} in {case_file}", err=True)
        sys.exit(EXIT_UNREADABLE)
    judge = Judge(rubrics=found, judge_broken=judge_broken, cache=False, model="local")
    _, _, questions = judge.questions(case, judge.check(case))
    chosen = [q for q in questions if q.rubric is rubric]
    if not chosen:
        click.echo(
            f"# rubric {rubric.name!r} would send nothing for case {case_id!r}: its "
            "verdicts are decided without asking (see `judge check`)."
        )
        return
    for question in chosen:
        for message in question.messages:
            click.echo(f"===== {message['role']} =====")
            click.echo(message["content"])
        click.echo("===== reply schema =====")
        click.echo(json.dumps(question.schema, indent=2))


@main.command("sample")
@click.argument("cases", type=click.Path(exists=True, dir_okay=False))
@click.option("--n", "size", type=click.IntRange(min=1), default=100, show_default=True)
@click.option(
    "--stratify",
    default="tool,expected_behavior,failure",
    show_default=True,
    help="Comma-separated: tool, expected_behavior, failure, label, meta.KEY.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def sample_command(cases: str, size: int, stratify: str, seed: int, output: str) -> None:
    """Draw a stratified, seeded sample of CASES to label by hand (rare strata kept)."""
    from judge._sample import draw, read_lines

    try:
        raw, loaded = read_lines(cases)
        chosen = draw(loaded, size, [f.strip() for f in stratify.split(",") if f.strip()], seed)
    except (JudgeError, ValueError) as exc:
        click.echo(f"judge sample: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    Path(output).write_bytes(b"".join(raw[i] + b"\n" for i in chosen))
    click.echo(f"{len(chosen)} of {len(loaded)} cases -> {output}")


@main.command("bfcl")
@click.argument("questions", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--answers",
    type=click.Path(exists=True, dir_okay=False),
    help="BFCL's possible_answer file for the same category.",
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def bfcl_command(questions: str, answers: str | None, output: str) -> None:
    """Convert a BFCL category file (as shipped in bfcl-eval) into cases."""
    from judge._bfcl import bfcl_cases

    try:
        cases = bfcl_cases(questions, answers)
    except JudgeError as exc:
        click.echo(f"judge bfcl: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    Path(output).write_bytes(
        b"".join(orjson.dumps(c, option=orjson.OPT_APPEND_NEWLINE) for c in cases)
    )
    click.echo(f"{len(cases)} cases -> {output}")


@main.command("label")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@click.option("--relabel", is_flag=True, help="Ask again about cases already labelled.")
def label_command(sample: str, relabel: bool) -> None:
    """Label SAMPLE by hand in the terminal: saves after every answer, resumes where it
    stopped. The labels mean what the labelling rule in calibration/README.md says."""
    from judge._label import label_file

    try:
        done, left = label_file(sample, relabel=relabel)
    except JudgeError as exc:
        click.echo(f"judge label: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    click.echo(f"labelled {done} cases; {left} left" + (" (run again to go on)" if left else ""))


@main.group("labels")
def labels_group() -> None:
    """Label a sample in a spreadsheet: export to CSV, fill in, import back."""


@labels_group.command("export")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def labels_export(sample: str, output: str) -> None:
    """Write SAMPLE as a CSV with `selection`, `arguments` and `note` columns to fill."""
    from judge._sample import export_csv, read_lines

    try:
        _, loaded = read_lines(sample)
    except JudgeError as exc:
        click.echo(f"judge labels export: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    export_csv(output, loaded)
    click.echo(f"{len(loaded)} cases -> {output}")


@labels_group.command("import")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@click.argument("csv_file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Where to write the labelled cases (default: SAMPLE itself).",
)
def labels_import(sample: str, csv_file: str, output: str | None) -> None:
    """Copy the labels filled in CSV_FILE into the cases of SAMPLE (matched by id)."""
    from judge._sample import import_csv, read_lines

    try:
        raw, loaded = read_lines(sample)
        lines = import_csv(csv_file, raw, loaded)
    except JudgeError as exc:
        click.echo(f"judge labels import: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    Path(output or sample).write_bytes(b"".join(line + b"\n" for line in lines))
    click.echo(f"labels of {csv_file} -> {output or sample}")


@main.group("local")
def local_group() -> None:
    """The embedded default judge (no key, no network)."""


@local_group.command("status")
@click.option("--start", is_flag=True, help="Also start the server, to check that it runs.")
def local_status(start: bool) -> None:
    """Show the model path, its hash check, and whether the server runs."""
    from judge import _local

    if start:
        try:
            _local.local_endpoint()
        except JudgeError as exc:
            click.echo(f"judge local status: {exc}", err=True)
    for key, value in _local.status().items():
        click.echo(f"{key}: {value}")
    if start:
        _local.stop_local_server()


@local_group.command("setup")
def local_setup() -> None:
    """Assemble and check the model file now (otherwise done on first use)."""
    from judge import _local

    try:
        path = _local.assemble_model()
    except JudgeError as exc:
        click.echo(f"judge local setup: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    click.echo(f"model ready: {path} (sha256 {_local.MODEL_SHA256})")


def _report_invalid(result: CaseResult) -> None:
    for failure in result.failures:
        if failure.kind.value == "InvalidCase":
            click.echo(f"judge check: skipped {failure.message}", err=True)


@contextmanager
def _progress(label: str, total: int | None, show: bool) -> Iterator[Callable[[int], None]]:
    """A transient progress bar on standard error (when `show`); yields `advance(n)`."""
    if not show:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total or None)
        yield lambda n: bar.advance(task, n)


def _line_count(path: str) -> int | None:
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


if __name__ == "__main__":
    main()
