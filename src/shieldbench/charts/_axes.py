"""A plotting area inside an :class:`~._svg.Svg`: two scales, a frame with ticks,
grid lines and labels, a legend, and clipped drawing of data in data coordinates.

The layout is explicit: the caller gives the pixel box of the plotting area and
keeps the margins around it for tick labels and titles (labels are cut to a known
length, and :func:`~._svg.text_width` estimates their extent), so nothing needs
measuring and the same data give the same chart."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shieldbench.charts._scale import Scale, plain
from shieldbench.charts._svg import Svg, text_width

__all__ = ["Axes", "Box", "LegendEntry", "legend", "title"]

GRID = "#e3e3e3"
INK = "#222222"
MUTED = "#555555"


@dataclass(frozen=True, slots=True)
class Box:
    """A pixel rectangle: left, top, width, height."""

    left: float
    top: float
    width: float
    height: float

    @property
    def right(self) -> float:
        return self.left + self.width

    @property
    def bottom(self) -> float:
        return self.top + self.height


@dataclass(frozen=True, slots=True)
class LegendEntry:
    """One legend line: a ``kind`` of key (``line``, ``bar``, or a marker shape such
    as ``o``), its colour, optional dash pattern, and the text."""

    text: str
    colour: str
    kind: str = "line"
    dash: str | None = None


class Axes:
    """Data coordinates mapped onto ``box`` by ``x`` and ``y`` scales (build those
    with :meth:`Scale` ends from the data; the pixels come from the box)."""

    def __init__(
        self,
        svg: Svg,
        box: Box,
        *,
        x: tuple[float, float],
        y: tuple[float, float],
        x_log: bool = False,
    ) -> None:
        self.svg = svg
        self.box = box
        self.x = Scale(x[0], x[1], box.left, box.right, log=x_log)
        self.y = Scale(y[0], y[1], box.bottom, box.top)

    def frame(
        self,
        *,
        x_format: Callable[[float], str] = plain,
        y_format: Callable[[float], str] = plain,
        x_ticks: int = 6,
        y_ticks: int = 6,
        grid: bool = True,
        tick_size: float = 8.0,
        y_labels: Sequence[tuple[float, str]] | None = None,
    ) -> None:
        """Grid lines, the left and bottom axes, and labelled ticks (``y_labels``:
        category labels at given y values instead of numeric ticks)."""
        b, s = self.box, self.svg
        for value, labelled in self.x.ticks(x_ticks):
            px = self.x(value)
            if grid:
                s.line(px, b.top, px, b.bottom, stroke=GRID, width=0.8 if labelled else 0.4)
            s.line(px, b.bottom, px, b.bottom + (4 if labelled else 2), stroke=INK, width=0.8)
            if labelled:
                s.text(
                    px, b.bottom + 6 + tick_size, x_format(value), size=tick_size, anchor="middle"
                )
        if y_labels is None:
            for value, _ in self.y.ticks(y_ticks):
                py = self.y(value)
                if grid:
                    s.line(b.left, py, b.right, py, stroke=GRID, width=0.8)
                s.line(b.left - 4, py, b.left, py, stroke=INK, width=0.8)
                s.text(
                    b.left - 6, py + tick_size / 3, y_format(value), size=tick_size, anchor="end"
                )
        else:
            for value, text in y_labels:
                py = self.y(value)
                s.line(b.left - 4, py, b.left, py, stroke=INK, width=0.8)
                s.text(b.left - 6, py + tick_size / 3, text, size=tick_size, anchor="end")
        s.line(b.left, b.bottom, b.right, b.bottom, stroke=INK, width=0.8)
        s.line(b.left, b.top, b.left, b.bottom, stroke=INK, width=0.8)

    def labels(
        self, *, x: str = "", y: str = "", size: float = 9.0, tick_size: float = 8.0
    ) -> None:
        """Axis titles: ``x`` under the tick labels, ``y`` rotated left of them."""
        b = self.box
        if x:
            self.svg.text(
                (b.left + b.right) / 2, b.bottom + 2 * tick_size + 12, x, size=size, anchor="middle"
            )
        if y:
            cx, cy = b.left - 44, (b.top + b.bottom) / 2
            self.svg.text(cx, cy, y, size=size, anchor="middle", rotate=-90)

    def begin_data(self) -> None:
        """Start drawing data: clipped to the plotting area (close with :meth:`end_data`)."""
        b = self.box
        self.svg.open_group(clip=self.svg.clip(b.left - 1, b.top - 1, b.width + 2, b.height + 2))

    def end_data(self) -> None:
        self.svg.close_group()

    def points(self, xs: Sequence[float], ys: Sequence[float]) -> list[tuple[float, float]]:
        """Pixels of the data points ``(xs[i], ys[i])``."""
        return [(self.x(a), self.y(b)) for a, b in zip(xs, ys, strict=True)]

    def vline(
        self,
        value: float,
        *,
        stroke: str,
        dash: str | None = None,
        width: float = 1.0,
        opacity: float | None = None,
    ) -> None:
        px = self.x(value)
        self.svg.line(
            px,
            self.box.top,
            px,
            self.box.bottom,
            stroke=stroke,
            dash=dash,
            width=width,
            opacity=opacity,
        )


def title(svg: Svg, x: float, y: float, text: str, *, size: float = 10.0) -> None:
    """A chart or panel title, left-aligned at ``(x, y)``."""
    svg.text(x, y, text, size=size, fill=INK)


def legend(
    svg: Svg,
    x: float,
    y: float,
    entries: Sequence[LegendEntry],
    *,
    size: float = 8.0,
    columns: int = 1,
    anchor: str = "start",
) -> float:
    """Legend lines from ``(x, y)`` (top left; ``anchor="end"``: ``x`` is the right
    edge); returns the legend's width. Each key shows its line, bar or marker."""
    row = size + 5
    col_width = 22 + max((text_width(e.text, size) for e in entries), default=0.0)
    width = col_width * columns
    left = x - width if anchor == "end" else x
    per_col = -(-len(entries) // max(1, columns))
    for i, e in enumerate(entries):
        cx, cy = left + col_width * (i // per_col), y + row * (i % per_col) + size / 2
        if e.kind == "line":
            svg.line(cx, cy, cx + 16, cy, stroke=e.colour, width=1.6, dash=e.dash)
        elif e.kind == "bar":
            svg.rect(cx + 2, cy - 4, 12, 8, fill=e.colour)
        else:
            svg.marker(e.kind, cx + 8, cy, 7, fill=e.colour, stroke=e.colour)
        svg.text(cx + 20, cy + size / 3, e.text, size=size)
    return width
