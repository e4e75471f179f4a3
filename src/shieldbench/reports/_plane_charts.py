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
from typing import TYPE_CHECKING

from shieldbench.reports._charts import PALETTE, Margins, label, render_svg
from shieldbench.reports._plane import PlanePoint, TradeoffPlane
from shieldbench.reports._ticks import nice_end

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["MAX_PANELS", "marker", "plane_chart", "plane_multiples"]

MARKERS = ("o", "s", "^", "D", "v", "P")
# Where each point's number goes (points), in turn, so coinciding points stay readable.
_OFFSETS = ((4, 3), (4, -10), (-11, 3), (-11, -10))
MAX_PANELS = 24


def marker(index: int) -> tuple[str, str]:
    """``(colour, marker)`` of the ``index``-th defense (0-based)."""
    return PALETTE[index % len(PALETTE)], MARKERS[index % len(MARKERS)]


def _limit(values: Sequence[float], floor: float) -> float:
    """An axis end a little beyond the largest value (see :func:`nice_end`)."""
    return nice_end(1.08 * max([floor, *values]), steps=(1.0, 1.5, 2.0, 3.0, 5.0, 7.5))


def _draw(
    ax: Axes,
    plane: TradeoffPlane,
    index: dict[str, int],
    *,
    size: float,
    numbers: bool,
    large: bool = True,
) -> None:
    points = [
        p
        for p in plane.points
        if p.false_positive_rate.value is not None and p.block_rate.value is not None
    ]
    x_end = _limit([p.false_positive_rate.ci_high for p in points], plane.max_fpr or 0.01)
    if plane.max_fpr is not None:
        x_end = max(x_end, _limit([plane.max_fpr * 1.25], 0.01))
    y_end = _limit([p.block_rate.ci_high for p in points], 0.1)
    for p in points:
        i = index[p.label]
        colour, mark = marker(i)
        fx, by = p.false_positive_rate, p.block_rate
        x, y = fx.value or 0.0, by.value or 0.0
        ax.errorbar(
            [x],
            [y],
            xerr=[[max(0.0, x - fx.ci_low)], [max(0.0, fx.ci_high - x)]],
            yerr=[[max(0.0, y - by.ci_low)], [max(0.0, by.ci_high - y)]],
            fmt=mark,
            color=colour,
            markersize=size,
            markeredgecolor="#222222" if p.on_frontier else colour,
            markeredgewidth=1.2 if p.on_frontier else 0.5,
            elinewidth=0.8,
            capsize=2,
            alpha=0.95,
            label=label(f"{i + 1} {p.label}", 40),
        )
        if numbers:
            ax.annotate(
                str(i + 1),
                (x, y),
                xytext=_OFFSETS[i % len(_OFFSETS)],
                textcoords="offset points",
                fontsize=7,
                color="#222222",
            )
    front = _frontier_xy(plane.frontier)
    if len(front[0]) >= 1:
        xs = [*front[0], x_end]
        ys = [*front[1], front[1][-1]]
        ax.step(xs, ys, where="post", color="#444444", linewidth=1, linestyle="-", alpha=0.6)
    if plane.max_fpr is not None:
        ax.axvline(plane.max_fpr, color="#b42318", linestyle="--", linewidth=1)
        ax.axvspan(plane.max_fpr, x_end, color="#888888", alpha=0.08, linewidth=0)
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.set_xlim(0, x_end)
    ax.set_ylim(0, y_end)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{100 * v:.3g}%"))
        axis.set_major_locator(MaxNLocator(6 if large else 4))


def _frontier_xy(front: Sequence[PlanePoint]) -> tuple[list[float], list[float]]:
    xs = [p.false_positive_rate.value or 0.0 for p in front]
    ys = [p.block_rate.value or 0.0 for p in front]
    return xs, ys


def plane_chart(plane: TradeoffPlane, order: Sequence[str], *, name: str = "plane") -> str | None:
    """The plane of every defense (``order``: the labels, numbering the points)."""
    if not any(p.false_positive_rate.value is not None for p in plane.points):
        return None
    index = {lab: i for i, lab in enumerate(order)}
    n = len(plane.points)

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        _draw(ax, plane, index, size=6, numbers=True)
        ax.set_xlabel("false positive rate (benign texts blocked), 95% interval")
        ax.set_ylabel("block rate (attacks stopped), 95% interval")
        title = "Security / utility: up is safer, left is more usable"
        ax.set_title(title, loc="left")
        ax.plot([], [], color="#444444", alpha=0.6, label="Pareto frontier")
        if plane.max_fpr is not None:
            policy = f"policy: FPR ≤ {100 * plane.max_fpr:g}%"
            ax.plot([], [], color="#b42318", linestyle="--", label=policy)
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=7,
            ncols=2 if n > 14 else 1,
        )

    return render_svg(name, (8.4, 4.4), draw)


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

    def draw(fig: Figure) -> None:
        axes = fig.subplots(rows, cols, squeeze=False)
        for k, ax in enumerate(axes.flat):
            if k >= len(shown):
                ax.set_visible(False)
                continue
            plane = shown[k]
            _draw(ax, plane, index, size=4, numbers=True, large=False)
            ax.set_title(label(plane.group or "", 32), loc="left", fontsize=8)
            ax.tick_params(labelsize=7)
            if k % cols == 0:
                ax.set_ylabel("block rate", fontsize=7)
            if k // cols == rows - 1:
                fpr = "FPR" if plane.fpr_scope == "group" else "overall FPR"
                ax.set_xlabel(fpr, fontsize=7)

    # Fixed margins: the panels' labels are short (percent ticks, a 32-character title,
    # "block rate", "overall FPR"), and constrained layout would measure each of up to
    # 24 panels (two thirds of a pattern-only run's chart time).
    margins = Margins(left=0.6, bottom=0.45, right=0.15, top=0.3, wspace=0.32, hspace=0.5)
    return render_svg(name, (2.35 * cols + 0.4, 2.1 * rows + 0.3), draw, margins=margins)
