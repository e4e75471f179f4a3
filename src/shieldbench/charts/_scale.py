"""Axis scales and their ticks: linear with "nice" steps (1, 2, 5 x 10^k), or
logarithmic with plain-number ticks (0.1, 1, 10; 2 and 5 in between when the axis
spans under two decades, so that it never shows one lonely label)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Scale", "nice_ticks", "percent", "plain"]


def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """At most about ``count`` evenly spaced round values from ``low`` to ``high``
    (both included when they are round): 0, 0.2, ... 1.0 for ``(0, 1)``."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / max(1, count - 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(s * power for s in (1.0, 2.0, 2.5, 5.0, 10.0) if s * power >= raw - 1e-12)
    first = math.ceil(low / step - 1e-9)
    ticks = []
    k = first
    while k * step <= high + step * 1e-9:
        ticks.append(round(k * step, 12))
        k += 1
    return ticks


def plain(value: float) -> str:
    """A tick as a short plain number: ``0.1``, ``1``, ``250``, ``1e+04``."""
    return f"{value:g}"


def percent(value: float) -> str:
    """A rate tick as a percentage: ``0.25`` -> ``25%``, ``0.005`` -> ``0.5%``."""
    return f"{100 * value:.3g}%"


@dataclass(frozen=True, slots=True)
class Scale:
    """Data values ``low..high`` onto pixels ``start..end`` (``end < start`` for a
    y axis, which grows upwards; ``low > high`` reverses the axis, as for rows listed
    from the top); ``log``: logarithmic (both ends above zero)."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False

    def __post_init__(self) -> None:
        if self.log and (self.low <= 0 or self.high <= 0):
            raise ValueError(f"a log scale needs positive ends, not {self.low}..{self.high}")

    def _t(self, value: float) -> float:
        return math.log10(value) if self.log else value

    def __call__(self, value: float) -> float:
        """The pixel of ``value`` (a non-positive value on a log scale: the start)."""
        lo, hi = self._t(self.low), self._t(self.high)
        if self.log and value <= 0:
            return self.start
        if hi == lo:
            return (self.start + self.end) / 2
        return self.start + (self._t(value) - lo) / (hi - lo) * (self.end - self.start)

    def ticks(self, count: int = 6) -> list[tuple[float, bool]]:
        """``(value, labelled)`` ticks inside the scale: nice linear steps, or on a log
        scale every power of ten, with 2 and 5 (labelled when the axis spans under two
        decades) and the other integers as unlabelled minor ticks."""
        if not self.log:
            return [(v, True) for v in nice_ticks(self.low, self.high, count)]
        short = self.high / self.low < 100
        ticks = []
        for power in range(math.floor(math.log10(self.low)), math.ceil(math.log10(self.high)) + 1):
            for lead in range(1, 10):
                value = float(f"{lead}e{power}")
                if self.low * (1 - 1e-9) <= value <= self.high * (1 + 1e-9):
                    ticks.append((value, lead == 1 or (short and lead in (2, 5))))
        return ticks
