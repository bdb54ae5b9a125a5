"""What the command-line modules share: exit codes, option helpers, printing."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, NoReturn, Protocol

import click
from click.core import ParameterSource

from judge.checks._kinds import FailureKind
from judge.checks._summary import Summary

if TYPE_CHECKING:
    from judge.cases._shared_tools import SharedTools
    from judge.checks._result import CaseResult

EXIT_BELOW_THRESHOLD = 1
EXIT_UNREADABLE = 2
EXIT_GATE = 3
EXIT_ENDPOINT = 4


class Refusal(Protocol):
    def __call__(self, message: str, code: int = EXIT_UNREADABLE) -> NoReturn: ...


def refuser(command: str) -> Refusal:
    """How `command` refuses: its name and the message on standard error, then exit `code`
    (2, unreadable input, unless said otherwise)."""

    def refuse(message: str, code: int = EXIT_UNREADABLE) -> NoReturn:
        click.echo(f"{command}: {message}", err=True)
        sys.exit(code)

    return refuse


summary_format_option = click.option(
    "--format",
    "summary_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="How to print the summary.",
)


def parse_rate(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
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


_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(ctx: click.Context, param: click.Parameter, value: str | int | None) -> int | None:
    """Bytes from `1048576`, `512K`, `32M`, `32MiB`, `1G` (None: not given)."""
    if value is None:
        return None
    found = _SIZE.match(str(value))
    if found is None:
        raise click.BadParameter(f"{value!r} is not a size (e.g. 32M or 1048576)")
    size = int(found[1]) * _UNITS[(found[2] or "").lower()[:1]]
    if size < 1:
        raise click.BadParameter("must be at least 1 byte")
    return size


def drop_empty(created: str | None) -> None:
    """The output this run created, removed when nothing is in it (every input refused, or
    empty): a refused run leaves no file behind."""
    if created is not None and os.path.isfile(created) and not os.path.getsize(created):
        os.remove(created)


def empty_inputs(paths: list[str]) -> str:
    """Why a run that read inputs without a case in them is refused (exit 2)."""
    names = ", ".join("standard input" if p == "-" else p for p in paths)
    return f"no case in {names} (an empty input): nothing there was graded"


def stack_options(*options: Callable[..., Any]) -> Callable[..., Any]:
    """One decorator applying click options in the order given (the first listed first)."""

    def apply(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def require_files(paths: tuple[str, ...]) -> None:
    for path in paths:  # refuse before writing anything
        if path != "-" and not os.path.isfile(path):
            why = "is a directory" if os.path.isdir(path) else "no such file"
            click.echo(f"judge: {path}: cannot read cases: {why}", err=True)
            sys.exit(EXIT_UNREADABLE)


def print_summary(summary: Summary, summary_format: str, stream: IO[str]) -> None:
    if summary_format == "json":
        stream.write(json.dumps(summary.to_dict(), indent=2) + "\n")
    else:
        summary.print_table(stream)


def invalid_messages(result: CaseResult) -> list[str]:
    """What a result says of a case that could not be read (none for a readable case)."""
    return [f.message for f in result.failures if f.kind is FailureKind.INVALID_CASE]


def report_skipped(command: str, messages: Iterable[str]) -> None:
    """Say on standard error which cases could not be read (each is an `InvalidCase`)."""
    for message in messages:
        click.echo(f"judge {command}: skipped {message}", err=True)


@contextmanager
def progress_bar(label: str, total: int | None, show: bool) -> Iterator[Callable[[int], None]]:
    """A transient progress bar on standard error (when `show`); yields `advance(n)`."""
    if not show:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total or None)
        yield lambda n: bar.advance(task, n)


def line_count(path: str) -> int | None:
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


ray_option = click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="local",
    default=None,
    metavar="[ADDRESS]",
    help="Run on a Ray cluster (the `ray` extra): its address (ray://..., auto), or none for "
    "a local one. Put it after CASES.",
)


tools_option = click.option(
    "--tools",
    "tools_file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Tools for every case that has none of its own (a case's own tools win): a JSON "
    "array in any form a case's tools takes (OpenAI, Responses, Anthropic, MCP), or an MCP "
    "tools/list result.",
)


fresh_option = click.option(
    "--fresh",
    is_flag=True,
    help="Start over: ignore what -o holds and replace it (never an input: that is refused).",
)


def shared_tools(path: str | None, command: str) -> SharedTools | None:
    """The tools of `--tools FILE` (None without it); exit 2 naming the file, and the JSON
    pointer of the tool at fault, when it cannot be read."""
    if path is None:
        return None
    from judge._errors import InputError
    from judge.cases._shared_tools import SharedTools

    try:
        return SharedTools.read(path)
    except InputError as exc:
        refuser(f"judge {command}")(f"--tools {exc}")


RENAMED_ON = "2026-12-03"
"""When options were renamed so that one name means one thing in every command."""
FORMER_NAMES_UNTIL = "2027-06-01"
"""Until when the former names still work, with a warning."""


def renamed_option(
    *param_decls: str, was: str, since: str, until: str, **attrs: Any
) -> Callable[..., Any]:
    """`click.option(*param_decls, **attrs)` that still takes its former spelling `was` (for a
    single-valued option, not a required one) until the date `until`: hidden from --help, it
    warns on standard error when used, and giving both spellings is a usage error (exit 2)."""
    new = max((d for d in param_decls if d.startswith("--")), key=len)
    then = attrs.pop("callback", None)
    key = f"judge.cli.renamed:{was}"
    flag = bool(attrs.get("is_flag"))

    def take_old(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value if flag else value is not None:
            click.echo(
                f"{_command_name(ctx)}: {was} is deprecated since {since} and will be removed "
                f"after {until}: use {new}",
                err=True,
            )
            ctx.meta[key] = value

    def merge(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if key in ctx.meta:  # set by the former spelling's callback, which is eager: run first
            if ctx.get_parameter_source(str(param.name)) is ParameterSource.COMMANDLINE:
                raise click.UsageError(f"give {new} or {was} (its former name), not both", ctx)
            value = ctx.meta.pop(key)
        return then(ctx, param, value) if then is not None else value

    help_text = attrs.pop("help", "").rstrip()
    former = f"Formerly {was} (deprecated; removed after {until})."
    return stack_options(
        click.option(*param_decls, callback=merge, help=f"{help_text} {former}".lstrip(), **attrs),
        click.option(
            was,
            type=None if flag else attrs.get("type"),
            is_flag=flag,
            default=None,
            hidden=True,
            is_eager=True,
            expose_value=False,
            callback=take_old,
        ),
    )


def strict_interval_option(help: str) -> Callable[..., Any]:
    """`--strict-interval` (the calibration's kappa interval must clear the threshold), whose
    former name `--strict` now means strict reading in `judge check` and `judge grade`."""
    return renamed_option(
        "--strict-interval",
        "strict",
        was="--strict",
        since=RENAMED_ON,
        until=FORMER_NAMES_UNTIL,
        is_flag=True,
        help=help,
    )


def _command_name(ctx: click.Context) -> str:
    """`judge COMMAND`, whatever name the program was invoked by (`python -m judge`, too)."""
    names: list[str] = [] if ctx.parent is not None else [ctx.info_name or ""]  # a lone command
    while ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["judge", *reversed(names)])


def end_on_closed_pipe() -> NoReturn:
    """Whoever read standard output has gone (`judge check f.jsonl | head`): end quietly with
    exit 0, as `head` expects, standard output pointed at /dev/null so that nothing left in
    its buffer fails again at exit."""
    with contextlib.suppress(OSError, ValueError):  # ValueError: no descriptor (a capture)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(0)
