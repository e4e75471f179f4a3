"""Charts for the HTML report, drawn as inline SVG with :mod:`shieldbench.charts`.

One function per chart; each returns the chart's SVG text, or ``None`` when the
report has nothing to draw. Each chart keeps what a reader needs: axes with ticks
and labels, 95% intervals (error bars or bands), a legend when several runs share
it, a title, and an accessible ``<title>``/``<desc>``; every bar and point carries
a tooltip with its exact value and interval. Labels from data are cleaned and cut
(:func:`~shieldbench.charts.label`) and escaped by the SVG writer.

The plane charts are :mod:`._plane_charts`, the adaptive-attack ones
:mod:`._attack_charts`; :func:`clean_svg` checks each chart before the HTML marks it
safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shieldbench.charts import (
    PALETTE,
    Axes,
    Box,
    LegendEntry,
    Svg,
    label,
    legend,
    percent,
    text_width,
    title,
)
from shieldbench.metrics import Rate
from shieldbench.reports._chart_svg import MAX_ROWS, clean_svg
from shieldbench.reports._curve_charts import latency_chart, pr_chart, roc_chart, tradeoff_chart
from shieldbench.reports._heatmap import heatmap_chart
from shieldbench.reports._model import RunSection

__all__ = [
    "MAX_ROWS",
    "PALETTE",
    "category_chart",
    "clean_svg",
    "fpr_chart",
    "heatmap_chart",
    "label",
    "latency_chart",
    "pr_chart",
    "roc_chart",
    "tradeoff_chart",
]

_TICK, _TEXT, _TITLE = 8.0, 9.0, 10.0


def _interval(r: Rate) -> str:
    return f"{percent(r.value or 0.0)} [{percent(r.ci_low)}, {percent(r.ci_high)}] ({r.k}/{r.n})"


def _bar_chart(
    name: str,
    runs: Sequence[RunSection],
    *,
    pick: Callable[[RunSection], dict[str, Rate]],
    xlabel: str,
    target: float | None,
    heading: str,
) -> str | None:
    per_run = [pick(r) for r in runs]
    groups = sorted({g for rates in per_run for g in rates})
    if not groups:
        return None
    worst = {g: min((rates[g].value or 0.0) for rates in per_run if g in rates) for g in groups}
    groups = sorted(groups, key=lambda g: (worst[g], g))[:MAX_ROWS]  # worst at the top
    n = len(runs)
    names = [label(g) for g in groups]
    left = 14 + max(text_width(t, _TICK) for t in names)
    keys = [
        LegendEntry(label(r.label), PALETTE[i % len(PALETTE)], "bar") for i, r in enumerate(runs)
    ]
    key_width = 30 + max(text_width(k.text, _TICK) for k in keys) if n > 1 else 0.0
    row = max(18.0, 11.0 * n + 6)
    box = Box(left, 30, 360, row * len(groups))
    svg = Svg(
        name,
        box.right + 16 + key_width,
        box.bottom + 46,
        title=heading,
        desc=f"{xlabel}; {len(groups)} categories, the worst first; runs: "
        + ", ".join(k.text for k in keys),
    )
    title(svg, 6, 16, heading, size=_TITLE)
    ax = Axes(svg, box, x=(0.0, 1.0), y=(len(groups), 0.0))
    ax.frame(
        x_format=percent, tick_size=_TICK, y_labels=[(j + 0.5, t) for j, t in enumerate(names)]
    )
    height = (row - 6) / n
    for i, (run, rates) in enumerate(zip(runs, per_run, strict=True)):
        colour = PALETTE[i % len(PALETTE)]
        for j, g in enumerate(groups):
            rate = rates.get(g)
            if rate is None or rate.value is None:
                continue
            top = ax.y(j) + 3 + i * height
            tip = f"{label(g)}, {label(run.label)}: {_interval(rate)}"
            svg.rect(
                box.left,
                top,
                max(0.5, ax.x(rate.value) - box.left),
                height * 0.9,
                fill=colour,
                tip=tip,
            )
            mid, lo, hi = top + height * 0.45, ax.x(rate.ci_low), ax.x(rate.ci_high)
            svg.line(lo, mid, hi, mid, stroke="#333333", width=0.8)
            for end in (lo, hi):
                svg.line(end, mid - 2, end, mid + 2, stroke="#333333", width=0.8)
    if target is not None:
        ax.vline(target, stroke="#888888", dash="4 3")
        svg.text(ax.x(target) - 2, box.top - 3, f"target {100 * target:.0f}%", size=7, anchor="end")
    ax.labels(x=xlabel, size=_TEXT, tick_size=_TICK)
    if n > 1:
        legend(svg, box.right + 16, box.top, keys, size=7)
    return svg.render()


def category_chart(runs: Sequence[RunSection], *, name: str = "categories") -> str | None:
    """Block rate per attack category with 95% interval error bars (worst at the top)."""

    def pick(r: RunSection) -> dict[str, Rate]:
        return {
            g.group: g.block_rate
            for g in r.summary.breakdowns.by.get("category", ())
            if g.confusion.n_attacks > 0
        }

    target = runs[0].summary.settings.coverage_target if runs else None
    return _bar_chart(
        name,
        runs,
        pick=pick,
        xlabel="block rate (attacks stopped), 95% interval",
        target=target,
        heading="Block rate per attack category",
    )


def fpr_chart(runs: Sequence[RunSection], *, name: str = "fpr") -> str | None:
    """False positive rate per benign category with 95% interval error bars."""

    def pick(r: RunSection) -> dict[str, Rate]:
        return {
            g.group: _flip(g.false_positive_rate)
            for g in r.summary.breakdowns.by.get("category", ())
            if g.confusion.n_benign > 0
        }

    return _bar_chart(
        name,
        runs,
        pick=pick,
        xlabel="benign texts let through (1 − FPR), 95% interval",
        target=None,
        heading="Benign traffic allowed per category",
    )


def _flip(r: Rate) -> Rate:
    value = None if r.value is None else 1.0 - r.value
    return Rate(r.n - r.k, r.n, value, 1.0 - r.ci_high, 1.0 - r.ci_low, r.method, r.confidence)
