"""Sample-size planning: how many samples a rate needs for a given margin of error.

The margin is the half-width of the 95% (by default) confidence interval around an
observed rate. Two methods:

- ``"wald"``: the textbook ``n = z^2 p (1 - p) / m^2``, rounded up. Simple, but it
  promises too little for rates near 0 or 1.
- ``"wilson"`` (default, matching the intervals we print): the smallest ``n`` whose
  Wilson interval around ``p`` has a half-width of at most ``m``.

Assumptions: samples are independent draws from the traffic the rate describes; the
planned rate ``p`` is a guess (0.5 is the worst case and the safe default).

Example:
    >>> required_sample_size(margin=0.05, rate=0.5, method="wald")
    385
    >>> required_sample_size(margin=0.05, rate=0.1)
    141
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Literal

from shieldbench.errors import StatisticsError

__all__ = ["required_sample_size", "wilson_half_width"]


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise StatisticsError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_half_width(n: int, rate: float, *, confidence: float = 0.95) -> float:
    """Half-width of the Wilson interval at observed rate ``rate`` with ``n`` samples."""
    if n <= 0:
        return 0.5
    z = _z(confidence)
    z2 = z * z
    return (z / (1.0 + z2 / n)) * math.sqrt(rate * (1.0 - rate) / n + z2 / (4.0 * n * n))


def required_sample_size(
    *,
    margin: float,
    rate: float = 0.5,
    confidence: float = 0.95,
    method: Literal["wilson", "wald"] = "wilson",
) -> int:
    """Smallest number of samples giving a CI half-width of at most ``margin``.

    Raises :class:`~shieldbench.errors.StatisticsError` for a margin outside (0, 0.5],
    a rate outside [0, 1] or a confidence outside (0, 1).
    """
    if not 0.0 < margin <= 0.5:
        raise StatisticsError(f"margin must be in (0, 0.5], got {margin!r}")
    if not 0.0 <= rate <= 1.0:
        raise StatisticsError(f"rate must be in [0, 1], got {rate!r}")
    z = _z(confidence)
    if method == "wald":
        if rate in (0.0, 1.0):
            raise StatisticsError(
                "the Wald formula needs 0 < rate < 1 (it promises n = 0 at the edges);"
                " use method='wilson'"
            )
        return max(1, math.ceil(z * z * rate * (1.0 - rate) / (margin * margin) - 1e-9))
    if method != "wilson":
        raise StatisticsError(f"method must be 'wilson' or 'wald', got {method!r}")
    hi = 1
    while wilson_half_width(hi, rate, confidence=confidence) > margin:
        hi *= 2
    lo = hi // 2
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if wilson_half_width(mid, rate, confidence=confidence) > margin:
            lo = mid
        else:
            hi = mid
    return hi
