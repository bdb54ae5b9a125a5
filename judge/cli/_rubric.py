"""`judge rubric`: inspect the rubrics, and what one would send for a case."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from judge._errors import JudgeError
from judge.cases._calls import ShapeError
from judge.cases._loading import load_cases
from judge.cli._common import EXIT_UNREADABLE
from judge.judging._grade import Judge
from judge.judging._rubric import load_rubrics


@click.group("rubric")
def rubric_group() -> None:
    """Inspect rubrics."""


@rubric_group.command("list")
@click.option("--rubrics", type=click.Path(file_okay=False, exists=True))
@click.option("--small", is_flag=True, help="The small JSON rubrics (rubrics/small).")
@click.option("--quick", is_flag=True, help="The embedded judge's scored rubrics (rubrics/quick).")
def rubric_list(rubrics: str | None, small: bool, quick: bool) -> None:
    """List the rubrics with their version and content hash."""
    found = load_rubrics(rubrics, kind="quick" if quick else "small" if small else "default")
    for rubric in found.all:
        click.echo(
            f"{rubric.name}\t{rubric.dimension}\tv{rubric.version}\t"
            f"{rubric.sha256[:12]}\t{rubric.path}"
        )


@rubric_group.command("show")
@click.argument("name")
@click.option("--case", "case_file", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--id", "case_id", required=True, help="The case to render.")
@click.option("--rubrics", type=click.Path(file_okay=False, exists=True))
@click.option("--small", is_flag=True, help="The small JSON rubrics (rubrics/small).")
@click.option("--model", help="The judge, as for `judge grade` (it picks the rubric set).")
@click.option("--base-url", help="The judge's endpoint, as for `judge grade`.")
@click.option("--judge-broken", is_flag=True)
def rubric_show(
    name: str,
    case_file: str,
    case_id: str,
    rubrics: str | None,
    small: bool,
    model: str | None,
    base_url: str | None,
    judge_broken: bool,
) -> None:
    """Print exactly what rubric NAME would send for one case: messages and reply schema.
    The rubric set is the one `judge grade` would use with the same --model, --base-url and
    --rubrics (the quick set for the embedded judge)."""
    case = next((c for c in load_cases(case_file) if c.id == case_id), None)
    if case is None:
        click.echo(f"judge rubric show: no case {case_id!r} in {case_file}", err=True)
        sys.exit(EXIT_UNREADABLE)
    try:
        chosen = load_rubrics(kind="small") if small and rubrics is None else rubrics
        settings: dict[str, Any] = {
            "model": model,
            "base_url": base_url,
            "judge_broken": judge_broken,
            "cache": False,
        }
        judge = Judge(rubrics=chosen, **settings)
        rubric = judge.rubrics.named(name)
        if rubric.dimension == "trajectory":  # asked only of a judge that judges trajectories
            judge = Judge(rubrics=judge.rubrics, trajectory=True, **settings)
        questions = judge.questions(case, judge.check(case)).questions
    except (JudgeError, ShapeError) as exc:  # no such rubric, or it cannot render the case
        click.echo(f"judge rubric show: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    asked = [q for q in questions if q.rubric is rubric]
    if not asked:
        click.echo(
            f"# rubric {rubric.name!r} would send nothing for case {case_id!r}: its "
            "verdicts are decided without asking (see `judge check`)."
        )
        return
    for question in asked:
        if rubric.scored:  # the case once, then each one-token question asked after it
            from judge.judging._scored import asks

            for message in question.messages:
                click.echo(f"===== {message['role']} =====")
                click.echo(message["content"])
            for ask in asks(rubric, question.messages, question.calls):
                click.echo(
                    f"===== question {ask.id} (one token: logprobs of {rubric.answers}) ====="
                )
                click.echo(ask.messages[-1]["content"].rsplit("\n\nQuestion: ", 1)[1])
            continue
        for message in question.messages:
            click.echo(f"===== {message['role']} =====")
            click.echo(message["content"])
        click.echo("===== reply schema =====")
        click.echo(json.dumps(question.schema, indent=2))


COMMANDS = (rubric_group,)
