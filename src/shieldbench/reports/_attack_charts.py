"""Adaptive-attack charts: ASR against queries spent, and mutator success rates
(inline SVG drawn with :mod:`shieldbench.charts`; see :mod:`._charts` for what every
chart keeps)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

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
    text_width,
    title,
)
from shieldbench.reports._chart_svg import MAX_ROWS

if TYPE_CHECKING:
    from shieldbench.attacks import AttackResult

__all__ = ["asr_queries_chart", "mutator_chart"]


def _steps(xs: Sequence[float], ys: Sequence[float | None]) -> list[list[tuple[float, float]]]:
    """``where="post"`` staircases through the points, one per run of known values (a
    ``None`` breaks the line)."""
    runs: list[list[tuple[float, float]]] = []
    current: list[tuple[float, float]] = []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if y is None:
            if current:
                runs.append(current)
            current = []
            continue
        if current and i:
            current.append((x, current[-1][1]))
        current.append((x, y))
    if current:
        runs.append(current)
    return runs


def asr_queries_chart(result: AttackResult, *, name: str = "attack-asr") -> str | None:
    """Cumulative ASR (all bypasses, and payload-preserving only) against search
    queries, the static ASR as the baseline and the end of each round marked."""
    points = [p for p in result.figures.curve if p.asr is not None]
    rounds = result.figures.rounds
    if not points and not rounds:
        return None
    static = result.figures.static_asr.value
    most = max([1, *(int(p.queries) for p in points), *(r.queries for r in rounds)])
    heading = "ASR against query budget"
    keys = [LegendEntry("adaptive ASR", PALETTE[1])]
    q = [float(p.queries) for p in points]
    preserving = [p.preserving_asr for p in points]
    if any(v is not None for v in preserving):
        keys.append(LegendEntry("payload-preserving ASR", PALETTE[0], dash="5 3"))
    if static is not None:
        keys.append(LegendEntry(f"static ASR {100 * static:.1f}%", "#777777", dash="1 2"))
    final = points[-1].asr if points else None
    svg = Svg(
        name,
        500,
        290,
        title=heading,
        desc=f"cumulative attack success rate against search queries, up to {most} queries"
        + ("" if final is None else f"; final adaptive ASR {percent(float(final))}")
        + ("" if static is None else f"; static ASR {percent(static)}")
        + f"; {len(rounds)} rounds marked with 95% intervals",
    )
    title(svg, 6, 16, heading, size=10.0)
    ticks = nice_ticks(0.0, most, 6)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else float(most)
    end = step * math.ceil(most / step)  # the first round tick at or past the last query
    ax = Axes(svg, Box(62, 28, 420, 206), x=(0.0, end), y=(0.0, 1.02))
    ax.frame(x_format=plain, y_format=percent)
    ax.labels(
        x="search queries spent (dots: end of each round, 95% interval)", y="attack success rate"
    )
    ax.begin_data()
    if static is not None:
        svg.line(
            ax.box.left, ax.y(static), ax.box.right, ax.y(static), stroke="#777777", dash="1 2"
        )
    for steps in _steps(q, [None if p.asr is None else float(p.asr) for p in points]):
        svg.polyline(
            [(ax.x(x), ax.y(y)) for x, y in steps], stroke=PALETTE[1], width=1.5, tip="adaptive ASR"
        )
    for steps in _steps(q, [None if v is None else float(v) for v in preserving]):
        svg.polyline(
            [(ax.x(x), ax.y(y)) for x, y in steps],
            stroke=PALETTE[0],
            width=1.3,
            dash="5 3",
            tip="payload-preserving ASR",
        )
    for r in rounds:
        if r.asr.value is None:
            continue
        x, lo, hi = ax.x(r.queries), ax.y(r.asr.ci_low), ax.y(r.asr.ci_high)
        svg.line(x, lo, x, hi, stroke=PALETTE[1], width=0.8)
        for end in (lo, hi):
            svg.line(x - 2, end, x + 2, end, stroke=PALETTE[1], width=0.8)
        tip = f"after {r.queries} queries: ASR {percent(r.asr.value)} "
        tip += f"[{percent(r.asr.ci_low)}, {percent(r.asr.ci_high)}]"
        svg.marker("o", x, ax.y(r.asr.value), 4, fill=PALETTE[1], stroke=PALETTE[1], tip=tip)
    ax.end_data()
    legend(svg, ax.box.right - 4, ax.box.bottom - 8 - 13 * len(keys), keys, size=7, anchor="end")
    return svg.render()


def mutator_chart(result: AttackResult, *, name: str = "attack-mutators") -> str | None:
    """Success rate (bypasses / queries whose chain used it) per mutator with 95%
    intervals; blue keeps the payload readable, orange may hide it."""
    rows = [m for m in result.mutators if m.attempts > 0]
    if not rows:
        return None
    rows.sort(key=lambda m: (-(m.success_rate.value or 0.0), -m.attempts, m.name))
    rows = rows[:MAX_ROWS]  # the most successful at the top
    names = [label(f"{m.name} ({m.family})", 40) for m in rows]
    left = 14 + max(text_width(t, 8) for t in names)
    row = 18.0
    box = Box(left, 30, 380, row * len(rows))
    heading = "Mutator success rates (blue: payload kept readable)"
    svg = Svg(
        name,
        max(box.right + 16, left + text_width(heading, 10)),
        box.bottom + 46,
        title=heading,
        desc=f"success rate (bypasses / attempts) with 95% intervals of {len(rows)} "
        "mutators, the most successful first; blue bars keep the payload readable, "
        "orange ones may hide it",
    )
    title(svg, 6, 16, heading, size=10.0)
    ax = Axes(svg, box, x=(0.0, 1.12), y=(float(len(rows)), 0.0))
    ax.frame(x_format=percent, y_labels=[(j + 0.5, t) for j, t in enumerate(names)])
    ax.labels(x="success rate (bypasses / attempts), 95% interval")
    for j, m in enumerate(rows):
        rate = m.success_rate
        value = rate.value or 0.0
        top, colour = ax.y(j) + 3, PALETTE[0] if m.preserves_payload else PALETTE[1]
        tip = f"{names[j]}: {percent(value)} [{percent(rate.ci_low)}, {percent(rate.ci_high)}]"
        tip += f" ({m.bypasses}/{m.attempts})"
        svg.rect(box.left, top, max(0.5, ax.x(value) - box.left), row - 6, fill=colour, tip=tip)
        mid, lo, hi = top + (row - 6) / 2, ax.x(rate.ci_low), ax.x(rate.ci_high)
        svg.line(lo, mid, hi, mid, stroke="#333333", width=0.7)
        for end in (lo, hi):
            svg.line(end, mid - 2, end, mid + 2, stroke="#333333", width=0.7)
        svg.text(ax.x(min(1.0, rate.ci_high) + 0.01), mid + 2, f"{m.bypasses}/{m.attempts}", size=6)
    return svg.render()
