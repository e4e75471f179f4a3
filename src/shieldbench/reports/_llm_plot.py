"""ASR against queries for several strategies on one SVG plot, with interval bands.

A plain SVG string (no plotting dependency): one step line per LLM strategy
(goal-preserving ASR) with its Wilson 95% interval as a shaded band, and, when
an attack carries one (``comparison``), the mutator search's payload-preserving ASR
at the same number of queries (its own intervals, computed here from its counts) as
a dashed line. The x axis is defense queries, static
pass excluded; the y axis ASR from 0 to 100%.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from shieldbench.metrics import rate

if TYPE_CHECKING:
    from shieldbench.attacks import AttackResult, LLMAttackResult

__all__ = ["llm_asr_svg"]

_W, _H, _L, _B, _T, _R = 640, 360, 56, 40, 24, 150
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")

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


def _steps(points: Series, pick: int, sx: float) -> list[tuple[float, float]]:
    """Step-after coordinates of column ``pick`` of ``points``."""
    out: list[tuple[float, float]] = []
    for i, p in enumerate(points):
        if i:
            out.append((p[0] * sx, points[i - 1][pick]))
        out.append((p[0] * sx, p[pick]))
    return out


def _xy(x: float, y: float) -> str:
    return f"{_L + x:.1f},{_T + (1 - y) * (_H - _T - _B):.1f}"


def llm_asr_svg(results: Sequence[LLMAttackResult]) -> str:
    """The plot (see the module docstring) as an SVG document."""
    series: list[tuple[str, Series, bool]] = [(r.strategy, _llm_series(r), False) for r in results]
    for r in results:
        if r.comparison is not None:
            series.append((f"mutators @ {r.strategy} budget", _mutator_series(r.comparison), True))
    top = max((p[0] for _, pts, _ in series for p in pts), default=0) or 1
    sx = (_W - _L - _R) / top
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}"'
        ' font-family="sans-serif" font-size="11">',
        f'<rect width="{_W}" height="{_H}" fill="white"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        a, b = _xy(0, tick), _xy(_W - _L - _R, tick)
        parts.append(f'<polyline points="{a} {b}" stroke="#ddd" fill="none"/>')
        y = a.split(",")[1]
        parts.append(f'<text x="{_L - 6}" y="{y}" text-anchor="end">{tick:.0%}</text>')
    for q in (0, top // 2, top):
        x = _L + q * sx
        parts.append(f'<text x="{x:.1f}" y="{_H - _B + 16}" text-anchor="middle">{q}</text>')
    parts.append(f'<text x="{_L + (_W - _L - _R) / 2:.1f}" y="{_H - 6}" text-anchor="middle">'
                 "defense queries (static pass excluded)</text>")  # fmt: skip
    for i, (name, pts, dashed) in enumerate(series):
        colour = _COLOURS[i % len(_COLOURS)]
        if not pts:
            continue
        low, high = _steps(pts, 2, sx), _steps(pts, 3, sx)
        band = " ".join(_xy(x, y) for x, y in [*high, *reversed(low)])
        parts.append(f'<polygon points="{band}" fill="{colour}" opacity="0.15"/>')
        line = " ".join(_xy(x, y) for x, y in _steps(pts, 1, sx))
        dash = ' stroke-dasharray="5,3"' if dashed else ""
        parts.append(
            f'<polyline points="{line}" stroke="{colour}" fill="none" stroke-width="2"{dash}/>'
        )
        ly = _T + 14 * i + 8
        parts.append(f'<text x="{_W - _R + 10}" y="{ly}" fill="{colour}">{escape(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
