"""The report's score and latency charts: ROC, precision-recall, the security /
utility trade-off against the threshold, and the latency distribution (inline SVG
drawn with :mod:`shieldbench.charts`; see :mod:`._charts` for what every chart keeps)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from shieldbench.charts import (
    PALETTE,
    Axes,
    Box,
    LegendEntry,
    Svg,
    label,
    legend,
    nice_ticks,
    percent,
    plain,
    title,
)
from shieldbench.metrics import Rate, ScoreSummary
from shieldbench.reports._model import RunSection

__all__ = ["latency_chart", "pr_chart", "roc_chart", "tradeoff_chart"]

_TICK, _TEXT, _TITLE = 8.0, 9.0, 10.0


def _curve_chart(
    name: str, heading: str, *, xlabel: str, ylabel: str, desc: str
) -> tuple[Svg, Axes]:
    svg = Svg(name, 400, 340, title=heading, desc=desc)
    title(svg, 6, 16, heading, size=_TITLE)
    ax = Axes(svg, Box(62, 28, 320, 262), x=(0.0, 1.0), y=(0.0, 1.02))
    ax.frame(x_format=plain, y_format=plain, tick_size=_TICK)
    ax.labels(x=xlabel, y=ylabel, size=_TEXT, tick_size=_TICK)
    return svg, ax


def _keys(
    scored: Sequence[RunSection], name: str, figure: Callable[[ScoreSummary], float | None]
) -> list[LegendEntry]:
    """One legend entry per run: its label, then ``(name value)`` when the run's score
    summary has the figure."""
    keys = []
    for i, r in enumerate(scored):
        value = figure(r.summary.scores) if r.summary.scores is not None else None
        tag = "" if value is None else f" ({name} {value:.3f})"
        keys.append(LegendEntry(label(r.label, 36) + tag, PALETTE[i % len(PALETTE)]))
    return keys


def roc_chart(runs: Sequence[RunSection], *, name: str = "roc") -> str | None:
    """ROC curves of the runs that have scores, AUC in the legend."""
    scored = [r for r in runs if r.curves is not None]
    if not scored:
        return None
    keys = _keys(scored, "AUC", lambda s: s.roc_auc.value)
    svg, ax = _curve_chart(
        name,
        "ROC curve",
        xlabel="false positive rate",
        ylabel="block rate (true positive rate)",
        desc="block rate against false positive rate over every score threshold: "
        + "; ".join(k.text for k in keys),
    )
    ax.begin_data()
    svg.polyline(ax.points([0, 1], [0, 1]), stroke="#bbbbbb", width=1, dash="1 3")
    for r, key in zip(scored, keys, strict=True):
        assert r.curves is not None
        svg.polyline(ax.points(r.curves.roc.fpr, r.curves.roc.tpr), stroke=key.colour, tip=key.text)
    ax.end_data()
    legend(svg, ax.box.right - 4, ax.box.bottom - 8 - 13 * len(keys), keys, size=7, anchor="end")
    return svg.render()


def _steps(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    """A ``where="post"`` staircase through the points: each y holds until the next x."""
    sx, sy = [], []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if i:
            sx.append(x)
            sy.append(ys[i - 1])
        sx.append(x)
        sy.append(y)
    return sx, sy


def pr_chart(runs: Sequence[RunSection], *, name: str = "pr") -> str | None:
    """Precision-recall curves of the runs that have scores, PR-AUC in the legend."""
    scored = [r for r in runs if r.curves is not None]
    if not scored:
        return None
    keys = _keys(scored, "AP", lambda s: s.pr_auc.value)
    svg, ax = _curve_chart(
        name,
        "Precision-recall curve",
        xlabel="recall (block rate)",
        ylabel="precision",
        desc="precision against recall over every score threshold: "
        + "; ".join(k.text for k in keys),
    )
    ax.begin_data()
    for r, key in zip(scored, keys, strict=True):
        assert r.curves is not None
        xs, ys = _steps(r.curves.pr.recall, r.curves.pr.precision)
        svg.polyline(ax.points(xs, ys), stroke=key.colour, tip=key.text)
    ax.end_data()
    legend(svg, ax.box.left + 8, ax.box.bottom - 8 - 13 * len(keys), keys, size=7)
    return svg.render()


def _flip(r: Rate) -> Rate:
    value = None if r.value is None else 1.0 - r.value
    return Rate(r.n - r.k, r.n, value, 1.0 - r.ci_high, 1.0 - r.ci_low, r.method, r.confidence)


def tradeoff_chart(run: RunSection, *, name: str = "tradeoff") -> str | None:
    """Security (block rate) and utility (benign allowed) against the threshold, with
    95% bands and the operating point the trade-off policy chose."""
    if run.curves is None:
        return None
    t = run.curves.tradeoff
    points = sorted((p for p in t.points if math.isfinite(p.threshold)), key=lambda p: p.threshold)
    if len(points) < 2:
        return None
    x = [p.threshold for p in points]
    ticks = nice_ticks(x[0], x[-1], 6)
    low = min(x[0], ticks[0]) if ticks[0] >= x[0] - (x[-1] - x[0]) * 0.05 else x[0]
    heading = label(f"{run.label}: {t.policy}", 80)
    svg = Svg(
        name,
        480,
        300,
        title=heading,
        desc="block rate (security) and benign texts allowed (utility) against the score "
        "threshold, with 95% bands"
        + ("" if t.chosen is None else f"; chosen threshold {t.chosen.threshold:.3g}"),
    )
    title(svg, 6, 16, heading, size=8.0)
    ax = Axes(svg, Box(56, 28, 404, 218), x=(low, x[-1]), y=(0.0, 1.02))
    ax.frame(x_format=plain, y_format=percent, tick_size=_TICK)
    ax.labels(x="score threshold (block when score ≥ threshold)", size=_TEXT, tick_size=_TICK)
    series = (
        ([p.block_rate for p in points], PALETTE[0], "block rate (security)"),
        ([_flip(p.false_positive_rate) for p in points], PALETTE[2], "benign allowed (utility)"),
    )
    ax.begin_data()
    for rates, colour, what in series:
        band = (
            ax.points(x, [r.ci_low for r in rates]) + ax.points(x, [r.ci_high for r in rates])[::-1]
        )
        svg.polygon(band, fill=colour, opacity=0.15)
        svg.polyline(ax.points(x, [r.value or 0.0 for r in rates]), stroke=colour, tip=what)
    c = t.chosen
    if c is not None and math.isfinite(c.threshold):
        ax.vline(c.threshold, stroke="#555555", dash="4 3")
        block, allowed = c.block_rate.value or 0.0, 1.0 - (c.false_positive_rate.value or 0.0)
        tip = f"chosen threshold {c.threshold:.3g}: block rate {percent(block)}"
        svg.marker(
            "o", ax.x(c.threshold), ax.y(block), 6, fill=PALETTE[0], stroke=PALETTE[0], tip=tip
        )
        tip = f"chosen threshold {c.threshold:.3g}: benign allowed {percent(allowed)}"
        svg.marker(
            "o", ax.x(c.threshold), ax.y(allowed), 6, fill=PALETTE[2], stroke=PALETTE[2], tip=tip
        )
    ax.end_data()
    if c is not None and math.isfinite(c.threshold):
        svg.text(ax.x(c.threshold) + 4, ax.y(0.05), f"chosen: {c.threshold:.3g}", size=7)
    keys = [LegendEntry(what, colour) for _, colour, what in series]
    legend(svg, ax.box.left + 8, ax.y(0.55), keys, size=7)
    return svg.render()


def _quantiles(run: RunSection) -> str:
    """`` (p50 1.2 ms, p99 9.8 ms)``: the values the chart's vertical lines mark."""
    lat = run.summary.operations.latency
    shown = [
        f"{name} {q:.3g} ms"
        for name, q in (("p50", lat.p50.value), ("p99", lat.p99.value))
        if q is not None
    ]
    return f" ({', '.join(shown)})" if shown else ""


def latency_chart(runs: Sequence[RunSection], *, name: str = "latency") -> str | None:
    """Latency distribution per defense (share of calls per bin), p50 and p99 marked."""
    shown = [(r, r.latency_histogram) for r in runs if r.latency_histogram is not None]
    if not shown:
        return None
    log = any(h.scale == "log" for _, h in shown)
    edges = [e for _, h in shown for e in h.edges_ms if not log or e > 0]
    shares = {r.label: [c / max(1, sum(h.counts)) for c in h.counts] for r, h in shown}
    top = max([0.01, *(s for v in shares.values() for s in v)])
    y_end = nice_ticks(0.0, top * 1.05, 6)[-1]
    y_end = y_end if y_end >= top else top * 1.05
    lo, hi = min(edges), max(edges)
    heading = "Latency distribution"
    keys = [
        LegendEntry(label(r.label, 36) + _quantiles(r), PALETTE[i % len(PALETTE)])
        for i, (r, _) in enumerate(shown)
    ]
    svg = Svg(
        name,
        520,
        280,
        title=heading,
        desc=f"share of calls per latency bin, {lo:.3g} to {hi:.3g} ms"
        + (" (log scale)" if log else "")
        + "; solid line p50, dotted line p99; runs: "
        + ", ".join(k.text for k in keys),
    )
    title(svg, 6, 16, heading, size=_TITLE)
    ax = Axes(
        svg, Box(62, 28, 440, 196), x=(lo, hi if hi > lo else lo * 10), y=(0.0, y_end), x_log=log
    )
    ax.frame(x_format=plain, y_format=percent, tick_size=_TICK)
    ax.labels(
        x="latency (ms); solid line p50, dotted line p99",
        y="share of calls",
        size=_TEXT,
        tick_size=_TICK,
    )
    ax.begin_data()
    for (r, h), key in zip(shown, keys, strict=True):
        xs, ys = [], []
        for i, share in enumerate(shares[r.label]):
            a, b = h.edges_ms[i], h.edges_ms[i + 1]
            xs += [a, a, b, b]
            ys += [0.0, share, share, 0.0]
        svg.polyline(ax.points(xs, ys), stroke=key.colour, tip=key.text)
        lat = r.summary.operations.latency
        for q, dash in ((lat.p50.value, None), (lat.p99.value, "2 2")):
            if q is not None and (q > 0 or not log):
                ax.vline(q, stroke=key.colour, dash=dash, width=0.9, opacity=0.8)
    ax.end_data()
    legend(svg, ax.box.right - 4, ax.box.top + 12, keys, size=7, anchor="end")
    return svg.render()
