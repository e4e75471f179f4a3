"""Axis ends for rates: :func:`nice_end` (the plane charts' axes)."""

from __future__ import annotations

import math

__all__ = ["nice_end"]


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
