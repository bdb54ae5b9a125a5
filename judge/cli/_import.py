"""`judge import`: LLM calls recorded in production (OpenTelemetry spans, proxy logs) as cases."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

import click

from judge.cli._common import EXIT_UNREADABLE, require_files
from judge.traces import FORMATS, Imported, import_traces
from judge.traces._import import Format, iter_import


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


class TraceReader:
    """Trace files read as cases for `--from`, one case at a time (a file is never held whole):
    each unreadable record said on standard error (file:line and why) once its file is read;
    `finish` exits 2 only when nothing at all could be read."""

    def __init__(self, fmt: str, command: str) -> None:
        self.fmt: Format = fmt  # type: ignore[assignment]
        self.command = command
        self.cases = 0
        self.problems = 0

    def cases_of(self, path: str) -> Iterator[dict[str, Any]]:
        found = Imported()
        for case in iter_import(self.fmt, (path,), found):
            self.cases += 1
            yield case
        self.problems += len(found.problems)
        for problem in found.problems:
            click.echo(f"judge {self.command}: skipped {problem.source}: {problem.why}", err=True)

    def spooled(self, path: str) -> BinaryIO:
        """The cases of `path` as a JSON Lines stream, spooled to disk past 16 MB."""
        from judge.cases._json import dumps

        spool = tempfile.SpooledTemporaryFile(max_size=16 << 20)  # noqa: SIM115 (returned)
        for case in self.cases_of(path):
            spool.write(dumps(case) + b"\n")
        spool.seek(0)
        return cast(BinaryIO, spool)

    def finish(self, files: tuple[str, ...]) -> None:
        if not self.cases and self.problems:
            click.echo(
                f"judge {self.command}: nothing could be read from {', '.join(files)}", err=True
            )
            sys.exit(EXIT_UNREADABLE)


COMMANDS = (import_command,)
