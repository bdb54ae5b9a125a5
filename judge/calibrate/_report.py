"""The calibration report: one self-contained HTML page with the confusion matrices drawn."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable
from typing import Any

from judge.calibrate._fit import ConfidenceStats
from judge.calibrate._record import LABELS, CalibrationRecord, DimensionStats


def render_report(record: CalibrationRecord, rows: list[dict[str, Any]]) -> str:
    """The report as HTML: verdict, per-dimension statistics and matrices, disagreements."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>judge calibration</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Judge calibration</h1>",
        f"<p class='{'pass' if record.passed else 'fail'}'>"
        f"{'PASSED' if record.passed else 'NOT PASSED'}: threshold kappa &ge; "
        f"{record.threshold}{' (lower bound of the 95% interval)' if record.strict else ''}</p>",
        f"<p>Judge: <code>{html.escape(str(record.fingerprint.get('model')))}</code> at "
        f"<code>{html.escape(str(record.fingerprint.get('endpoint')))}</code>; sample "
        f"<code>{html.escape(record.sample)}</code>: {record.cases} cases, "
        f"{record.judge_errors} judge errors (excluded).</p>",
    ]
    for title, stats in (
        ("Judge", record.dimensions),
        ("Deterministic checks", record.deterministic),
    ):
        if not stats:
            continue
        parts.append(f"<h2>{title}</h2><div class='row'>")
        for name, dimension in stats.items():
            parts.append(_dimension(name, dimension))
        parts.append("</div>")
    for name, confidence in record.confidence.items():
        parts.append(_confidence(name, confidence, record.fitted[name].threshold))
    if record.probes:
        parts.append(
            "<h2>Invariance probes</h2><table><tr><th>probe</th><th>applied</th>"
            "<th>flipped</th><th>flip rate</th><th>cases that flipped</th></tr>"
        )
        for probe in record.probes:
            rate = probe["flip_rate"]
            cells = (
                probe["probe"],
                probe["applied"],
                probe["flipped"],
                "n/a" if rate is None else f"{rate:.1%}",
                ", ".join(probe["flipped_cases"]) or "-",
            )
            parts.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells))
        parts.append("</table>")
    parts.append(f"<h2>Disagreements ({len(rows)})</h2>")
    parts.append(
        "<table><tr><th>case</th><th>dimension</th><th>label</th><th>verdict</th>"
        "<th>the judge's reasoning</th></tr>"
    )
    for row in rows:
        cells = (row["id"], row["dimension"], row["label"], row["verdict"], row["reasoning"])
        parts.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    parts.append("</table></body></html>")
    return "\n".join(parts)


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _dimension(name: str, stats: DimensionStats) -> str:
    facts = [
        ("n", str(stats.n)),
        ("kappa", _number(stats.kappa)),
        (
            "95% interval",
            "n/a" if stats.ci_low is None else f"[{stats.ci_low:.3f}, {stats.ci_high:.3f}]",
        ),
        ("agreement", _number(stats.agreement)),
        ("TPR (correct found)", _number(stats.tpr)),
        ("TNR (incorrect found)", _number(stats.tnr)),
        ("excluded", ", ".join(f"{k}: {v}" for k, v in stats.excluded.items() if v) or "none"),
    ]
    if stats.degenerate:
        facts.append(("degenerate", stats.degenerate))
    if stats.note:
        facts.append(("note", stats.note))
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in facts)
    image = _matrix_png(name, stats)
    return (
        f"<div class='card'><h3>{html.escape(name)}</h3><table>{rows}</table>"
        f"<img alt='confusion matrix of {html.escape(name)}' "
        f"src='data:image/png;base64,{image}'></div>"
    )


def _confidence(name: str, stats: ConfidenceStats, threshold: float) -> str:
    """Cross-validated confidence: the reliability diagram and the risk-coverage table."""

    def draw(axes: Any) -> None:
        used = [b for b in stats.reliability if b.n]
        axes.plot([0.5, 1], [0.5, 1], linestyle="--", color="#888", label="perfectly calibrated")
        axes.bar(
            [(b.low + b.high) / 2 for b in used],
            [b.accuracy or 0 for b in used],
            width=0.5 / len(stats.reliability) * 0.9,
            color="#4a7bd0",
            label="share right",
        )
        for b in used:
            axes.text((b.low + b.high) / 2, (b.accuracy or 0) + 0.02, str(b.n), ha="center")
        axes.set_xlim(0.5, 1)
        axes.set_ylim(0, 1.05)
        axes.set_xlabel("confidence of the verdict")
        axes.set_ylabel("share of verdicts that agree with the label")
        axes.set_title(f"{name}: reliability")
        axes.legend(loc="lower right")

    rows = "".join(
        f"<tr><td>{c.coverage:.0%}</td><td>{c.n}</td><td>{_number(c.kappa)}</td>"
        f"<td>{_number(c.agreement)}</td><td>{_number(c.min_confidence)}</td></tr>"
        for c in stats.risk_coverage
    )
    return (
        f"<h2>{html.escape(name)}: confidence</h2><p>{stats.method}, {stats.folds}-fold "
        f"cross-validated; threshold {threshold:.3f}; expected calibration error "
        f"{stats.ece:.3f}.</p><div class='row'><div class='card'>"
        f"<img alt='reliability diagram of {html.escape(name)}' "
        f"src='data:image/png;base64,{plot_png(draw, (4.6, 3.6))}'></div>"
        "<div class='card'><table><tr><th>most confident</th><th>n</th><th>kappa</th>"
        f"<th>agreement</th><th>abstain below</th></tr>{rows}</table></div></div>"
    )


def _matrix_png(name: str, stats: DimensionStats) -> str:
    def draw(axes: Any) -> None:
        matrix = stats.confusion.matrix
        axes.imshow(matrix, cmap="Blues")
        for row in range(2):
            for col in range(2):
                axes.text(col, row, str(matrix[row][col]), ha="center", va="center", fontsize=14)
        axes.set_xticks([0, 1], labels=list(LABELS))
        axes.set_yticks([0, 1], labels=list(LABELS))
        axes.set_xlabel("verdict")
        axes.set_ylabel("hand label")
        axes.set_title(name)

    return plot_png(draw, (3.6, 3.2))


def plot_png(draw: Callable[[Any], None], size: tuple[float, float]) -> str:
    """A matplotlib plot as base64 PNG: `draw(axes)` on a new figure of `size` inches."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=size, dpi=100)
    try:
        draw(axes)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
    finally:
        plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode()


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
.pass { color: #1a7f37; font-weight: bold; } .fail { color: #c62828; font-weight: bold; }
.row { display: flex; flex-wrap: wrap; gap: 1.5em; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 1em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ddd; padding: .3em .6em; text-align: left; vertical-align: top; }
code { background: #f4f4f4; padding: 0 .3em; }
"""
