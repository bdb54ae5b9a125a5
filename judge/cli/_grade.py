"""`judge grade`: the LLM judge on the command line."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from judge._errors import InputError, JudgeError
from judge.cases._json import dumps
from judge.cases._loading import iter_cases
from judge.cases._parquet import is_parquet, jsonl_to_parquet, parquet_to_jsonl
from judge.checks._summary import Summary
from judge.cli._batch import Batching, batch_options, cases_of, cost_lines, prepare
from judge.cli._common import (
    EXIT_ENDPOINT,
    EXIT_GATE,
    EXIT_UNREADABLE,
    FORMER_NAMES_UNTIL,
    drop_empty,
    empty_inputs,
    fresh_option,
    invalid_messages,
    line_count,
    parse_rate,
    print_summary,
    progress_bar,
    ray_option,
    refuser,
    report_skipped,
    require_files,
    shared_tools,
    stack_options,
    tools_option,
)
from judge.cli._jobs import STDIN
from judge.cli._judge_options import (
    abstention_options,
    grade_calibration_options,
    judge_for,
    judge_options,
)
from judge.cli._matching import (
    from_traces_option,
    judge_answers_option,
    judge_trajectory_option,
    trajectory_options,
)
from judge.cli._outputs import RunReport, gate, refuse_on_ray, report_options
from judge.cli._paths import refuse_overlaps
from judge.endpoints._client import JudgeEndpointError
from judge.judging._grade import Judge, grading
from judge.judging._plan import Plan, plan
from judge.judging._resume import Resumed

if TYPE_CHECKING:
    from judge.checks._result import CaseResult
    from judge.cli._import import TraceReader

_refuse = refuser("judge grade")

_grade_options = stack_options(
    click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Append one result per line here as cases finish. Rerun with the same file to "
        "resume it: cases already judged in it (status ok or skipped) are not graded again "
        "while unchanged (their content hash); changed ones and those with a judge_error are, "
        "the new line replacing the old, and a file judged by another judge is refused "
        "(default, or -: standard output).",
    ),
    fresh_option,
    judge_options,
    grade_calibration_options,
    abstention_options,
    click.option(
        "--dry-run",
        is_flag=True,
        help="Print the requests and prompt tokens it would send; send none.",
    ),
    click.option(
        "--price-per-mtok",
        type=float,
        help="USD per million tokens: prices a --dry-run's prompts, and with --batch the "
        "batches' tokens online and at the batch price.",
    ),
    batch_options,
    judge_trajectory_option,
    judge_answers_option,
    trajectory_options,
    tools_option,
    from_traces_option,
    report_options,
    click.option(
        "--fail-under",
        callback=parse_rate,
        metavar="RATE",
        help="Exit 1 when the judge's pass rate is lower: cases it passed (selection, "
        "arguments and, when judged, the answer correct) over those it decided and the "
        "unreadable ones (with --strict, over every case).",
    ),
    ray_option,
)


@click.command("grade")
@click.argument("cases", nargs=-1, required=True, type=click.Path(allow_dash=True))
@_grade_options
def grade_command(
    cases: tuple[str, ...],
    output: str | None,
    fresh: bool,
    calibration: str | None,
    strict: bool,
    force: bool,
    dry_run: bool,
    price_per_mtok: float | None,
    summary_format: str,
    junit: str | None,
    strict_input: bool,
    fail_under: float | None,
    tools_file: str | None,
    from_format: str | None,
    ray_address: str | None,
    **judge_options: Any,
) -> None:
    """Grade CASES with the deterministic checks and the LLM judge."""
    require_files(cases)
    refuse_overlaps()
    strict = strict or _former_strict(strict_input, calibration)
    if ray_address is not None:
        refuse_on_ray("grade", summary_format, junit, strict_input and calibration is None,
                      tools_file)  # fmt: skip
        _grade_on_ray(ray_address, cases, output, calibration, strict, force, summary_format,
                      fail_under, judge_options, dry_run or from_format is not None)  # fmt: skip
        return
    batching = Batching.take(judge_options)
    if batching is not None:
        _refuse_batching(batching, output, cases, from_format, dry_run, judge_options)
    reader = _trace_reader(from_format)
    shared = shared_tools(tools_file, "grade")
    sources: list[Any] = list(cases) if reader is None else [reader.cases((p,)) for p in cases]
    if shared is not None:
        sources = [shared.offer(iter_cases(source)) for source in sources]
    output = None if output == "-" else output
    judge = judge_for("grade", judge_options, calibration=calibration, strict=strict, force=force)
    if calibration is not None and judge.trajectory:
        click.echo(
            "judge grade: the calibration covers selection and arguments; the trajectory "
            "verdicts are not calibrated",
            err=True,
        )
    if dry_run:
        _print_plan(judge, sources, price_per_mtok)
        return
    summary = Summary()
    try:
        report = RunReport("grade", summary_format, junit,
                           sys.stderr if output is None else sys.stdout,
                           strict=strict_input, tools=shared)  # fmt: skip
    except InputError as exc:
        _refuse(str(exc))
    if reader is None:  # case files: read strictly when asked, each case's line noted
        sources = [_Numbered(report, path) for path in cases]
    prepared: list[Any] = []
    _grade_into(output, judge, cases, summary, sources, report, batching, prepared, reader,
                fresh)  # fmt: skip
    if batching is not None and not prepared:  # --batch-file: written, nothing graded
        return
    report.finish(summary)
    if prepared and prepared[0].state.batches:
        lines = cost_lines(
            prepared[0].state, price_per_mtok, batching.discount if batching else 0.5
        )
        click.echo("\n".join(lines), err=output is None)
    _fail_under(summary, fail_under, strict_input)


def _former_strict(strict_input: bool, calibration: str | None) -> bool:
    """Whether `--strict` asks for the kappa's interval too, as it did before it meant strict
    reading (said on standard error until the former meaning goes)."""
    if not strict_input or calibration is None:
        return False
    click.echo(
        f"judge grade: --strict with --calibration still requires the kappa's interval "
        f"too, as before; that is --strict-interval now, and --strict stops doing it "
        f"after {FORMER_NAMES_UNTIL}",
        err=True,
    )
    return True


def _refuse_batching(
    batching: Batching,
    output: str | None,
    cases: tuple[str, ...],
    from_format: str | None,
    dry_run: bool,
    options: dict[str, Any],
) -> None:
    """Exit 2 when `--batch` cannot run with the other options."""
    refused = batching.refusal(output=output, sources=cases, traces=from_format is not None) or (
        "--dry-run counts what would be asked: it sends no batch"
        if dry_run
        else "a batch's replies are kept in the verdict cache: not with --no-cache"
        if options.get("no_cache") and not batching.file
        else None
    )
    if refused is not None:
        _refuse(refused)


def _trace_reader(from_format: str | None) -> TraceReader | None:
    """`--from`: trace files, converted as `judge import` converts them (read as they are
    graded)."""
    if from_format is None:
        return None
    from judge.cli._import import TraceReader

    return TraceReader(from_format, "grade")


def _grade_into(
    output: str | None,
    judge: Judge,
    cases: tuple[str, ...],
    summary: Summary,
    sources: list[Any],
    report: RunReport,
    batching: Batching | None,
    prepared: list[Any],
    reader: TraceReader | None,
    fresh: bool = False,
) -> None:
    """Grade into `output`: a Parquet file is written as JSON Lines beside it while it runs
    (to resume), then converted; with `fresh`, over what it held. A refusing endpoint exits
    4, an unreadable input 2."""
    parquet = None
    if output is not None and is_parquet(output):
        parquet, output = output, f"{output}.jsonl"
    if output is not None and fresh and os.path.exists(output):
        os.remove(output)  # --fresh: none of it is resumed (the inputs were refused as -o)
    new = output is not None and not os.path.exists(output)
    try:
        spool = parquet is not None and new and not fresh and os.path.exists(parquet)
        if spool and parquet is not None and output is not None:
            parquet_to_jsonl(parquet, output)  # appended to, as JSON Lines are
        asyncio.run(_grade(judge, cases, output, summary, sources, report, batching, prepared))
        empty = [s.path for s in sources if isinstance(s, _Numbered) and not s.read]
        if batching is None and empty:  # (a batch's cases are read by its own reader)
            raise InputError(empty_inputs(empty))
        if parquet is not None and output is not None and os.path.exists(output):
            jsonl_to_parquet(output, parquet)
            os.remove(output)
        if reader is not None:  # after writing: what was read is kept
            reader.finish()
    except JudgeEndpointError as exc:
        drop_empty(output if new else None)
        _refuse(str(exc), EXIT_ENDPOINT)
    except InputError as exc:
        drop_empty(output if new else None)
        _refuse(str(exc))


def _fail_under(summary: Summary, fail_under: float | None, strict: bool = False) -> None:
    """Exit 1 when the pass rate (of the one verdict: the checks' where they decide, the
    judge's where they leave it open) is under `--fail-under`."""
    counts = (summary.passed, summary.failed, summary.invalid_cases, summary.cases)
    by = summary.decided_by
    disputes = summary.judge_disputes
    said = f"decided by the checks {by['checks']}, by the judge {by['judge']}" + (
        f"; the judge disputes {disputes} the checks decided" if disputes else ""
    )
    gate("grade", counts, fail_under, strict, undecided="undecided", who_decided=said)


class _Numbered:
    """A case file as `judge grade` reads it: through the run's report, which notes each
    case's line and id and warns about what the format does not know."""

    def __init__(self, report: RunReport, path: str) -> None:
        self.report, self.path = report, path
        self.read = 0

    def __iter__(self) -> Iterator[Any]:
        for case in self.report.read(self.path):
            self.read += 1
            yield case


def _grade_on_ray(
    address: str,
    cases: tuple[str, ...],
    output: str | None,
    calibration: str | None,
    strict: bool,
    force: bool,
    summary_format: str,
    fail_under: float | None,
    options: dict[str, Any],
    unsupported: bool,
) -> None:
    """`--ray`: the judge in an actor pool on the cluster, results in input order."""
    from judge.calibrate._record import GateRefusal
    from judge.cli._judge_options import judge_kwargs
    from judge.cli._matching import trajectory_from
    from judge.cli._ray import grade_on_ray

    batching = Batching.take(options)
    if unsupported or batching or options.pop("coverage") or options.get("escalate_model"):
        click.echo(
            "judge grade: --ray grades case files with one judge: not with --dry-run, --from, "
            "--batch, --coverage or --escalate-model",
            err=True,
        )
        sys.exit(EXIT_UNREADABLE)
    output = None if output == "-" else output
    summary = Summary()
    try:
        match, env = trajectory_from(options)
        kwargs = judge_kwargs({**options, "match": match, "env": env})
        grade_on_ray(address, cases, output, summary, kwargs, calibration, strict, force)
    except (InputError, JudgeError, ValueError) as exc:
        click.echo(f"judge grade: {exc}", err=True)
        sys.exit(EXIT_GATE if isinstance(exc, GateRefusal) else EXIT_UNREADABLE)
    print_summary(summary, summary_format, sys.stderr if output is None else sys.stdout)
    _fail_under(summary, fail_under)


def _print_plan(judge: Judge, sources: list[Any], price_per_mtok: float | None) -> None:
    """`--dry-run`: what grading would ask and cost."""
    try:
        plan = asyncio.run(_plan(judge, sources))
    except InputError as exc:
        click.echo(f"judge grade: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    lines = [
        f"cases to judge: {plan.cases}",
        f"requests to send: {plan.requests} ({dict(plan.by_dimension)})",
        f"answered from cache: {plan.cached}",
        f"prompt tokens (estimated): {plan.prompt_tokens}",
    ]
    if plan.unrenderable:
        lines.append(f"cases the rubrics cannot render (judge_error): {plan.unrenderable}")
    if price_per_mtok is not None:
        lines.append(f"prompt cost (estimated): ${plan.prompt_tokens * price_per_mtok / 1e6:.4f}")
    click.echo("\n".join(lines))


async def _plan(judge: Judge, sources: list[Any]) -> Plan:
    async with judge:
        return await plan(judge, *sources)


async def _grade(
    judge: Judge,
    cases: tuple[str, ...],
    output: str | None,
    summary: Summary,
    sources: list[Any],
    report: RunReport,
    batching: Batching | None = None,
    prepared: list[Any] | None = None,
) -> None:
    """Grade each source (a case file's path, or the cases of a trace file) into `output`,
    resuming what it holds; with `batching`, from the replies of provider batches (appended
    to `prepared`)."""
    resumed = Resumed.read(output, judge.differs_from, grading(judge)) if output else None
    async with judge:
        found = None
        if batching is not None:
            port = judge.for_batches()
            if port is None:  # the embedded model
                raise InputError("a batch needs an endpoint with a Batch API: give --base-url")
            reused = None if resumed is None else resumed.current
            todo = cases_of(cases, (), report.strict, report.tools, reused=reused)
            found = await prepare(port, batching, todo, output)
            if found is None:
                return
            found.refuse_on(port)
            if prepared is not None:
                prepared.append(found)
        sink = open(output, "ab") if output else sys.stdout.buffer  # noqa: SIM115
        try:
            for path, source in zip(cases, sources, strict=True):
                await _grade_source(judge, path, source, sink, summary, report, resumed, found)
            for result in resumed.left() if resumed is not None else ():
                summary.add(result)  # an earlier run's, of no case read now: kept as it was
                report.add(str(output), None, result.to_json_dict())
        finally:
            if output:
                sink.close()
            if resumed is not None:
                click.echo(f"judge grade: {resumed.finish()}", err=True)


async def _grade_source(
    judge: Judge,
    path: str,
    source: Any,
    sink: Any,
    summary: Summary,
    report: RunReport,
    resumed: Resumed | None,
    found: Any,
) -> None:
    """Grade the cases of one source into `sink`; those `resumed` reuses are not graded, their
    earlier result counted in their place. `found`: the batches that answered (or None)."""
    where, show = STDIN if path == "-" else path, sys.stderr.isatty()
    total = line_count(path) if show and isinstance(source, _Numbered) else None
    with progress_bar(os.path.basename(path), total, show) as step:

        def add(result: CaseResult, data: dict[str, Any] | None = None) -> None:
            summary.add(result)
            report.add(where, report.line_of(result.id), data or result.to_json_dict())
            step(1)

        items = source if resumed is None else resumed.todo(source, add)
        async for result in judge.iter_grade(items):
            if found is not None:
                result = found.annotate(result)
            data = result.to_json_dict()
            sink.write(dumps(data) + b"\n")
            sink.flush()  # a finished result is never lost
            report_skipped("grade", invalid_messages(result))
            add(result, data)


COMMANDS = (grade_command,)
