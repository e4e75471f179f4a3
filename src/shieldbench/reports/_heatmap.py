"""The heatmap of defenses x attack categories (block rate in every cell), as inline
SVG drawn with :mod:`shieldbench.charts`: red is let through, green is blocked, the
value is written in every cell and a colour bar reads the scale."""

from __future__ import annotations

from collections.abc import Sequence

from shieldbench.charts import Box, Svg, label, percent, text_width, title
from shieldbench.reports._chart_svg import MAX_ROWS
from shieldbench.reports._model import RunSection

__all__ = ["colour", "heatmap_chart"]

# ColorBrewer's RdYlGn at 0, 0.25, 0.5, 0.75 and 1 (red: let through, green: blocked).
_STOPS = ((165, 0, 38), (244, 109, 67), (255, 255, 191), (102, 189, 99), (0, 104, 55))
_CELL_W, _CELL_H, _TICK = 34.0, 22.0, 8.0


def colour(value: float) -> str:
    """The colour of a rate in ``[0, 1]`` on the red-yellow-green scale."""
    v = min(1.0, max(0.0, value)) * (len(_STOPS) - 1)
    i = min(int(v), len(_STOPS) - 2)
    f = v - i
    a, b = _STOPS[i], _STOPS[i + 1]
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b, strict=True))


def heatmap_chart(runs: Sequence[RunSection], *, name: str = "heatmap") -> str | None:
    """Defenses x attack categories, block rate in each cell (needs two or more runs)."""
    if len(runs) < 2:
        return None
    tables = [
        {g.group: g.block_rate for g in r.summary.breakdowns.by.get("category", ())} for r in runs
    ]
    cats = sorted({c for t in tables for c, v in t.items() if v.value is not None})[:MAX_ROWS]
    if not cats:
        return None
    cols = [label(c, 24) for c in cats]
    rows = [label(r.label, 32) for r in runs]
    left = 12 + max(text_width(t, _TICK) for t in rows)
    below = 16 + 0.71 * max(text_width(t, _TICK) for t in cols)  # labels at 45 degrees
    box = Box(left, 30, _CELL_W * len(cats), _CELL_H * len(runs))
    heading = "Block rate (%) per defense and attack category"
    svg = Svg(
        name,
        max(box.right + 70, left + text_width(heading, 9) + 12),
        box.bottom + below + 10,
        title=heading,
        desc=f"{len(runs)} defenses (rows) by {len(cats)} attack categories (columns); "
        "each cell holds the block rate in percent, red let through, green blocked",
    )
    title(svg, 6, 16, heading, size=9.0)
    for i, (run, table) in enumerate(zip(rows, tables, strict=True)):
        y = box.top + i * _CELL_H
        svg.text(box.left - 6, y + _CELL_H / 2 + 3, run, size=_TICK, anchor="end")
        for j, cat in enumerate(cats):
            x, rate = box.left + j * _CELL_W, table.get(cat)
            if rate is None or rate.value is None:
                svg.rect(
                    x,
                    y,
                    _CELL_W,
                    _CELL_H,
                    fill="#f2f2f2",
                    stroke="#ffffff",
                    tip=f"{run}, {cols[j]}: no value",
                )
                continue
            tip = f"{run}, {cols[j]}: {percent(rate.value)} [{percent(rate.ci_low)}, "
            tip += f"{percent(rate.ci_high)}]"
            svg.rect(x, y, _CELL_W, _CELL_H, fill=colour(rate.value), stroke="#ffffff", tip=tip)
            svg.text(
                x + _CELL_W / 2,
                y + _CELL_H / 2 + 3,
                f"{100 * rate.value:.0f}",
                size=7,
                anchor="middle",
            )
    for j, cat in enumerate(cols):
        x = box.left + (j + 0.5) * _CELL_W
        svg.text(x, box.bottom + 10, cat, size=_TICK, anchor="end", rotate=-45)
    bar_x, steps = box.right + 14, 20
    for k in range(steps):
        v = 1.0 - (k + 0.5) / steps
        svg.rect(
            bar_x, box.top + k * box.height / steps, 10, box.height / steps + 0.3, fill=colour(v)
        )
    for v in (0.0, 0.5, 1.0):
        svg.text(bar_x + 14, box.top + (1 - v) * box.height + 3, percent(v), size=7)
    return svg.render()
