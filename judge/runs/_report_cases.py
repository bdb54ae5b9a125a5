"""What went wrong, shown: each model's structural error rates and the cases it failed, in the
terminal (the first few per model) and in the HTML report (every one, each row opening the
case's calls, failures, final state and judge verdicts; a case another model passes is
marked)."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from judge.runs._failing import STRUCTURAL, FailingCase, Rate

if TYPE_CHECKING:
    from rich.console import Console

    from judge.runs._compare import Comparison, PairedDifference

SHOWN = 5
"""Failing cases the terminal lists per model."""
_MESSAGE = 90  # characters of a failure's message in the terminal


def print_failures(comparison: Comparison, console: Console) -> None:
    from rich.table import Table

    rates = Table(
        title="structural errors, share of calls (95% Wilson interval over calls; no reference "
        "needed)",
        title_justify="left",
    )
    for name in ("model", "calls", *STRUCTURAL):
        rates.add_column(name, justify="left" if name == "model" else "right")
    for stats in comparison.models:
        found = stats.structural
        if found is None:
            continue
        rates.add_row(stats.model, str(found.calls), *(_rate(found.rates[k]) for k in STRUCTURAL))
    console.print(rates)
    if comparison.structural_pairs:
        title = "paired differences in the share of structurally broken calls (bootstrap over "
        console.print(pairs_table(comparison.structural_pairs, title + "common cases)", sure=False))
    failing = Table(title=f"failing cases (the first {SHOWN} per model)", title_justify="left")
    for name in ("model", "case", "run", "kinds", "first failure"):
        failing.add_column(name, justify="right" if name == "run" else "left")
    for stats in comparison.models:
        for case in stats.failing[:SHOWN]:
            message = case.message[:_MESSAGE] + ("..." if len(case.message) > _MESSAGE else "")
            failing.add_row(stats.model, case.id, str(case.run), ", ".join(case.kinds), message)
        if len(stats.failing) > SHOWN:
            more = len(stats.failing) - SHOWN
            failing.add_row(stats.model, f"... {more} more (--format json)", "", "", "")
    if failing.row_count:
        console.print(failing)


def pairs_table(pairs: list[PairedDifference], title: str, *, sure: bool) -> Any:
    """Paired differences as a table (`sure`: with a column saying whether zero is out)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name in ("a", "b", "cases", "a - b", "95% CI", *([""] if sure else [])):
        table.add_column(name, justify="left" if name in ("a", "b") else "right")
    for pair in pairs:
        d = pair.difference
        cells = [
            pair.a,
            pair.b,
            str(pair.cases),
            "n/a" if d is None else f"{d.value:+.1%}",
            "n/a" if d is None else f"[{d.low:+.1%}, {d.high:+.1%}]",
        ]
        table.add_row(*cells, *(["sure" if pair.significant else "not sure"] if sure else []))
    return table


def failures_html(comparison: Comparison) -> list[str]:
    """The structural rates table, then a table of failing cases per model."""
    parts = ["<h2>Structural errors</h2><table><tr><th>model</th><th>calls</th>"]
    parts += [f"<th>{kind}</th>" for kind in STRUCTURAL]
    parts.append("</tr>")
    for stats in comparison.models:
        if stats.structural is not None:
            cells = [stats.model, str(stats.structural.calls)]
            cells += [_rate(stats.structural.rates[kind]) for kind in STRUCTURAL]
            parts.append(_row(cells))
    parts.append("</table><h2>Failing cases</h2>")
    passed_by = {
        case: [m.model for m in comparison.models if m.per_case.get(case, 0) > 0]
        for stats in comparison.models
        for case in {f.id for f in stats.failing}
    }
    for stats in comparison.models:
        parts.append(f"<h3>{html.escape(stats.model)}: {len(stats.failing)} failed runs</h3>")
        if not stats.failing:
            continue
        parts.append(
            f"<table class='failing' data-model='{html.escape(stats.model)}'><tr><th>case</th>"
            "<th>run</th><th>kinds</th><th>first failure, and the run</th></tr>"
        )
        for case in stats.failing:
            others = [m for m in passed_by.get(case.id, []) if m != stats.model]
            parts.append(_failing_row(case, others))
        parts.append("</table>")
    return parts


def _failing_row(case: FailingCase, others: list[str]) -> str:
    mark = (
        f" <span class='fail' title='passed by {html.escape(', '.join(others))}'>passes for "
        f"{html.escape(', '.join(others))}</span>"
        if others
        else ""
    )
    details = "".join(
        f"<h4>{html.escape(title)}</h4><pre>{html.escape(_json(value))}</pre>"
        for title, value in _details(case)
    )
    return (
        f"<tr data-case='{html.escape(case.id)}'><td>{html.escape(case.id)}{mark}</td>"
        f"<td>{case.run}</td><td>{html.escape(', '.join(case.kinds))}</td><td><details>"
        f"<summary>{html.escape(case.message or 'failed')}</summary>{details}</details></td></tr>"
    )


def _details(case: FailingCase) -> list[tuple[str, Any]]:
    """What a failing run's row opens: its calls, failures, final state and verdicts."""
    record = case.record
    shown: list[tuple[str, Any]] = []
    if record.transcript is not None:
        calls = [m.get("tool_calls") for m in record.transcript if isinstance(m, dict)]
        shown.append(("calls", [c for turn in calls if turn for c in turn]))
    elif isinstance(record.response, dict):
        choices = record.response.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else {}
        message = first.get("message") if isinstance(first, dict) else None
        shown.append(("reply", message))
    shown.append(("failures", [f.model_dump() for f in record.failures]))
    diff = [f"{f.path}: {f.message}" for f in record.failures if f.kind == "StateMismatch"]
    if diff:
        shown.append(("final-state diff (against the reference's)", diff))
    if record.final_state is not None:
        shown.append(("final state", record.final_state))
    if record.judge is not None:
        shown.append(("judge verdicts", record.judge.model_dump(mode="json", exclude_none=True)))
    return shown


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _row(cells: list[str]) -> str:
    return "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"


def _rate(rate: Rate | None) -> str:
    if rate is None:
        return "n/a"
    return f"{rate.value:.1%} [{rate.low:.1%}, {rate.high:.1%}] ({rate.count})"


def user_errors_html(comparison: Comparison) -> list[str]:
    """The runs whose simulated user broke its scenario, per model: reported apart, out of
    the agent's rates (nothing when no run had a simulated user's mistake)."""
    if not any(stats.user_error_runs for stats in comparison.models):
        return []
    parts = ["<h2>Simulated users' mistakes (left out of the pass rates)</h2>"]
    for stats in comparison.models:
        if not stats.user_error_runs:
            continue
        parts.append(
            f"<h3>{html.escape(stats.model)}: {len(stats.user_error_runs)} runs</h3>"
            f"<table class='user-errors' data-model='{html.escape(stats.model)}'><tr>"
            "<th>case</th><th>run</th><th>why</th></tr>"
        )
        for found in stats.user_error_runs:
            parts.append(_row([str(found["case_id"]), str(found["run"]), str(found["reason"])]))
        parts.append("</table>")
    return parts
