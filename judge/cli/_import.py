"""`judge import`: LLM calls recorded in production (OpenTelemetry spans, proxy logs) as cases."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

import click

from judge.cli._common import EXIT_UNREADABLE, require_files
from judge.cli._matching import trace_reading, trace_reading_options
from judge.cli._paths import refuse_overlaps
from judge.traces import FORMATS, Imported
from judge.traces._documents import Reading
from judge.traces._ids import UniqueIds
from judge.traces._import import Format, Per, iter_import


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
@trace_reading_options
def import_command(fmt: str, files: tuple[str, ...], output: str | None, per: str) -> None:
    """Convert FILES in FORMAT into cases: `otel` (OTLP JSON as the Collector's file exporter
    writes it, or the Python SDK's span JSON; OpenInference or GenAI attributes), `langsmith`
    (runs as JSON lines), `inspect` (Inspect AI logs, .eval or .json), `openai` (proxy logs: one
    {"request", "response"} object per line)."""
    require_files(files)
    refuse_overlaps()
    from judge.cases._json import dumps
    from judge.cases._parquet import output_sink

    reader = TraceReader(fmt, "import", per)  # type: ignore[arg-type]
    with output_sink(output) as sink:
        for case in reader.cases(files):  # written as it is made: memory stays flat
            sink.write(dumps(case) + b"\n")
    reader.finish()
    click.echo(
        f"judge import: {reader.made} cases from {reader.calls} LLM calls; {reader.skipped} "
        f"records that are not LLM calls skipped; {reader.problems} records unreadable",
        err=True,
    )


class TraceReader:
    """Trace files read as cases, one case at a time (a file is never held whole): each
    unreadable record said on standard error (file:line and why) once its files are read;
    ids unique across all the files read, those made so said by `finish`, which exits 2 when
    a file gave no LLM call (once every other file is read and written)."""

    def __init__(
        self, fmt: str, command: str, per: Per = "call", reading: Reading | None = None
    ) -> None:
        self.fmt: Format = fmt  # type: ignore[assignment]
        self.command = command
        self.per = per
        self.reading = reading or trace_reading()
        self.made = self.calls = self.skipped = self.problems = 0
        self.ids = UniqueIds()
        self.unusable: list[str] = []
        """The files that gave no LLM call."""

    def cases(self, files: tuple[str, ...]) -> Iterator[dict[str, Any]]:
        found = Imported(ids=self.ids, reading=self.reading)
        for case in iter_import(self.fmt, files, found, self.per):
            self.made += 1
            yield case
        self.calls += found.calls
        self.skipped += sum(found.skipped.values())
        self.problems += len(found.problems)
        self.unusable += [path for path in files if not found.per_file[path]]
        for problem in found.problems:
            click.echo(f"judge {self.command}: skipped {problem.source}: {problem.why}", err=True)

    def spooled(self, path: str) -> BinaryIO:
        """The cases of `path` as a JSON Lines stream, spooled to disk past 16 MB."""
        from judge.cases._json import dumps

        spool = tempfile.SpooledTemporaryFile(max_size=16 << 20)  # noqa: SIM115 (returned)
        for case in self.cases((path,)):
            spool.write(dumps(case) + b"\n")
        spool.seek(0)
        return cast(BinaryIO, spool)

    def finish(self) -> None:
        said = self.ids.said()
        if said is not None:
            click.echo(f"judge {self.command}: {said}", err=True)
        if self.unusable:
            click.echo(
                f"judge {self.command}: nothing could be read from {', '.join(self.unusable)}: "
                "no LLM call in it (the lines above say why)",
                err=True,
            )
            sys.exit(EXIT_UNREADABLE)


COMMANDS = (import_command,)
