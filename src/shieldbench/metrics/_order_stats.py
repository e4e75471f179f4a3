"""Exact quantiles of a column too large for memory: radix selection over blocks.

A latency percentile with its order-statistic interval needs a few order statistics
(the ``k``-th smallest values for a handful of ``k``), not the sorted data.
:func:`order_statistics` finds them exactly by reading the values a block at a
time, four times: each float is mapped to a 64-bit key that sorts as the float does,
and each pass counts the next 16 bits of the keys in a 65,536-bin histogram, only
among the keys whose higher bits match what the previous passes fixed. After four
passes every wanted key, and so the value, is known exactly. Memory is one block
plus one histogram (512 KiB) per wanted rank, whatever the number of values.

:func:`quantile_estimates` turns that into what
:func:`~shieldbench.metrics.quantile_interval` returns (the point by
:func:`numpy.quantile`'s linear interpolation, replicated to the last bit; the
interval from the same order-statistic indices), plus the mean and maximum.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from shieldbench.metrics._intervals import (
    Estimate,
    _check_confidence,
    _finite_or_none,
    _order_statistic_indices,
)

__all__ = ["Blocks", "order_statistics", "quantile_estimates"]

Blocks = Callable[[], Iterable[npt.NDArray[np.float64]]]
"""Makes a fresh iterator over the values, a block (a float array) at a time."""

_SIGN = np.uint64(1 << 63)
_DIGIT = 16
_MASK = np.uint64((1 << _DIGIT) - 1)


def _keys(values: npt.NDArray[np.float64]) -> npt.NDArray[np.uint64]:
    """Unsigned keys ordered as the floats are (negative floats: bits flipped)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    out: npt.NDArray[np.uint64] = np.where(bits & _SIGN, ~bits, bits | _SIGN)
    return out


def _value(key: int) -> float:
    bits = key & ~(1 << 63) if key >> 63 else ~key & ((1 << 64) - 1)
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


def order_statistics(blocks: Blocks, ranks: Sequence[int]) -> dict[int, float]:
    """The value of each 0-based rank in ``ranks`` among all values ``blocks`` yields.

    Exact (the values :func:`numpy.sort` would put at those positions). Ranks must be
    within ``[0, count)``.
    """
    wanted = sorted(set(ranks))
    prefix = dict.fromkeys(wanted, 0)
    left = {r: r for r in wanted}
    for shift in range(64 - _DIGIT, -1, -_DIGIT):
        groups = sorted(set(prefix.values()))
        hist = {p: np.zeros(1 << _DIGIT, dtype=np.int64) for p in groups}
        for block in blocks():
            keys = _keys(block)
            digits = (keys >> np.uint64(shift)) & _MASK
            if shift == 64 - _DIGIT:
                hist[0] += np.bincount(digits.astype(np.intp), minlength=1 << _DIGIT)
                continue
            high = keys >> np.uint64(shift + _DIGIT)
            for p in groups:
                chosen = digits[high == np.uint64(p)]
                if chosen.size:
                    hist[p] += np.bincount(chosen.astype(np.intp), minlength=1 << _DIGIT)
        for r in wanted:
            cum = np.cumsum(hist[prefix[r]])
            digit = int(np.searchsorted(cum, left[r], side="right"))
            if digit >= cum.size:
                raise ValueError(f"rank {r} is past the {int(cum[-1])} values counted")
            left[r] -= int(cum[digit - 1]) if digit else 0
            prefix[r] = (prefix[r] << _DIGIT) | digit
    return {r: _value(prefix[r]) for r in wanted}


def _linear(lo: float, hi: float, gamma: float) -> float:
    """:func:`numpy.quantile`'s interpolation (``_lerp``), the same operations."""
    a, b, t = np.float64(lo), np.float64(hi), np.float64(gamma)
    diff = b - a
    return float(b - diff * (1 - t)) if t >= 0.5 else float(a + diff * t)


def quantile_estimates(
    blocks: Blocks, qs: Sequence[float], *, confidence: float = 0.95
) -> tuple[int, float | None, float | None, tuple[Estimate, ...]]:
    """``(n, mean, max, estimates)``: for each ``q`` in ``qs`` what
    :func:`~shieldbench.metrics.quantile_interval` gives on all the values, computed
    in bounded memory (five reads of the blocks). Mean and max are ``None`` for no
    values; the mean is the exactly rounded sum (:func:`math.fsum`) over ``n``."""
    confidence = _check_confidence(confidence)
    seen = [0, -math.inf]  # count, max

    def every() -> Iterator[float]:
        for block in blocks():
            if block.size:
                seen[0] += int(block.size)
                seen[1] = max(seen[1], float(block.max()))
                yield from block.tolist()

    total = math.fsum(every())  # exactly rounded: the same whatever the blocks
    n, top = int(seen[0]), float(seen[1])
    method = "order-statistic"
    if n == 0:
        return 0, None, None, tuple(Estimate(None, None, None, method, confidence, 0) for _ in qs)
    plans = []
    for q in qs:
        virtual = (n - 1) * q
        prev = min(math.floor(virtual), n - 1)
        nxt = min(prev + 1, n - 1)
        bounds = _order_statistic_indices(n, q, (1.0 - confidence) / 2.0) if n > 1 else (-1, n)
        plans.append((virtual - prev, prev, nxt, *bounds))
    wanted = {r for plan in plans for r in plan[1:] if 0 <= r < n}
    at = order_statistics(blocks, sorted(wanted))
    estimates = []
    for gamma, prev, nxt, low_i, high_i in plans:
        point = _linear(at[prev], at[nxt], gamma)
        if n == 1:
            estimates.append(Estimate(point, None, None, method, confidence, 1))
            continue
        low = _finite_or_none(at[low_i]) if low_i >= 0 else None
        high = _finite_or_none(at[high_i]) if high_i < n else None
        estimates.append(Estimate(point, low, high, method, confidence, n))
    return n, total / n, top, tuple(estimates)
