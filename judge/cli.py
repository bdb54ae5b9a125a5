"""The `judge` command line: parse options, call the library, print."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import IO

import click
import orjson

from judge._check import iter_check
from judge._errors import InputError
from judge._result import CaseResult
from judge._summary import Summary

EXIT_BELOW_THRESHOLD = 1
EXIT_UNREADABLE = 2


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
    for path in cases:  # refuse before writing anything
        if path != "-" and not os.path.isfile(path):
            why = "is a directory" if os.path.isdir(path) else "no such file"
            click.echo(f"judge check: {path}: cannot read cases: {why}", err=True)
            sys.exit(EXIT_UNREADABLE)
    summary = Summary()
    to_stdout = output in (None, "-")
    try:
        with ExitStack() as stack:
            sink: IO[bytes] = (
                sys.stdout.buffer if to_stdout else stack.enter_context(open(output or "", "wb"))
            )
            show = progress if progress is not None else sys.stderr.isatty()
            for path in cases:
                results = iter_check(path)
                if show and os.path.isfile(path):
                    results = stack.enter_context(_progress(path, results))
                for result in results:
                    summary.add(result)
                    sink.write(
                        orjson.dumps(result.to_json_dict(), option=orjson.OPT_APPEND_NEWLINE)
                    )
                    _report_invalid(result)
            sink.flush()
    except InputError as exc:
        click.echo(f"judge check: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    except OSError as exc:
        click.echo(f"judge check: cannot write {output}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_UNREADABLE)

    stream = sys.stderr if to_stdout else sys.stdout
    if summary_format == "json":
        stream.write(json.dumps(summary.to_dict(), indent=2) + "\n")
    else:
        summary.print_table(stream)
    if fail_under is not None:
        rate = summary.pass_rate
        if rate is None or rate < fail_under:
            shown = "no gradable case" if rate is None else f"pass rate {rate:.1%}"
            click.echo(f"judge check: {shown} is under --fail-under {fail_under:.1%}", err=True)
            sys.exit(EXIT_BELOW_THRESHOLD)


def _report_invalid(result: CaseResult) -> None:
    for failure in result.failures:
        if failure.kind.value == "InvalidCase":
            click.echo(f"judge check: skipped {failure.message}", err=True)


@contextmanager
def _progress(path: str, results: Iterator[CaseResult]) -> Iterator[Iterator[CaseResult]]:
    """A progress bar on standard error, over the file's line count."""
    from rich.console import Console
    from rich.progress import Progress

    with open(path, "rb") as handle:
        total = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(os.path.basename(path), total=total or None)

        def advance() -> Iterator[CaseResult]:
            for seen, result in enumerate(results, start=1):
                if seen % 256 == 0:
                    bar.update(task, completed=seen)
                yield result

        yield advance()


if __name__ == "__main__":
    main()
