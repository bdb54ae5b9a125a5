"""`judge label`: an interactive terminal labeller that saves after every answer and resumes
where it stopped."""

from __future__ import annotations

from typing import Any

import click

from judge.calibrate._labels import NOT_APPLICABLE, LabelFile, label_state, user_name
from judge.cases._case import Case
from judge.cases._json import dumps
from judge.checks._check import check_case
from judge.judging._prompt import rubric_variables
from judge.judging._questions import ends_in_text

_SELECTION = {"c": "correct", "i": "incorrect"}
_ARGUMENTS = {"c": "correct", "i": "incorrect", "n": NOT_APPLICABLE}


def label_file(path: str, *, relabel: bool = False) -> tuple[int, int]:
    """Ask for the labels of every case not yet labelled. Returns (labelled now, left).
    Each answer is written at once, to that case's line only (`LabelFile`), so labels given
    meanwhile elsewhere (`judge review`) are kept."""
    file = LabelFile(path)
    rows, cases = file.read()
    todo = [i for i, row in enumerate(rows) if relabel or not _done(row, cases[i])]
    reviewer = user_name()
    done_now = 0
    for position, index in enumerate(todo, start=1):
        case = cases[index]
        labels = dict(rows[index].get("labels") or {})
        _show(case, position, len(todo))

        def save(changes: dict[str, str | None], case_id: str = case.id) -> dict[str, Any]:
            return dict(file.write(case_id, changes, reviewer=reviewer).row["labels"])

        if relabel or "selection" not in labels:
            answer = _ask("selection: [c]orrect, [i]ncorrect, [s]kip, [q]uit", "cisq")
            if answer == "q":
                return done_now, len(todo) - position + 1
            if answer == "s":
                continue
            labels = save({"selection": _SELECTION[answer], "arguments": None})
        if case.tool_calls and "arguments" not in labels:
            answer = _ask(
                "arguments: [c]orrect, [i]ncorrect, [n]ot applicable (nothing to judge), [q]uit",
                "cinq",
            )
            if answer == "q":
                return done_now, len(todo) - position + 1
            labels = save({"arguments": _ARGUMENTS[answer]})
        if ends_in_text(case) and (relabel or "answer" not in labels):
            answer = _ask("answer (the final reply): [c]orrect, [i]ncorrect, [q]uit", "ciq")
            if answer == "q":
                return done_now, len(todo) - position + 1
            labels = save({"answer": _SELECTION[answer]})
        done_now += 1
    return done_now, 0


def _done(row: dict[str, Any], case: Case) -> bool:
    # A case left at a later question, by quitting there, is asked again (only what it lacks).
    return label_state(row.get("labels"), case) == "labelled"


def _ask(prompt: str, keys: str) -> str:
    while True:
        answer = click.prompt(prompt, default="", show_default=False).strip().lower()[:1]
        if answer and answer in keys:
            return answer
        click.echo(f"  please answer one of: {', '.join(keys)}")


def _show(case: Case, position: int, total: int) -> None:
    variables = rubric_variables(case, check_case(case))
    click.echo("")
    click.secho(f"=== [{position}/{total}] {case.id} ===", bold=True)
    click.secho("tools:", bold=True)
    for tool in variables["tools"]:
        click.echo(f"  - {tool['name']}: {(tool['description'] or '')[:120]}")
    click.secho("conversation:", bold=True)
    for message in variables["conversation"]:
        content = message["content"]
        if content:
            text = content if isinstance(content, str) else dumps(content).decode()
            click.echo(f"  [{message['role']}] {text}")
        if message["tool_calls"]:
            click.echo(f"  [{message['role']} calls] {dumps(message['tool_calls']).decode()}")
    click.secho("response:", bold=True)
    if variables["response_text"]:
        click.echo(f"  text: {variables['response_text']}")
    for call in variables["calls"]:
        arguments = call["arguments"]
        shown = arguments if isinstance(arguments, str) else dumps(arguments).decode()
        click.echo(f"  call #{call['index']}: {call['name']} {shown}")
    if not variables["calls"]:
        click.echo("  (no tool call)")
    for finding in variables["findings"]:
        click.echo(
            f"  ! call #{finding['call']} {finding['kind']} {finding['path']}: {finding['message']}"
        )
