"""Charts as inline SVG, written directly (no plotting library): the one owner of
the project's SVG charts, used by the HTML report and the local viewer.

Two families share the same escaping and number formatting:

- the report's charts are built from parts: an :class:`Svg` document (escaped text,
  accessible ``<title>``/``<desc>``, ids prefixed with the chart's name, colours as
  presentation attributes), :class:`Axes` (scales, ticks, grid, axis labels,
  clipped data), :func:`legend` and :func:`title`; ``shieldbench.reports`` draws
  each chart with them;
- the viewer's charts (:func:`interval_bars`, :func:`line_chart`, :func:`plane`,
  :func:`histogram`) are whole charts coloured by the viewer's stylesheet classes
  (``s0`` ... ``s5``), so its strict Content-Security-Policy holds.

Drawing a chart costs milliseconds and imports nothing heavy (a pattern-only
benchmark once spent two thirds of its time in matplotlib drawing eight charts).

Example:
    >>> svg = Svg("demo", 200, 100, title="Demo", desc="one line")
    >>> ax = Axes(svg, Box(40, 10, 150, 60), x=(0.0, 1.0), y=(0.0, 1.0))
    >>> ax.frame(x_format=percent)
    >>> svg.polyline(ax.points([0.0, 1.0], [0.0, 1.0]), stroke=PALETTE[0])
    >>> svg.render().startswith("<svg")
    True
"""

from __future__ import annotations

import re

from shieldbench.charts._axes import Axes, Box, LegendEntry, legend, title
from shieldbench.charts._classed import (
    Bar,
    Point,
    Series,
    histogram,
    interval_bars,
    line_chart,
    plane,
)
from shieldbench.charts._scale import Scale, nice_ticks, percent, plain
from shieldbench.charts._svg import Svg, text_width

__all__ = [
    "PALETTE",
    "Axes",
    "Bar",
    "Box",
    "LegendEntry",
    "Point",
    "Scale",
    "Series",
    "Svg",
    "histogram",
    "interval_bars",
    "label",
    "legend",
    "line_chart",
    "nice_ticks",
    "percent",
    "plain",
    "plane",
    "text_width",
    "title",
]

# Okabe & Ito's colour-blind-safe palette.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def label(text: str, limit: int = 48) -> str:
    """A chart label: control characters removed, whitespace collapsed, cut to ``limit``."""
    text = " ".join(_CONTROL.sub(" ", text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
