"""A model comparison shown: terminal tables (rich) and one self-contained HTML page with a
plot per metric (matplotlib, drawn like the calibration report)."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import IO, Any

from judge.calibrate._report import STYLE, plot_png
from judge.runs._compare import Comparison, ModelStats
from judge.runs._intervals import Interval
from judge.runs._report_cases import failures_html, pairs_table, print_failures, user_errors_html
from judge.runs._report_ppi import estimates_html, print_estimates

_CHECK_NAMES = {
    "tool_selection": "selection",
    "schema_valid": "schema",
    "argument_values": "values",
    "tool_assertions": "tools",
    "judge": "judge",
}


def print_comparison(comparison: Comparison, stream: IO[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=stream, highlight=False, width=max(100, _width(stream)))
    models = comparison.models
    rates = Table(
        title="models, best first (pass rate: 95% Wilson interval over cases)", title_justify="left"
    )
    simulated = any(s.user_errors for s in models)
    columns = ("#", "model", "cases", "pass rate", "95% CI", "F1", *_CHECK_NAMES.values(),
               "errors", "tool errors", *(("user errors",) if simulated else ()))  # fmt: skip
    for name in columns:
        rates.add_column(name, justify="left" if name == "model" else "right")
    for rank, stats in enumerate(models, start=1):
        rate = stats.pass_rate
        rates.add_row(
            str(rank),
            stats.model,
            str(stats.cases),
            _pct(rate.value if rate else None),
            _interval(rate),
            _f1(stats.mean_f1),
            *(_pct(stats.breakdown.get(name)) for name in _CHECK_NAMES),
            str(stats.errors),
            f"{stats.tool_errors} in {stats.runs_with_tool_errors}" if stats.tool_errors else "0",
            *((str(stats.user_errors),) if simulated else ()),
        )
    console.print(rates)

    ks = sorted({k for s in models for k in s.pass_hat_k})
    spend = Table(title="repeats, spend and latency", title_justify="left")
    spend.add_column("model")
    for k in ks:
        spend.add_column(f"pass^{k}", justify="right")
    if ks and ks[-1] > 1:
        spend.add_column(f"pass@{ks[-1]}", justify="right")
    for name in ("varying", "tokens in", "tokens out", "cost $", "p50 s", "p95 s"):
        spend.add_column(name, justify="right")
    for stats in models:
        cells = [_pct(stats.pass_hat_k.get(k)) + _over(stats, k) for k in ks]
        if ks and ks[-1] > 1:
            cells.append(_pct(stats.pass_at_k.get(ks[-1])))
        cells += [
            str(len(stats.varying)),
            f"{stats.prompt_tokens:,}",
            f"{stats.completion_tokens:,}",
            "n/a" if stats.cost_usd is None else f"{stats.cost_usd:.4f}",
            _seconds(stats.latency_p50),
            _seconds(stats.latency_p95),
        ]
        spend.add_row(stats.model, *cells)
    console.print(spend)

    if comparison.pairs:
        title = "paired differences in pass rate (bootstrap over common cases)"
        console.print(pairs_table(comparison.pairs, title, sure=True))
    if comparison.estimates is not None:
        print_estimates(comparison.estimates, console)
    print_failures(comparison, console)
    for stats in models:
        if stats.varying:
            shown = ", ".join(stats.varying[:10]) + (" ..." if len(stats.varying) > 10 else "")
            console.print(f"{stats.model}: outcome varies between runs on {shown}")
    for warning in comparison.warnings:
        console.print(f"warning: {warning}")


def render_comparison(comparison: Comparison, *, title: str = "model comparison") -> str:
    """The comparison as one HTML page: tables, a plot per metric, and the method used."""
    models = comparison.models
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
    ]
    for warning in comparison.warnings:
        parts.append(f"<p class='fail'>{html.escape(warning)}</p>")
    parts.append(
        "<table><tr><th>#</th><th>model</th><th>cases</th><th>pass rate</th>"
        "<th>95% CI</th><th>F1</th>"
        + "".join(f"<th>{n}</th>" for n in _CHECK_NAMES.values())
        + "<th>errors</th><th>varying</th><th>cost $</th></tr>"
    )
    for rank, s in enumerate(models, start=1):
        cells = [
            str(rank),
            s.model,
            str(s.cases),
            _pct(s.pass_rate.value if s.pass_rate else None),
            _interval(s.pass_rate),
            _f1(s.mean_f1),
            *(_pct(s.breakdown.get(n)) for n in _CHECK_NAMES),
            str(s.errors),
            ", ".join(s.varying) or "none",
            "n/a" if s.cost_usd is None else f"{s.cost_usd:.4f}",
        ]
        parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    parts.append("</table>")
    if comparison.estimates is not None:
        parts.extend(estimates_html(comparison.estimates))
    parts.extend(failures_html(comparison))
    parts.extend(user_errors_html(comparison))
    parts.append("<div class='row'>")
    for caption, draw in _PLOTS:
        parts.append(
            f"<div class='card'><h3>{html.escape(caption)}</h3><img alt='{html.escape(caption)}' "
            f"src='data:image/png;base64,{_png(draw, comparison)}'></div>"
        )
    parts.append("</div><h2>Method</h2><table>")
    for key, value in comparison.method.items():
        parts.append(f"<tr><th>{html.escape(key)}</th><td>{html.escape(str(value))}</td></tr>")
    parts.append("</table></body></html>")
    return "\n".join(parts)


def _draw_pass_rate(axes: Any, c: Comparison) -> None:
    names = [m.model for m in c.models]
    rates = [m.pass_rate or Interval(0.0, 0.0, 0.0) for m in c.models]
    values = [r.value for r in rates]
    lows = [max(0.0, r.value - r.low) for r in rates]  # rounding can put a bound past the value
    highs = [max(0.0, r.high - r.value) for r in rates]
    axes.barh(names, values, xerr=[lows, highs], color="#4c72b0", capsize=4)
    axes.set_xlim(0, 1)
    axes.invert_yaxis()
    axes.set_xlabel("pass rate (95% CI)")


def _draw_breakdown(axes: Any, c: Comparison) -> None:
    width = 0.8 / max(1, len(c.models))
    for i, m in enumerate(c.models):
        xs = [j + i * width for j in range(len(_CHECK_NAMES))]
        axes.bar(xs, [m.breakdown.get(n) or 0.0 for n in _CHECK_NAMES], width, label=m.model)
    axes.set_xticks(
        [j + 0.4 - width / 2 for j in range(len(_CHECK_NAMES))], labels=list(_CHECK_NAMES.values())
    )
    axes.set_ylim(0, 1)
    axes.legend(fontsize=7)


def _draw_repeats(axes: Any, c: Comparison) -> None:
    for m in c.models:
        ks = sorted(m.pass_hat_k)
        line = axes.plot(ks, [m.pass_hat_k[k] for k in ks], marker="o", label=f"{m.model} pass^k")
        axes.plot(
            ks,
            [m.pass_at_k[k] for k in ks],
            marker="s",
            linestyle="--",
            color=line[0].get_color(),
            label=f"{m.model} pass@k",
        )
    ks = sorted({k for m in c.models for k in m.pass_hat_k})
    axes.set_xticks(ks)
    axes.set_ylim(0, 1.02)
    axes.set_xlabel("k")
    axes.legend(fontsize=7)


def _draw_differences(axes: Any, c: Comparison) -> None:
    shown = [p for p in c.pairs if p.difference is not None]
    labels = [f"{p.a} - {p.b}" for p in shown]
    for y, p in enumerate(shown):
        d = p.difference
        assert d is not None
        axes.errorbar(
            d.value,
            y,
            xerr=[[max(0.0, d.value - d.low)], [max(0.0, d.high - d.value)]],
            fmt="o",
            color="#c62828" if p.significant else "#555",
            capsize=4,
        )
    axes.axvline(0, color="#999", linewidth=1)
    axes.set_yticks(range(len(shown)), labels=labels)
    axes.invert_yaxis()
    axes.set_xlabel("difference in pass rate (95% CI)")


def _draw_cost(axes: Any, c: Comparison) -> None:
    axes.barh([m.model for m in c.models], [m.cost_usd or 0.0 for m in c.models], color="#55a868")
    axes.invert_yaxis()
    axes.set_xlabel("cost, USD")


def _draw_tokens(axes: Any, c: Comparison) -> None:
    names = [m.model for m in c.models]
    prompt = [m.prompt_tokens for m in c.models]
    axes.barh(names, prompt, label="prompt", color="#8172b2")
    axes.barh(
        names,
        [m.completion_tokens for m in c.models],
        left=prompt,
        label="completion",
        color="#ccb974",
    )
    axes.invert_yaxis()
    axes.set_xlabel("tokens")
    axes.legend(fontsize=7)


def _draw_latency(axes: Any, c: Comparison) -> None:
    names = [m.model for m in c.models]
    axes.barh(names, [m.latency_p95 or 0.0 for m in c.models], color="#dd8452", label="p95")
    axes.barh(names, [m.latency_p50 or 0.0 for m in c.models], color="#4c72b0", label="p50")
    axes.invert_yaxis()
    axes.set_xlabel("latency, seconds")
    axes.legend(fontsize=7)


_PLOTS: list[tuple[str, Callable[[Any, Comparison], None]]] = [
    ("Pass rate", _draw_pass_rate),
    ("Breakdown by check", _draw_breakdown),
    ("pass^k and pass@k over runs", _draw_repeats),
    ("Paired differences", _draw_differences),
    ("Cost", _draw_cost),
    ("Tokens", _draw_tokens),
    ("Latency", _draw_latency),
]


def _png(draw: Callable[[Any, Comparison], None], comparison: Comparison) -> str:
    rows = max(len(comparison.models), len(comparison.pairs), 2)
    return plot_png(lambda axes: draw(axes, comparison), (5.6, 1.2 + 0.45 * rows))


def _over(stats: ModelStats, k: int) -> str:
    """Where pass^k is over fewer cases than the model graded: " (n of N cases)"."""
    n = stats.pass_k_cases.get(k)
    return "" if n is None or n >= stats.cases else f" ({n} of {stats.cases} cases)"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _f1(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(interval: Interval | None) -> str:
    return "n/a" if interval is None else f"[{interval.low:.1%}, {interval.high:.1%}]"


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _width(stream: IO[str]) -> int:
    import shutil

    return shutil.get_terminal_size((120, 24)).columns if stream.isatty() else 140
