"""`judge probe`: how often the judge's verdicts flip under changes that must not matter."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import click

from judge._errors import InputError, JudgeError
from judge.cases._case import Case
from judge.cases._loading import load_cases
from judge.cli._common import (
    EXIT_ENDPOINT,
    EXIT_UNREADABLE,
    report_skipped,
    require_files,
    summary_format_option,
)
from judge.cli._judge_options import abstention_options, judge_for, judge_options
from judge.cli._matching import trajectory_options
from judge.endpoints._client import JudgeEndpointError
from judge.judging._grade import Judge
from judge.judging._probes import PROBES, ProbeStats, probe

SHOWN_CASES = 10


def probe_names(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in PROBES]
    if unknown or not names:
        raise click.BadParameter(f"{', '.join(unknown) or value!r}: one of {', '.join(PROBES)}")
    return names


@click.command("probe")
@click.argument("cases", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--probes",
    default=",".join(PROBES),
    show_default=True,
    callback=probe_names,
    help="Comma-separated changes that must not change a verdict: tool_order (the tools "
    "reversed), call_order (the calls reversed), call_ids (ids renamed), key_order (argument "
    "keys reversed).",
)
@summary_format_option
@judge_options
@abstention_options
@trajectory_options
def probe_command(
    cases: tuple[str, ...], probes: list[str], summary_format: str, **judge_options: Any
) -> None:
    """Ask the judge CASES as they are and as each probe changes them; report each probe's
    flip rate and the cases that flipped."""
    require_files(cases)
    judge = judge_for("probe", judge_options)
    loaded: list[Case] = []
    for path in cases:
        try:
            found = load_cases(path)
        except InputError as exc:
            click.echo(f"judge probe: {exc}", err=True)
            sys.exit(EXIT_UNREADABLE)
        report_skipped("probe", (str(error) for error in found.errors))
        loaded.extend(found)
    try:
        stats = asyncio.run(_probe(judge, loaded, probes))
    except JudgeEndpointError as exc:
        click.echo(f"judge probe: {exc}", err=True)
        sys.exit(EXIT_ENDPOINT)
    except JudgeError as exc:
        click.echo(f"judge probe: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if summary_format == "json":
        click.echo(json.dumps({"cases": len(loaded), "probes": [s.to_dict() for s in stats]}))
    else:
        click.echo(probe_table(stats, len(loaded)))


async def _probe(judge: Judge, cases: list[Case], probes: list[str]) -> list[ProbeStats]:
    async with judge:
        return await probe(judge, cases, probes)


def probe_table(stats: list[ProbeStats], cases: int) -> str:
    """The probes' report as text: a row per probe, then the cases each one flipped."""
    lines = [
        f"{cases} cases",
        f"{'probe':<12}{'applied':>9}{'flipped':>9}{'flip rate':>11}{'not compared':>14}",
    ]
    for s in stats:
        rate = "n/a" if s.flip_rate is None else f"{s.flip_rate:.1%}"
        lines.append(
            f"{s.probe:<12}{s.applied:>9}{len(s.flipped):>9}{rate:>11}{s.not_compared:>14}"
        )
    for s in stats:
        if s.flipped:
            shown = ", ".join(s.flipped[:SHOWN_CASES])
            more = (
                f" and {len(s.flipped) - SHOWN_CASES} more" if len(s.flipped) > SHOWN_CASES else ""
            )
            lines.append(f"flipped by {s.probe}: {shown}{more}")
    return "\n".join(lines)


COMMANDS = (probe_command,)
