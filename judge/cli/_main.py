"""The `judge` command line: parse options, call the library, print.

`judge check` is defined here and needs only the deterministic checks; every other command
lives in a module imported when that command runs, so `judge check` never loads the OpenAI
SDK, FastAPI or the statistics libraries.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Callable
from contextlib import ExitStack
from typing import IO, TYPE_CHECKING, Any, BinaryIO

import click

from judge import _core
from judge._errors import CaseFileWarning, InputError, UnknownFieldWarning
from judge.cases._file_form import CaseInput, open_case_input
from judge.cases._parquet import as_json_lines, is_parquet, output_sink
from judge.checks._summary import Summary
from judge.cli._common import (
    empty_inputs,
    end_on_closed_pipe,
    line_count,
    parse_rate,
    progress_bar,
    ray_option,
    refuser,
    report_skipped,
    require_files,
    shared_tools,
    stack_options,
    tools_option,
)
from judge.cli._jobs import STDIN, InProcess, WorkerFailed, Workers, default_jobs
from judge.cli._matching import from_traces_option, trajectory_from, trajectory_options
from judge.cli._outputs import RunReport, gate, refuse_on_ray, report_options
from judge.cli._paths import refuse_overlaps

if TYPE_CHECKING:
    from judge.cases._shared_tools import SharedTools

_refuse = refuser("judge check")

# Command name -> the module that defines it (in its COMMANDS).
_LAZY_COMMANDS = {
    "grade": "judge.cli._grade",
    "probe": "judge.cli._probe",
    "rubric": "judge.cli._rubric",
    "calibrate": "judge.cli._data",
    "align": "judge.cli._align",
    "sample": "judge.cli._sample",
    "bfcl": "judge.cli._data",
    "label": "judge.cli._data",
    "labels": "judge.cli._data",
    "local": "judge.cli._local",
    "run": "judge.cli._run",
    "compare": "judge.cli._runs",
    "regrade": "judge.cli._runs",
    "transcripts": "judge.cli._transcripts",
    "serve": "judge.cli._service",
    "schema": "judge.cli._service",
    "import": "judge.cli._import",
    "init": "judge.cli._init",
    "review": "judge.cli._review",
    "estimate": "judge.cli._estimate",
}


class LazyGroup(click.Group):
    """A group whose commands, but `check`, are imported when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = _LAZY_COMMANDS.get(cmd_name)
        if module is None:
            return super().get_command(ctx, cmd_name)
        commands: tuple[click.Command, ...] = importlib.import_module(module).COMMANDS
        return next(c for c in commands if c.name == cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # whoever read standard output has gone (`| head`)
            end_on_closed_pipe()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    package_name="tool-call-judge",
    prog_name="judge",
    message=f"%(prog)s %(version)s (comparison core: {_core.describe()})",
)
def main() -> None:
    """Grade the tool calls of LLM agents."""
    show_unknown_fields()


def show_unknown_fields() -> None:
    """Show each `UnknownFieldWarning` and `CaseFileWarning` (a case file read as one JSON
    document) a command's readers give (every one, not the first of each place in the code)
    as a line on standard error."""
    shown = warnings.showwarning
    said = (UnknownFieldWarning, CaseFileWarning)

    def show(message: Warning | str, category: type[Warning], *args: Any, **kw: Any) -> None:
        if issubclass(category, said):
            click.echo(f"judge: warning: {message}", err=True)
        else:
            shown(message, category, *args, **kw)

    for category in said:
        warnings.simplefilter("always", category)
    warnings.showwarning = show


_check_options = stack_options(
    click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Write one result per line here, overwriting the file (never one of the inputs; "
        "default: standard output, with the summary on standard error).",
    ),
    report_options,
    click.option(
        "--fail-under",
        callback=parse_rate,
        metavar="RATE",
        help="Exit 1 when the pass rate is lower, e.g. 0.9 or 90%: passed over passed, failed "
        "and unreadable cases (with --strict, over every case).",
    ),
    click.option(
        "--progress/--no-progress",
        default=None,
        help="Show a progress bar (default: when standard error is a terminal).",
    ),
    click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        help="Processes that grade: this one and N-1 workers (with --env, N workers) "
        "(default: every core for files past a few thousand lines, else 1). Results keep the "
        "input order.",
    ),
    tools_option,
    from_traces_option,
    trajectory_options,
    ray_option,
)


@main.command("check")
@click.argument("cases", nargs=-1, required=True, type=click.Path(allow_dash=True))
@_check_options
def check_command(
    cases: tuple[str, ...],
    output: str | None,
    summary_format: str,
    junit: str | None,
    strict_input: bool,
    fail_under: float | None,
    progress: bool | None,
    jobs: int | None,
    tools_file: str | None,
    from_format: str | None,
    ray_address: str | None,
    **trajectory: Any,
) -> None:
    """Grade CASES (JSON Lines files, or - for standard input) deterministically: well-formed
    calls, the right tools, the expected argument values; with --match, the whole trajectory;
    with --env, the final state."""
    require_files(cases)
    refuse_overlaps()
    recipe = dict(trajectory)  # for worker processes, which load the options themselves
    try:
        settings, factory = trajectory_from(trajectory)
    except ValueError as exc:  # an override or environment that cannot be loaded
        _refuse(str(exc))
    if ray_address is not None:
        refuse_on_ray("check", summary_format, junit, strict_input, tools_file)
    shared = shared_tools(tools_file, "check")
    summary = Summary()
    to_stdout = output in (None, "-")
    try:
        report = RunReport("check", summary_format, junit,
                           sys.stderr if to_stdout else sys.stdout)  # fmt: skip
    except InputError as exc:
        _refuse(str(exc))
    try:
        if ray_address is not None:
            _check_on_ray(ray_address, cases, output, summary, settings, recipe["env"], from_format)
        else:
            _check_locally(cases, output, summary, settings, factory, recipe, progress, jobs,
                           from_format, report, strict_input, shared)  # fmt: skip
    except (InputError, WorkerFailed) as exc:
        _refuse(str(exc))
    except BrokenPipeError:
        end_on_closed_pipe()
    except OSError as exc:
        _refuse(f"cannot write {output}: {exc.strerror or exc}")

    report.finish(summary)
    counts = (summary.passed, summary.failed, summary.invalid_cases, summary.cases)
    gate("check", counts, fail_under, strict_input)


def _check_on_ray(
    address: str,
    cases: tuple[str, ...],
    output: str | None,
    summary: Summary,
    settings: Any,
    env: str | None,
    from_format: str | None,
) -> None:
    """`--ray`: the checks in Ray tasks on the cluster."""
    if from_format is not None:
        raise InputError("--ray reads case files: convert traces with judge import first")
    from judge.cli._ray import check_on_ray

    check_on_ray(address, cases, output, summary, settings, env)


def _check_locally(
    cases: tuple[str, ...],
    output: str | None,
    summary: Summary,
    settings: Any,
    factory: Any,
    recipe: dict[str, Any],
    progress: bool | None,
    jobs: int | None,
    from_format: str | None,
    report: RunReport,
    strict: bool,
    shared: SharedTools | None,
) -> None:
    """In this process, or in `jobs` worker processes (`shared`: the tools of `--tools`)."""
    with ExitStack() as stack:
        show = progress if progress is not None else sys.stderr.isatty()
        if from_format is not None:
            show, jobs = False, 1  # converted in memory: graded in this process
        jobs = jobs or default_jobs(cases)
        here = InProcess(settings, factory, strict, shared)
        local = here if factory is None else None  # a user's environment: in workers only
        grader: InProcess | Workers = (
            Workers(jobs, recipe, strict, local, shared) if jobs > 1 else here
        )
        stack.enter_context(grader)  # before the sink: workers forked before its threads
        sink = stack.enter_context(output_sink(output))
        reader = None
        if from_format is not None:  # trace files, converted as `judge import` does
            from judge.cli._import import TraceReader

            reader = TraceReader(from_format, "check")
        empty = []
        for path in cases:
            total = line_count(path) if show else None
            before = summary.cases
            with progress_bar(os.path.basename(path), total, show) as advance:
                traced = reader.spooled(path) if reader is not None else None
                _check_file(grader, path, summary, sink, advance, report, traced)
            if summary.cases == before and reader is None:
                empty.append(path)
        if reader is not None:
            reader.finish()
        if empty:  # once the other inputs are graded and written
            raise InputError(empty_inputs(empty))


def _check_file(
    grader: InProcess | Workers,
    path: str,
    summary: Summary,
    sink: IO[bytes],
    advance: Callable[[int], None],
    report: RunReport,
    traced: BinaryIO | None = None,
) -> None:
    """Grade one input chunk by chunk, writing the results in input order (a trace file is
    converted to cases first)."""
    with ExitStack() as stack:
        if traced is not None:
            stream: CaseInput = stack.enter_context(traced)
        elif path != "-" and is_parquet(path):
            stream = stack.enter_context(as_json_lines(path))
        else:  # JSON Lines, or a file that is one JSON document (`-`: standard input)
            stream = stack.enter_context(open_case_input(path))
        source = STDIN if path == "-" else path
        for checked in grader.check(stream, source):
            summary.merge(checked.summary)
            sink.write(checked.output)
            for message in checked.warnings:
                report.warn(message)
            report_skipped("check", checked.invalid)
            report.add_lines(source, checked.numbers, checked.ids, checked.output)
            advance(checked.lines)


if __name__ == "__main__":
    main()
