"""`judge import`: LLM calls recorded in production (OpenTelemetry spans, proxy logs) as cases."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from judge.cli._common import EXIT_UNREADABLE, require_files
from judge.traces import FORMATS, Imported, import_traces
from judge.traces._import import Format, Per


@click.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(FORMATS))
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write the cases here (default: standard output).",
)
@click.option(
    "--per",
    type=click.Choice(["call", "trace"]),
    default="call",
    show_default=True,
    help="One case per LLM call (its input, tools and output), or per trace (the whole "
    "conversation, no response: for --match and the trajectory judge).",
)
def import_command(fmt: str, files: tuple[str, ...], output: str | None, per: str) -> None:
    """Convert FILES in FORMAT into cases: `otel` (OTLP JSON as the Collector's file exporter
    writes it, or the Python SDK's span JSON; OpenInference or GenAI attributes), `langsmith`
    (runs as JSON lines), `inspect` (Inspect AI logs, .eval or .json), `openai` (proxy logs: one
    {"request", "response"} object per line)."""
    require_files(files)
    found = import_traces(fmt, files, per)  # type: ignore[arg-type]
    for problem in found.problems:
        click.echo(f"judge import: skipped {problem.source}: {problem.why}", err=True)
    if not found.cases and found.problems:
        click.echo(f"judge import: nothing could be read from {', '.join(files)}", err=True)
        sys.exit(EXIT_UNREADABLE)
    from judge.cases._json import dumps

    payload = b"".join(dumps(case) + b"\n" for case in found.cases)
    if output in (None, "-"):
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
    else:
        Path(output).write_bytes(payload)
    skipped = sum(found.skipped.values())
    click.echo(
        f"judge import: {len(found.cases)} cases from {found.calls} LLM calls; {skipped} "
        f"records that are not LLM calls skipped; {len(found.problems)} records unreadable",
        err=True,
    )


def imported(fmt: Format, files: tuple[str, ...], per: Per, command: str) -> list[Imported]:
    """The cases of each trace file; each unreadable record said on standard error (file:line
    and why); exit 2 only when nothing at all could be read."""
    found = [import_traces(fmt, (path,), per) for path in files]
    for problem in (p for each in found for p in each.problems):
        click.echo(f"judge {command}: skipped {problem.source}: {problem.why}", err=True)
    if not any(each.cases for each in found) and any(each.problems for each in found):
        click.echo(f"judge {command}: nothing could be read from {', '.join(files)}", err=True)
        sys.exit(EXIT_UNREADABLE)
    return found


COMMANDS = (import_command,)
