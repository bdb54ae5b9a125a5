"""`judge estimate --html`: the three rates per dimension as one self-contained page, a
table and each dimension's intervals drawn side by side (inline SVG, no script)."""

from __future__ import annotations

import html

from judge.calibrate._estimate import DimensionEstimate, Estimate
from judge.calibrate._report import STYLE

_WIDTH, _ROW = 520, 22


def render_estimate(found: Estimate, graded: str, labels: str | None) -> str:
    level = f"{found.confidence:.0%}"
    design = found.design + (f", {found.strata} strata" if found.strata else "")
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>judge estimate</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Prediction-powered estimates</h1>",
        f"<p>Graded: <code>{html.escape(graded)}</code>; labels: "
        f"<code>{html.escape(labels or 'none')}</code>; design: {html.escape(design)}; "
        f"{level} intervals.</p>",
        "<table><tr>"
        + "".join(
            f"<th>{html.escape(c)}</th>"
            for c in (
                "dimension",
                "judge only",
                "labels only",
                f"{level} CI",
                "PPI",
                f"{level} CI",
                "n labelled",
                "N graded",
                "effective labels",
                "note",
            )
        )  # fmt: skip
        + "</tr>",
    ]
    for name, dim in found.dimensions.items():
        cells = (name, _rate(dim.judge_only.value), _rate(dim.labels_only.value),
                 _ci(dim.labels_only.low, dim.labels_only.high), _rate(dim.ppi.value),
                 _ci(dim.ppi.low, dim.ppi.high), str(dim.n_labelled), str(dim.n_graded),
                 "n/a" if dim.effective_labels is None else f"{dim.effective_labels:.0f}",
                 dim.note or "")  # fmt: skip
        parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    parts.append("</table>")
    for name, dim in found.dimensions.items():
        parts.append(f"<h2>{html.escape(name)}</h2>{_chart(dim)}")
    if found.warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in found.warnings)
        parts.append(f"<h2>Warnings</h2><ul>{items}</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _ci(low: float | None, high: float | None) -> str:
    return "n/a" if low is None or high is None else f"[{low:.1%}, {high:.1%}]"


def _chart(dim: DimensionEstimate) -> str:
    """The labels-only and PPI intervals as bars on [0, 1], the judge-only rate as a dot."""
    rows = [
        ("judge only", dim.judge_only.value, None, None),
        ("labels only", dim.labels_only.value, dim.labels_only.low, dim.labels_only.high),
        ("PPI", dim.ppi.value, dim.ppi.low, dim.ppi.high),
    ]
    left, span = 90, _WIDTH - 100
    svg = [f"<svg width='{_WIDTH}' height='{_ROW * len(rows) + 8}' role='img'>"]
    for index, (label, value, low, high) in enumerate(rows):
        y = 4 + index * _ROW + _ROW // 2
        svg.append(f"<text x='0' y='{y + 4}' font-size='12'>{label}</text>")
        svg.append(f"<line x1='{left}' x2='{left + span}' y1='{y}' y2='{y}' stroke='#ddd'/>")
        if low is not None and high is not None:
            x1, x2 = left + low * span, left + high * span
            svg.append(
                f"<line x1='{x1:.1f}' x2='{x2:.1f}' y1='{y}' y2='{y}' stroke='#36c' "
                "stroke-width='6'/>"
            )
        if value is not None:
            svg.append(f"<circle cx='{left + value * span:.1f}' cy='{y}' r='4' fill='#222'/>")
    svg.append("</svg>")
    return "".join(svg)
