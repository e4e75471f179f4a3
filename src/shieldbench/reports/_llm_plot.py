"""ASR against queries for several strategies on one SVG plot, with interval bands.

A plain SVG document drawn with :mod:`shieldbench.charts`: one step line per LLM strategy
(goal-preserving ASR) with its Wilson 95% interval as a shaded band, and, when
an attack carries one (``comparison``), the mutator search's payload-preserving ASR
at the same number of queries (its own intervals, computed here from its counts) as
a dashed line. The x axis is defense queries, static
pass excluded; the y axis ASR from 0 to 100%.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from shieldbench.charts import PALETTE, Axes, Box, LegendEntry, Svg, legend, percent, plain, title
from shieldbench.metrics import rate

if TYPE_CHECKING:
    from shieldbench.attacks import AttackResult, LLMAttackResult

__all__ = ["llm_asr_svg"]


Series = list[tuple[int, float, float, float]]  # queries, value, low, high


def _llm_series(r: LLMAttackResult) -> Series:
    return [
        (
            p.queries,
            p.preserving_asr.value or 0.0,
            p.preserving_asr.ci_low,
            p.preserving_asr.ci_high,
        )
        for p in r.curve
    ]


def _mutator_series(m: AttackResult) -> Series:
    n = m.counts.attacks - m.counts.excluded
    out: Series = []
    for p in m.figures.curve:
        r = rate(p.preserving_bypassed, n)
        out.append((p.queries, r.value or 0.0, r.ci_low, r.ci_high))
    return out


def _steps(points: Series, pick: int) -> tuple[list[float], list[float]]:
    """Step-after coordinates (queries, column ``pick``) of ``points``."""
    xs: list[float] = []
    ys: list[float] = []
    for i, p in enumerate(points):
        if i:
            xs.append(p[0])
            ys.append(points[i - 1][pick])
        xs.append(p[0])
        ys.append(p[pick])
    return xs, ys


def llm_asr_svg(results: Sequence[LLMAttackResult]) -> str:
    """The plot (see the module docstring) as an SVG document."""
    series: list[tuple[str, Series, bool]] = [(r.strategy, _llm_series(r), False) for r in results]
    for r in results:
        if r.comparison is not None:
            series.append((f"mutators @ {r.strategy} budget", _mutator_series(r.comparison), True))
    top = max((p[0] for _, pts, _ in series for p in pts), default=0) or 1
    keys = [
        LegendEntry(name, PALETTE[i % len(PALETTE)], dash="5 3" if dashed else None)
        for i, (name, _, dashed) in enumerate(series)
    ]
    heading = "Goal-preserving ASR against defense queries"
    finals = [
        f"{k.text} {percent(pts[-1][1])}"
        for k, (_, pts, _) in zip(keys, series, strict=True)
        if pts
    ]
    svg = Svg(
        "llm-asr",
        700,
        340,
        title=heading,
        desc="attack success rate (goal preserved) against defense queries, static pass "
        "excluded, with 95% Wilson bands; final: " + "; ".join(finals),
    )
    title(svg, 6, 16, heading)
    ax = Axes(svg, Box(62, 28, 440, 256), x=(0.0, float(top)), y=(0.0, 1.0))
    ax.frame(x_format=plain, y_format=percent)
    ax.labels(x="defense queries (static pass excluded)", y="attack success rate")
    ax.begin_data()
    for key, (_, pts, _) in zip(keys, series, strict=True):
        if not pts:
            continue
        lx, low = _steps(pts, 2)
        hx, high = _steps(pts, 3)
        band = ax.points(hx, high) + ax.points(lx, low)[::-1]
        svg.polygon(band, fill=key.colour, opacity=0.15)
        xs, ys = _steps(pts, 1)
        svg.polyline(ax.points(xs, ys), stroke=key.colour, width=2.0, dash=key.dash, tip=key.text)
    ax.end_data()
    legend(svg, ax.box.right + 16, ax.box.top, keys, size=9)
    return svg.render() + "\n"
