"""Axis ticks that read as plain text in the report's SVG charts.

The charts keep mathtext off (``text.parse_math``) so that a ``$`` in a category
name stays a dollar sign. matplotlib's log-axis ticks are mathtext
(``$\\mathdefault{10^{-1}}$``) and would then print literally; these formatters
write plain numbers instead.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["nice_end", "plain_log_xaxis"]


def plain_log_xaxis(ax: Axes) -> None:
    """Make ``ax``'s x axis logarithmic with plain-number ticks: 0.1, 1, 10, ... and,
    when the axis spans under two decades, 2 and 5 between the powers of ten (one
    labelled power of ten alone would be hard to read)."""
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log")

    def major(value: float, _pos: int | None) -> str:
        return f"{value:g}"

    def minor(value: float, _pos: int | None) -> str:
        low, high = ax.get_xlim()
        if value <= 0 or low <= 0 or high / low >= 100:
            return ""
        leading = round(value / 10 ** math.floor(math.log10(value) + 1e-9))
        return f"{value:g}" if leading in (2, 5) else ""

    ax.xaxis.set_major_formatter(FuncFormatter(major))
    ax.xaxis.set_minor_formatter(FuncFormatter(minor))


def nice_end(top: float, *, steps: tuple[float, ...] = (1.0, 2.0, 5.0)) -> float:
    """The smallest of ``steps`` times a power of ten that is at least ``top``, capped
    at 1.0 (an axis or bar-scale end for a rate): 0.031 -> 0.05, 0.2 -> 0.2, 0.6 -> 1.0;
    with ``steps=(1, 1.5, 2, 3, 5, 7.5)`` 0.21 -> 0.3.
    """
    if top <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(top))
    for step in steps:
        if step * power >= top - 1e-12:
            return min(1.0, round(step * power, 12))
    return min(1.0, 10 * power)
