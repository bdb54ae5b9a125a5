"""`judge label`: an interactive terminal labeller that saves after every answer and resumes
where it stopped."""

from __future__ import annotations

from typing import Any

import click

from judge.calibrate._sample import read_lines
from judge.cases._case import Case
from judge.cases._files import write_atomically
from judge.cases._json import dumps, loads
from judge.checks._check import check_case
from judge.judging._prompt import rubric_variables
from judge.judging._questions import ends_in_text

_SELECTION = {"c": "correct", "i": "incorrect"}
_ARGUMENTS = {"c": "correct", "i": "incorrect", "n": None}


def label_file(path: str, *, relabel: bool = False) -> tuple[int, int]:
    """Ask for the labels of every case not yet labelled. Returns (labelled now, left)."""
    raw, cases = read_lines(path)
    rows: list[dict[str, Any]] = [loads(line) for line in raw]
    todo = [i for i, row in enumerate(rows) if relabel or not _done(row, cases[i])]
    done_now = 0
    for position, index in enumerate(todo, start=1):
        row, case = rows[index], cases[index]
        labels = dict(row.get("labels") or {})
        _show(case, position, len(todo))
        if relabel or "selection" not in labels:
            answer = _ask("selection: [c]orrect, [i]ncorrect, [s]kip, [q]uit", "cisq")
            if answer == "q":
                return done_now, len(todo) - position + 1
            if answer == "s":
                continue
            labels["selection"] = _SELECTION[answer]
            labels.pop("arguments", None)
            row["labels"] = labels
            _save(path, rows)
        if case.tool_calls and "arguments" not in labels:
            answer = _ask(
                "arguments: [c]orrect, [i]ncorrect, [n]ot applicable (nothing to judge), [q]uit",
                "cinq",
            )
            if answer == "q":
                return done_now, len(todo) - position + 1
            labels["arguments"] = _ARGUMENTS[answer]
            row["labels"] = labels
            _save(path, rows)
        if ends_in_text(case) and (relabel or "answer" not in labels):
            answer = _ask("answer (the final reply): [c]orrect, [i]ncorrect, [q]uit", "ciq")
            if answer == "q":
                return done_now, len(todo) - position + 1
            labels["answer"] = _SELECTION[answer]
            row["labels"] = labels
            _save(path, rows)
        done_now += 1
    return done_now, 0


def _done(row: dict[str, Any], case: Case) -> bool:
    # A case with calls needs both answers (`n` is saved as `arguments: null`), and a text
    # reply its answer label: one left at a later question, by quitting there, is asked again
    # (only what it lacks).
    labels = row.get("labels") or {}
    return (
        "selection" in labels
        and (not case.tool_calls or "arguments" in labels)
        and (not ends_in_text(case) or "answer" in labels)
    )


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


def _save(path: str, rows: list[dict[str, Any]]) -> None:
    write_atomically(path, b"".join(dumps(r) + b"\n" for r in rows))
