"""The viewer's charts as inline SVG, drawn on the server: no script, no style attribute.

Every chart has a ``viewBox`` and scales to its container (the stylesheet sets
``width: 100%``); colours come from classes the packaged stylesheet defines (``s0``
... ``s5`` per series), so the strict Content-Security-Policy (no inline style)
holds. Every text from data goes through :func:`markupsafe.escape`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

__all__ = ["Bar", "Point", "Series", "histogram", "interval_bars", "line_chart", "plane"]

_W, _PAD_L, _PAD_R, _PAD_T, _PAD_B = 640, 150, 20, 16, 34


@dataclass(frozen=True, slots=True)
class Bar:
    """A rate with its interval, drawn as a bar with a whisker (``None``: no value)."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    note: str = ""


@dataclass(frozen=True, slots=True)
class Series:
    """One line of a line chart: its name and ``(x, y)`` points, in order."""

    name: str
    points: Sequence[tuple[float, float]]
    marks: Sequence[tuple[float, float, str]] = ()  # (x, y, title): ringed points


@dataclass(frozen=True, slots=True)
class Point:
    """A defense on the security / utility plane with both intervals."""

    label: str
    fpr: float
    fpr_low: float
    fpr_high: float
    block: float
    block_low: float
    block_high: float
    on_frontier: bool


def _f(x: float) -> str:
    return f"{x:.1f}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _open(height: int, title: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {_W} {height}" role="img"'
        f' preserveAspectRatio="xMinYMin meet" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
    )


def interval_bars(bars: Sequence[Bar], *, title: str) -> Markup:
    """Horizontal bars on a 0-100% axis, each with its interval as a whisker."""
    row = 26
    height = _PAD_T + row * max(1, len(bars)) + _PAD_B
    plot = _W - _PAD_L - _PAD_R
    out = [_open(height, title)]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = _PAD_L + tick * plot
        out.append(
            f'<line class="grid" x1="{_f(x)}" y1="{_PAD_T}" x2="{_f(x)}"'
            f' y2="{height - _PAD_B}"/><text class="tick" x="{_f(x)}"'
            f' y="{height - _PAD_B + 16}" text-anchor="middle">{int(tick * 100)}%</text>'
        )
    for i, bar in enumerate(bars):
        y = _PAD_T + i * row
        label = bar.label if len(bar.label) <= 22 else bar.label[:21] + "…"
        out.append(
            f'<text class="label" x="{_PAD_L - 6}" y="{y + 17}" text-anchor="end">'
            f"<title>{escape(bar.label)}</title>{escape(label)}</text>"
        )
        if bar.value is None:
            out.append(f'<text class="tick" x="{_PAD_L + 4}" y="{y + 17}">n/a</text>')
            continue
        out.append(
            f'<rect class="s{i % 6}" x="{_PAD_L}" y="{y + 5}"'
            f' width="{_f(max(0.5, bar.value * plot))}" height="14"/>'
        )
        if bar.low is not None and bar.high is not None:
            x1, x2 = _PAD_L + bar.low * plot, _PAD_L + bar.high * plot
            out.append(
                f'<line class="ci" x1="{_f(x1)}" y1="{y + 12}" x2="{_f(x2)}" y2="{y + 12}"/>'
                f'<line class="ci" x1="{_f(x1)}" y1="{y + 7}" x2="{_f(x1)}" y2="{y + 17}"/>'
                f'<line class="ci" x1="{_f(x2)}" y1="{y + 7}" x2="{_f(x2)}" y2="{y + 17}"/>'
            )
        text = f"{_pct(bar.value)} {bar.note}".strip()
        out.append(f"<title>{escape(bar.label)}: {escape(text)}</title>")
    out.append("</svg>")
    return Markup("".join(out))


def _scale(lo: float, hi: float, a: float, b: float) -> tuple[float, float]:
    if not math.isfinite(lo) or not math.isfinite(hi) or hi <= lo:
        hi = lo + 1.0
    k = (b - a) / (hi - lo)
    return k, a - lo * k


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    unit_box: bool = False,
    x_ticks: Sequence[tuple[float, str]] = (),
    height: int = 280,
) -> Markup:
    """Lines (one per series) with a legend; ``unit_box``: both axes 0..1 (curves)."""
    left, bottom = 56, height - 40
    xs = [x for s in series for x, _ in s.points] or [0.0, 1.0]
    ys = [y for s in series for _, y in s.points] or [0.0, 1.0]
    x0, x1 = (0.0, 1.0) if unit_box else (min(xs), max(xs))
    y0, y1 = (0.0, 1.0) if unit_box else (min(0.0, min(ys)), max(ys) * 1.05 or 1.0)
    kx, bx = _scale(x0, x1, left, _W - _PAD_R)
    ky, by = _scale(y0, y1, bottom, _PAD_T)
    out = [_open(height, title)]
    out.append(
        f'<line class="axis" x1="{left}" y1="{bottom}" x2="{_W - _PAD_R}" y2="{bottom}"/>'
        f'<line class="axis" x1="{left}" y1="{_PAD_T}" x2="{left}" y2="{bottom}"/>'
        f'<text class="tick" x="{(left + _W) // 2}" y="{height - 4}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text class="tick" x="4" y="{_PAD_T + 8}">{escape(y_label)}</text>'
    )
    for frac in (0.0, 0.5, 1.0):
        y = y0 + frac * (y1 - y0)
        shown = f"{y:.0%}" if unit_box or y1 <= 1.0 else f"{y:.3g}"
        out.append(
            f'<text class="tick" x="{left - 4}" y="{_f(ky * y + by + 4)}"'
            f' text-anchor="end">{escape(shown)}</text>'
        )
    ticks = list(x_ticks) or [
        (x0 + f * (x1 - x0), f"{x0 + f * (x1 - x0):.3g}") for f in (0, 0.5, 1)
    ]
    for x, text in ticks:
        out.append(
            f'<text class="tick" x="{_f(kx * x + bx)}" y="{bottom + 14}"'
            f' text-anchor="middle">{escape(text)}</text>'
        )
    for i, s in enumerate(series):
        pts = " ".join(f"{_f(kx * x + bx)},{_f(ky * y + by)}" for x, y in s.points)
        if pts:
            out.append(f'<polyline class="line s{i % 6}" points="{pts}"><title>')
            out.append(f"{escape(s.name)}</title></polyline>")
        for x, y in s.points if len(s.points) <= 60 else ():
            cx, cy = _f(kx * x + bx), _f(ky * y + by)
            out.append(f'<circle class="dot s{i % 6}" cx="{cx}" cy="{cy}" r="3"/>')
        for x, y, what in s.marks:
            out.append(
                f'<circle class="ring" cx="{_f(kx * x + bx)}" cy="{_f(ky * y + by)}" r="7">'
                f"<title>{escape(what)}</title></circle>"
            )
        ly = _PAD_T + 4 + 14 * i
        out.append(
            f'<rect class="s{i % 6}" x="{left + 10}" y="{ly}" width="10" height="10"/>'
            f'<text class="legend" x="{left + 24}" y="{ly + 9}">{escape(s.name[:60])}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def plane(points: Sequence[Point], *, title: str, max_fpr: float | None = None) -> Markup:
    """The security / utility plane: FPR (x) against block rate (y), with intervals."""
    height, left, bottom = 320, 56, 280
    hi_fpr = max([0.05, *(p.fpr_high for p in points)])
    kx, bx = _scale(0.0, min(1.0, hi_fpr * 1.1), left, _W - _PAD_R)
    ky, by = _scale(0.0, 1.0, bottom, _PAD_T)
    out = [_open(height, title)]
    out.append(
        f'<line class="axis" x1="{left}" y1="{bottom}" x2="{_W - _PAD_R}" y2="{bottom}"/>'
        f'<line class="axis" x1="{left}" y1="{_PAD_T}" x2="{left}" y2="{bottom}"/>'
        f'<text class="tick" x="{(left + _W) // 2}" y="{height - 4}" text-anchor="middle">'
        "false positive rate (lower is better)</text>"
        f'<text class="tick" x="4" y="{_PAD_T + 8}">block rate</text>'
    )
    if max_fpr is not None:
        x = kx * max_fpr + bx
        out.append(f'<line class="policy" x1="{_f(x)}" y1="{_PAD_T}" x2="{_f(x)}" y2="{bottom}"/>')
    for i, p in enumerate(points):
        cx, cy = kx * p.fpr + bx, ky * p.block + by
        out.append(
            f'<line class="ci" x1="{_f(kx * p.fpr_low + bx)}" y1="{_f(cy)}"'
            f' x2="{_f(kx * p.fpr_high + bx)}" y2="{_f(cy)}"/>'
            f'<line class="ci" x1="{_f(cx)}" y1="{_f(ky * p.block_low + by)}"'
            f' x2="{_f(cx)}" y2="{_f(ky * p.block_high + by)}"/>'
            f'<circle class="dot s{i % 6}{" frontier" if p.on_frontier else ""}"'
            f' cx="{_f(cx)}" cy="{_f(cy)}" r="5"><title>{escape(p.label)}: FPR'
            f" {_pct(p.fpr)}, block rate {_pct(p.block)}</title></circle>"
            f'<text class="legend" x="{_f(cx + 8)}" y="{_f(cy - 6)}">'
            f"{escape(p.label[:40])}</text>"
        )
    for frac in (0.0, 0.5, 1.0):
        out.append(
            f'<text class="tick" x="{left - 4}" y="{_f(ky * frac + by + 4)}"'
            f' text-anchor="end">{frac:.0%}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def histogram(edges: Sequence[float], counts: Sequence[int], *, title: str) -> Markup:
    """Counts per bin (latency), bins evenly spaced on the chart whatever their width."""
    height, left, bottom = 220, 56, 180
    n = max(1, len(counts))
    top = max([1, *counts])
    width = (_W - _PAD_R - left) / n
    out = [_open(height, title)]
    for i, c in enumerate(counts):
        h = (bottom - _PAD_T) * c / top
        lo, hi = edges[i], edges[i + 1] if i + 1 < len(edges) else edges[i]
        out.append(
            f'<rect class="s0" x="{_f(left + i * width)}" y="{_f(bottom - h)}"'
            f' width="{_f(max(1.0, width - 1))}" height="{_f(h)}"><title>'
            f"{lo:.3g}–{hi:.3g} ms: {c}</title></rect>"
        )
    out.append(
        f'<line class="axis" x1="{left}" y1="{bottom}" x2="{_W - _PAD_R}" y2="{bottom}"/>'
        f'<text class="tick" x="{left}" y="{bottom + 14}">{edges[0]:.3g} ms</text>'
        f'<text class="tick" x="{_W - _PAD_R}" y="{bottom + 14}" text-anchor="end">'
        f"{edges[-1]:.3g} ms</text>"
        f'<text class="tick" x="{left - 4}" y="{_PAD_T + 8}" text-anchor="end">{top}</text>'
    )
    out.append("</svg>")
    return Markup("".join(out))
