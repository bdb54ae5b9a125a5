"""What the command-line modules share: exit codes, the judge options, small helpers."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

import click

from judge._errors import JudgeError
from judge._result import CaseResult
from judge._summary import Summary
from judge._verdict import DEFAULT_SEED

if TYPE_CHECKING:
    from judge._grade import Judge

EXIT_BELOW_THRESHOLD = 1
EXIT_UNREADABLE = 2
EXIT_GATE = 3
EXIT_ENDPOINT = 4

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


def stack_options(*options: Callable[..., Any]) -> Callable[..., Any]:
    """One decorator applying click options in the order given (the first listed first)."""

    def apply(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


# The options that fix a judge; shared by every command that runs one.
judge_options = stack_options(
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
        help="Where verdicts are cached (default: JUDGE_CACHE_DIR, else the user cache folder).",
    ),
    click.option("--no-cache", is_flag=True, help="Neither read nor write the cache."),
    click.option(
        "--judge-broken",
        is_flag=True,
        help="Ask the judge about calls that already failed structurally too.",
    ),
)


# --calibration, --strict and --force: the gate of every command that runs a judge.
calibration_options = stack_options(
    click.option(
        "--calibration",
        type=click.Path(dir_okay=False),
        help="A record from `judge calibrate`: refuse (exit 3) a judge that differs from "
        "the calibrated one or whose kappa is under the record's threshold.",
    ),
    click.option(
        "--strict",
        is_flag=True,
        help="With --calibration: the kappa's 95% interval lower bound must clear it.",
    ),
    click.option(
        "--force",
        is_flag=True,
        help="With --calibration: run anyway, every verdict marked trusted: false.",
    ),
)


def make_judge(options: dict[str, Any]) -> Judge:
    extra = options.pop("extra_body")
    try:
        extra_body = json.loads(extra) if extra else None
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"--extra-body is not JSON: {exc}") from None
    no_cache = options.pop("no_cache")
    from judge._grade import Judge  # the OpenAI SDK: only for commands that judge

    return Judge(extra_body=extra_body, cache=not no_cache, **options)


def judge_for(
    command: str,
    options: dict[str, Any],
    *,
    calibration: str | None = None,
    strict: bool = False,
    force: bool = False,
) -> Judge:
    """The judge that the judge options and the trajectory options describe, past the
    calibration gate when a record is given (exit 2 on bad options, 3 when refused)."""
    from judge._cli_match import trajectory_from

    try:
        match, env = trajectory_from(options)
        judge = make_judge({**options, "match": match, "env": env})
    except (JudgeError, ValueError) as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if calibration is not None:
        judge.trusted = gate_judge(judge, calibration, strict=strict, force=force, command=command)
    return judge


def gate_judge(judge: Judge, path: str, *, strict: bool, force: bool, command: str) -> bool:
    """Whether the judge's verdicts are trusted; exits 3 when the record refuses it."""
    from judge._calibration import GateRefusal, check_gate, load_record

    try:
        record = load_record(path)
        check_gate(record, judge.fingerprint(), strict=strict or record.strict, source=path)
    except GateRefusal as exc:
        if not force:
            click.echo(f"judge {command}: refused: {exc}", err=True)
            sys.exit(EXIT_GATE)
        click.echo(f"judge {command}: --force: running untrusted: {exc}", err=True)
        return False
    return True


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


def report_invalid(result: CaseResult) -> None:
    for failure in result.failures:
        if failure.kind.value == "InvalidCase":
            click.echo(f"judge check: skipped {failure.message}", err=True)


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
