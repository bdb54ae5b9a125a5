"""The prediction-powered pass rates and differences of a comparison (`_compare_ppi`), as
terminal tables and HTML."""

from __future__ import annotations

import html
from typing import Any

from judge.runs._compare_ppi import PPIComparison
from judge.runs._intervals import Interval


def _pct(value: float | None, sign: str = "") -> str:
    return "n/a" if value is None else f"{value:{sign}.1%}"


def _ci(interval: Interval | None, sign: str = "") -> str:
    if interval is None:
        return "n/a"
    return f"[{interval.low:{sign}.1%}, {interval.high:{sign}.1%}]"


def _model_rows(found: PPIComparison) -> list[list[str]]:
    return [
        [
            m.model,
            _pct(m.judge_only),
            _pct(m.labels_only.value if m.labels_only else None),
            _ci(m.labels_only),
            _pct(m.ppi.value if m.ppi else None),
            _ci(m.ppi),
            str(m.n_labelled),
            str(m.n_graded),
            "n/a" if m.effective_labels is None else f"{m.effective_labels:.0f}",
        ]
        for m in found.models
    ]


def _pair_rows(found: PPIComparison) -> list[list[str]]:
    return [
        [
            p.a,
            p.b,
            str(p.labelled),
            str(p.cases),
            _pct(p.judge_only, "+"),
            _pct(p.difference.value if p.difference else None, "+"),
            _ci(p.difference, "+"),
            "sure" if p.significant else "not sure",
        ]
        for p in found.pairs
    ]


def _headers(found: PPIComparison) -> tuple[tuple[str, ...], tuple[str, ...]]:
    level = f"{found.confidence:.0%} CI"
    models = ("model", "judge only", "labels only", level, "PPI", level, "labelled", "graded",
              "effective labels")  # fmt: skip
    pairs = ("a", "b", "labelled", "cases", "judge only a - b", "PPI a - b", level, "")
    return models, pairs


def print_estimates(found: PPIComparison, console: Any) -> None:
    from rich.table import Table

    models, pairs = _headers(found)
    for title, columns, rows in (
        ("prediction-powered pass rates (PPI++, judge corrected by hand labels)", models,
         _model_rows(found)),
        ("prediction-powered paired differences in pass rate", pairs, _pair_rows(found)),
    ):  # fmt: skip
        if not rows:
            continue
        table = Table(title=title, title_justify="left")
        for name in columns:
            table.add_column(name, justify="left" if name in ("model", "a", "b") else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)


def estimates_html(found: PPIComparison) -> list[str]:
    """Two tables: each model's estimates, each pair's difference."""
    models, pairs = _headers(found)
    parts = ["<h2>Prediction-powered estimates</h2>"]
    for columns, rows in ((models, _model_rows(found)), (pairs, _pair_rows(found))):
        if not rows:
            continue
        parts.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in columns))
        parts.append("</tr>")
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
        parts.append("</table>")
    designs = ", ".join(f"{m}: {d}" for m, d in found.designs.items())
    parts.append(f"<p>Labelled cases drawn: {html.escape(designs)}.</p>")
    return parts
