"""What a runs file is read, judged, stored and reported with: `judge compare`, `judge regrade`,
and the pieces `judge run` shares with them."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from judge._errors import InputError, JudgeError
from judge.cases._loading import load_cases
from judge.cli._common import (
    EXIT_BELOW_THRESHOLD,
    EXIT_ENDPOINT,
    EXIT_UNREADABLE,
    fresh_option,
    progress_bar,
    require_files,
    shared_tools,
    stack_options,
    tools_option,
)
from judge.cli._judge_options import calibration_options, gate_judge
from judge.cli._matching import (
    regrade_trajectory_options,
    trajectory_from,
)
from judge.cli._paths import one_file, refuse_overlaps
from judge.cli._runs_labels import (
    LABEL_OPTIONS,
    Gate,
    compared,
    graded_by_model,
    refuse_before_run,
)
from judge.endpoints._candidates import CandidateEndpointError
from judge.endpoints._client import JudgeEndpointError
from judge.judging._grade import Judge
from judge.judging._resume import resumed_line
from judge.runs._compare import METRICS, compare_runs, regressions
from judge.runs._preflight import LOCAL, PreflightError
from judge.runs._records import Key, RunRecord, compact, read_runs
from judge.runs._report import print_comparison, render_comparison
from judge.runs._resume import regraded
from judge.runs._runner import Grader

if TYPE_CHECKING:
    from judge.cases._match import Match
    from judge.cases._shared_tools import SharedTools
    from judge.checks._env import EnvironmentFactory

REPORT_OPTIONS: list[Callable[..., Any]] = [
    click.option(
        "--format",
        "report_format",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="How to print the comparison.",
    ),
    click.option(
        "--html",
        type=click.Path(dir_okay=False),
        help="Also write the comparison as an HTML report with a plot per metric.",
    ),
    click.option(
        "--fail-if-worse",
        metavar="BASELINE",
        help="Exit 1 when a model is worse than BASELINE (a model of the runs, the one in "
        "production say): the 95% paired interval of its difference in --metric entirely "
        "below 0.",
    ),
    click.option(
        "--metric",
        type=click.Choice(METRICS),
        default="pass_rate",
        show_default=True,
        help="What --fail-if-worse compares, per case: the share of passing runs, the mean F1, "
        "or (with --labels) the prediction-powered pass rate.",
    ),
    *LABEL_OPTIONS,
]
JUDGE_CHOICE: list[Callable[..., Any]] = [
    click.option("--judge", "use_judge", is_flag=True, help="Grade with the LLM judge too."),
    click.option(
        "--judge-model",
        help="The judge's model (default: JUDGE_MODEL, else the embedded judge).",
    ),
    click.option("--judge-base-url", help="The judge's endpoint (default: JUDGE_BASE_URL)."),
    click.option(
        "--aligned",
        type=click.Path(dir_okay=False),
        help="With --judge: a spec from `judge align` (your policy and labelled examples).",
    ),
    calibration_options,
    click.option(
        "--calls-from-content",
        is_flag=True,
        help="Read tool calls written as JSON text in the reply for every model (always "
        "done for `local`).",
    ),
]


@click.command("compare")
@click.argument("runs_file", metavar="RUNS", type=click.Path(dir_okay=False))
@stack_options(*REPORT_OPTIONS)
def compare_command(
    runs_file: str,
    report_format: str,
    html: str | None,
    fail_if_worse: str | None,
    metric: str,
    labels: str | None,
    assume_random: bool,
) -> None:
    """Compare the models of a runs file (from `judge run`): pass rates with 95% intervals,
    the breakdown, pass^k / pass@k, spend, latency and paired differences."""
    require_files((runs_file,))
    refuse_overlaps()
    records = read_records(runs_file, "compare")
    gate = Gate("compare", fail_if_worse, metric, labels, assume_random)
    report_runs(records, report_format, html, sys.stdout, gate)


@click.command("regrade")
@click.argument("runs_file", metavar="RUNS", type=click.Path(dir_okay=False))
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the regraded runs file here, overwritten (default: RUNS, rewritten in place); "
    "the records of an existing one graded as this regrade grades them, of the same responses "
    "and unchanged cases (their content hash), are kept, not graded again.",
)
@fresh_option
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Judge requests in flight at once.",
)
@regrade_trajectory_options
@tools_option
@stack_options(*JUDGE_CHOICE)
@stack_options(*REPORT_OPTIONS)
def regrade_command(
    runs_file: str,
    cases: str,
    output: str | None,
    fresh: bool,
    concurrency: int,
    report_format: str,
    html: str | None,
    fail_if_worse: str | None,
    metric: str,
    labels: str | None,
    assume_random: bool,
    tools_file: str | None,
    **judging: Any,
) -> None:
    """Grade the stored responses of RUNS again against CASES (after fixing an expected call,
    or with --judge), without asking any candidate again."""
    require_files((runs_file, cases))
    refuse_overlaps()
    shared = shared_tools(tools_file, "regrade")
    loaded = {case.id: case for case in load_run_cases(cases, "regrade", shared)}
    records = read_records(runs_file, "regrade")
    missing = sorted({r.case_id for r in records} - loaded.keys())
    if missing:
        click.echo(
            f"judge regrade: kept as they were, not in {cases}: {', '.join(missing)}", err=True
        )
    gate = Gate("regrade", fail_if_worse, metric, labels, assume_random)
    refuse_before_run(gate, graded_by_model(records))
    match, factory = trajectory_or_exit(judging, "regrade")
    loaded = {case.id: case for case in server_tools(factory, list(loaded.values()), "regrade")}
    agent_runs = any(r.transcript is not None for r in records)
    judge = run_judge(
        judging, concurrency, "regrade", match=match, env=factory, agent_runs=agent_runs
    )
    grader = Grader(judge, text_calls=calls_in_text(judging), match=match, env=factory)
    reused = _resumed(output, runs_file, fresh, records, loaded, grader)
    todo = [
        (r, loaded[r.case_id])
        for r in records
        if r.case_id in loaded and r.error is None and r.key not in reused
    ]
    target = output or runs_file
    # the regraded records are appended to these: a later line replaces one
    compact(target, [reused.get(r.key, r) for r in records])

    async def go() -> list[RunRecord]:
        return await store_records(
            target,
            {},
            len(todo),
            "regrade",
            lambda on: grader.grade_all(todo, on_record=on, concurrency=concurrency),
        )

    graded = finish_run(closing_judge(go(), judge, grader), "regrade")
    report_runs(graded, report_format, html, sys.stdout, gate)


COMMANDS = (compare_command, regrade_command)


def _resumed(
    output: str | None,
    runs_file: str,
    fresh: bool,
    records: list[RunRecord],
    cases: dict[str, Any],
    grader: Grader,
) -> dict[Key, RunRecord]:
    """The records of an existing -o an earlier regrade wrote that need no grading again
    (`regraded`), said on standard error; none without -o, with --fresh, or when -o is RUNS
    (rewritten in place: every record graded again). Exit 2 when -o is not a runs file."""
    if output is None or fresh or not os.path.exists(output) or one_file(output, runs_file):
        return {}
    try:
        earlier = read_runs(output)
    except InputError as exc:
        click.echo(f"judge regrade: {exc} (--fresh writes over it)", err=True)
        sys.exit(EXIT_UNREADABLE)
    found = regraded(earlier, records, cases, grader)
    said = resumed_line(len(found.reused), found.held, found.changed, "records")
    click.echo(f"judge regrade: {said}", err=True)
    return found.reused


def read_records(path: str, command: str) -> list[RunRecord]:
    """The records of a runs file; exits 2 when it is not one (or, to compare or regrade,
    holds none)."""
    try:
        records = read_runs(path)
    except InputError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if not records and command != "run":
        click.echo(f"judge {command}: {path}: no run records", err=True)
        sys.exit(EXIT_UNREADABLE)
    return records


def server_tools(factory: Any, cases: list[Any], command: str) -> list[Any]:
    """The cases with an MCP server's tools where they have none (as `run --mcp` offers them,
    so that `regrade` grades what `run` did); exit 2 when it cannot start or lacks a case's
    tool. Other environments leave the cases as they are."""
    from judge.checks._mcp import McpServer, McpStartError

    if not isinstance(factory, McpServer):
        return cases
    try:
        return [factory.offered_to(case) for case in cases]
    except (McpStartError, ValueError) as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)


def load_run_cases(path: str, command: str, tools: SharedTools | None = None) -> list[Any]:
    """The cases of a file to run or regrade, offered `tools` where they have none; exit 2
    when it cannot be read, holds none, or holds an id twice (an unreadable case is said and
    left out)."""
    try:
        loaded = load_cases(path)
    except InputError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    for error in loaded.errors:
        click.echo(f"judge {command}: skipped {error}", err=True)
    counts = Counter(case.id for case in loaded)
    twice = sorted(case_id for case_id, n in counts.items() if n > 1)
    if twice:
        click.echo(
            f"judge {command}: {path}: case ids must be unique: {', '.join(twice)}", err=True
        )
        sys.exit(EXIT_UNREADABLE)
    if not loaded:
        click.echo(f"judge {command}: {path}: no case to run", err=True)
        sys.exit(EXIT_UNREADABLE)
    return list(loaded) if tools is None else list(tools.offer(loaded))


def trajectory_or_exit(
    options: dict[str, Any], command: str, *, agent_runs: bool = False
) -> tuple[Match | None, Any]:
    """The --match settings and the --env factory (exits 2 when one cannot be loaded)."""
    try:
        return trajectory_from(options, agent_runs=agent_runs)
    except ValueError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)


def run_judge(
    options: dict[str, Any],
    concurrency: int,
    command: str,
    *,
    match: Match | None = None,
    env: EnvironmentFactory | None = None,
    agent_runs: bool = False,
) -> Judge | None:
    """The judge asked for (--judge), past the calibration gate when a record is given. It
    judges the answers responses end with, and agent runs' whole paths (the trajectory
    rubric)."""
    calibration = options["calibration"]
    if not options["use_judge"]:
        if calibration or options.get("aligned"):
            what = "--calibration gates" if calibration else "--aligned aligns"
            click.echo(f"judge {command}: {what} the judge: add --judge", err=True)
            sys.exit(EXIT_UNREADABLE)
        return None
    model = options["judge_model"]
    base_url = options["judge_base_url"]
    if not (model or base_url or os.environ.get("JUDGE_MODEL") or os.environ.get("JUDGE_BASE_URL")):
        model = "local"  # never a paid judge picked silently from the candidates' key
    try:
        judge = Judge(
            model=model,
            base_url=base_url,
            concurrency=concurrency,
            match=match,
            env=env,
            trajectory=agent_runs,
            answers=True,
            aligned=options.get("aligned"),
        )
    except JudgeError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if calibration:
        judge.trusted = gate_judge(
            judge, calibration, strict=options["strict"], force=options["force"], command=command
        )
    return judge


def calls_in_text(options: dict[str, Any]) -> frozenset[str] | None:
    return None if options["calls_from_content"] else frozenset({LOCAL})


async def store_records(
    output: str | None,
    done: dict[Key, RunRecord],
    total: int,
    label: str,
    start: Callable[[Callable[[RunRecord], None]], Awaitable[None]],
) -> list[RunRecord]:
    """Append each record as it is finished (flushed: a finished response is never lost);
    then, finished or stopped, compact the file (a later line replaces an earlier one)."""
    kept = dict(done)
    sink: IO[bytes] = open(output, "ab") if output else sys.stdout.buffer  # noqa: SIM115
    try:
        with progress_bar(label, total, sys.stderr.isatty()) as step:

            def on_record(record: RunRecord) -> None:
                sink.write(record.line())
                sink.flush()
                kept[record.key] = record
                step(1)

            await start(on_record)
    finally:
        if output:
            sink.close()
            kept = {r.key: r for r in read_runs(output)}
            compact(output, kept.values())
    return list(kept.values())


async def closing_judge(
    work: Awaitable[list[RunRecord]], judge: Judge | None, grader: Grader | None = None
) -> list[RunRecord]:
    """The work's records, the judge (and the grader's own client) closed after it."""
    try:
        return await work
    finally:
        if grader is not None:
            await grader.aclose()
        if judge is not None:
            await judge.aclose()


def finish_run(work: Coroutine[Any, Any, list[RunRecord]], command: str) -> list[RunRecord]:
    try:
        return asyncio.run(work)
    except PreflightError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    except JudgeEndpointError as exc:
        stored = (
            ""
            if isinstance(exc, CandidateEndpointError)
            else "\nthe finished records are stored, checked but not judged where the judge "
            f"refused: run `judge {command}` again with --judge to judge them"
        )
        click.echo(f"judge {command}: {exc}{stored}", err=True)
        sys.exit(EXIT_ENDPOINT)


def report_runs(
    records: list[RunRecord], fmt: str, html: str | None, stream: IO[str], gate: Gate | None = None
) -> None:
    """Print the comparison (and write its HTML); with a baseline, exit 1 when a model is
    worse than it for sure (2 when it is not a model of the runs, or the labels are refused)."""
    comparison = (
        compared(records, gate.command, gate.labels, gate.assume_random)
        if gate
        else compare_runs(records)
    )
    if fmt == "json":
        stream.write(json.dumps(comparison.to_dict(), indent=2) + "\n")
    else:
        print_comparison(comparison, stream)
    if html:
        Path(html).write_text(render_comparison(comparison), encoding="utf-8")
    if gate is None or gate.baseline is None:
        return
    try:
        worse = regressions(comparison, gate.baseline, gate.metric)
    except ValueError as exc:
        click.echo(f"judge {gate.command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    for line in worse:
        click.echo(f"judge {gate.command}: {line}", err=True)
    if worse:
        sys.exit(EXIT_BELOW_THRESHOLD)
    click.echo(
        f"judge {gate.command}: no model is worse than {gate.baseline} in {gate.metric} for sure",
        err=True,
    )
