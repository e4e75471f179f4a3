"""Charts of the security / utility plane (see :mod:`._plane`): one large plane and
small multiples per attack category.

Every defense is a point at (FPR, block rate) with both 95% intervals as error bars,
numbered in the order of the report's runs (the legend names them); the Pareto
frontier is drawn as a staircase through its points; a policy (``max_fpr``) is a
dashed vertical line with the region beyond it shaded. Colour and marker both
change from one defense to the next (8 colours x 6 markers), so twelve or more
defenses stay distinguishable without relying on colour alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
from shieldbench.reports._plane import PlanePoint, TradeoffPlane
from shieldbench.reports._ticks import nice_end

__all__ = ["MAX_PANELS", "marker", "plane_chart", "plane_multiples"]

MARKERS = ("o", "s", "^", "D", "v", "P")
# Where each point's number goes (pixels from the point), in turn, so coinciding
# points stay readable.
_OFFSETS = ((4, -4), (4, 10), (-11, -4), (-11, 10))
MAX_PANELS = 24
_POLICY = "#b42318"


def marker(index: int) -> tuple[str, str]:
    """``(colour, marker)`` of the ``index``-th defense (0-based)."""
    return PALETTE[index % len(PALETTE)], MARKERS[index % len(MARKERS)]


def _limit(values: Sequence[float], floor: float) -> float:
    """An axis end a little beyond the largest value (see :func:`nice_end`)."""
    return nice_end(1.08 * max([floor, *values]), steps=(1.0, 1.5, 2.0, 3.0, 5.0, 7.5))


def _draw(
    svg: Svg,
    box: Box,
    plane: TradeoffPlane,
    index: dict[str, int],
    *,
    size: float,
    large: bool = True,
) -> Axes:
    """One plane in ``box``: ticks, policy line and shade, frontier, numbered points."""
    points = [
        p
        for p in plane.points
        if p.false_positive_rate.value is not None and p.block_rate.value is not None
    ]
    x_end = _limit([p.false_positive_rate.ci_high for p in points], plane.max_fpr or 0.01)
    if plane.max_fpr is not None:
        x_end = max(x_end, _limit([plane.max_fpr * 1.25], 0.01))
    y_end = _limit([p.block_rate.ci_high for p in points], 0.1)
    tick = 8.0 if large else 7.0
    ax = Axes(svg, box, x=(0.0, x_end), y=(0.0, y_end))
    ax.frame(
        x_format=percent,
        y_format=percent,
        x_ticks=6 if large else 4,
        y_ticks=6 if large else 4,
        tick_size=tick,
    )
    ax.begin_data()
    if plane.max_fpr is not None:
        left = ax.x(plane.max_fpr)
        svg.rect(left, box.top, box.right - left, box.height, fill="#888888", opacity=0.08)
        ax.vline(plane.max_fpr, stroke=_POLICY, dash="4 3")
    xs, ys = _frontier_xy(plane.frontier)
    if xs:
        sx, sy = [xs[0]], [ys[0]]
        for x, y in zip([*xs[1:], x_end], [*ys[1:], ys[-1]], strict=True):
            sx += [x, x]
            sy += [sy[-1], y]
        svg.polyline(
            ax.points(sx, sy), stroke="#444444", width=1.0, opacity=0.6, tip="Pareto frontier"
        )
    for p in points:
        i = index[p.label]
        colour, shape = marker(i)
        fx, by = p.false_positive_rate, p.block_rate
        cx, cy = ax.x(fx.value or 0.0), ax.y(by.value or 0.0)
        for a, b in ((ax.x(fx.ci_low), ax.x(fx.ci_high)),):
            svg.line(a, cy, b, cy, stroke=colour, width=0.8)
            for end in (a, b):
                svg.line(end, cy - 2, end, cy + 2, stroke=colour, width=0.8)
        lo, hi = ax.y(by.ci_low), ax.y(by.ci_high)
        svg.line(cx, lo, cx, hi, stroke=colour, width=0.8)
        for end in (lo, hi):
            svg.line(cx - 2, end, cx + 2, end, stroke=colour, width=0.8)
        tip = (
            f"{i + 1} {label(p.label, 60)}: FPR {percent(fx.value or 0.0)} "
            f"[{percent(fx.ci_low)}, {percent(fx.ci_high)}], block rate "
            f"{percent(by.value or 0.0)} [{percent(by.ci_low)}, {percent(by.ci_high)}]"
            + (", on the Pareto frontier" if p.on_frontier else "")
        )
        svg.marker(
            shape,
            cx,
            cy,
            size,
            fill=colour,
            stroke="#222222" if p.on_frontier else colour,
            width=1.2 if p.on_frontier else 0.5,
            tip=tip,
        )
        dx, dy = _OFFSETS[i % len(_OFFSETS)]
        svg.text(cx + dx, cy + dy, str(i + 1), size=7)
    ax.end_data()
    return ax


def _frontier_xy(front: Sequence[PlanePoint]) -> tuple[list[float], list[float]]:
    xs = [p.false_positive_rate.value or 0.0 for p in front]
    ys = [p.block_rate.value or 0.0 for p in front]
    return xs, ys


def plane_chart(plane: TradeoffPlane, order: Sequence[str], *, name: str = "plane") -> str | None:
    """The plane of every defense (``order``: the labels, numbering the points)."""
    if not any(p.false_positive_rate.value is not None for p in plane.points):
        return None
    index = {lab: i for i, lab in enumerate(order)}
    keys = [
        LegendEntry(label(f"{index[p.label] + 1} {p.label}", 40), *marker(index[p.label]))
        for p in sorted(plane.points, key=lambda p: index[p.label])
    ]
    keys.append(LegendEntry("Pareto frontier", "#444444"))
    if plane.max_fpr is not None:
        keys.append(LegendEntry(f"policy: FPR ≤ {100 * plane.max_fpr:g}%", _POLICY, dash="4 3"))
    columns = 2 if len(plane.points) > 14 else 1
    key_width = columns * (22 + max(text_width(k.text, 7) for k in keys))
    rows = -(-len(keys) // columns)
    box = Box(72, 30, 420, 250)
    heading = "Security / utility: up is safer, left is more usable"
    svg = Svg(
        name,
        box.right + 24 + key_width,
        max(box.bottom + 46, box.top + 12 * rows + 10),
        title=heading,
        desc="each defense at its false positive rate (x) and block rate (y), both with "
        "95% intervals, numbered as in the legend; the Pareto frontier joins the defenses "
        "no other one beats on both rates"
        + ("" if plane.max_fpr is None else f"; policy FPR at most {100 * plane.max_fpr:g}%"),
    )
    title(svg, 6, 16, heading, size=10.0)
    ax = _draw(svg, box, plane, index, size=7)
    ax.labels(
        x="false positive rate (benign texts blocked), 95% interval",
        y="block rate (attacks stopped), 95% interval",
        size=9.0,
    )
    legend(svg, box.right + 20, box.top, keys, size=7, columns=columns)
    return svg.render()


def plane_multiples(
    planes: Sequence[TradeoffPlane], order: Sequence[str], *, name: str = "plane-multiples"
) -> str | None:
    """Small multiples: one plane per attack category (the numbers are the legend's)."""
    shown = [p for p in planes if any(q.false_positive_rate.value is not None for q in p.points)][
        :MAX_PANELS
    ]
    if not shown:
        return None
    index = {lab: i for i, lab in enumerate(order)}
    cols = min(4, len(shown))
    rows = math.ceil(len(shown) / cols)
    # A fixed grid: every label is short (percent ticks, a 32-character title cut by
    # label(), "block rate", "overall FPR"), so each cell keeps room for them.
    cell_w, cell_h, pad_l, pad_t, pad_b = 200.0, 176.0, 58.0, 22.0, 40.0
    svg = Svg(
        name,
        cols * cell_w + 8,
        rows * cell_h + 8,
        title="The security / utility plane per attack category",
        desc=f"{len(shown)} panels, one per attack category: the category's block rate "
        "against the false positive rate, points numbered as in the plane's legend",
    )
    for k, plane in enumerate(shown):
        x0, y0 = 4 + (k % cols) * cell_w, 4 + (k // cols) * cell_h
        box = Box(x0 + pad_l, y0 + pad_t, cell_w - pad_l - 10, cell_h - pad_t - pad_b)
        svg.open_group(label=label(plane.group or "", 32))
        title(svg, x0 + 4, y0 + 12, label(plane.group or "", 32), size=8.0)
        ax = _draw(svg, box, plane, index, size=5, large=False)
        fpr = "FPR" if plane.fpr_scope == "group" else "overall FPR"
        ax.labels(x=fpr, y="block rate", size=7.0, tick_size=7.0)
        svg.close_group()
    return svg.render()
