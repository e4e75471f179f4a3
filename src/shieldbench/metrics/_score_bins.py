"""Score bins: the array operations behind a bounded, mergeable score sketch.

A set of *bins* is four aligned arrays ``(lo, hi, pos, neg)``: disjoint score
intervals ``[lo, hi]`` in ascending order, each with the number of attacks and of
benign samples whose score lies in it. A bin with ``lo == hi`` holds one distinct
score exactly; while every bin is like that, the bins are the exact per-distinct-score
counts. ``lo`` and ``hi`` are always scores that were observed.

Three operations keep the bins disjoint and every sample in the bin that contains its
score, whatever order the data comes in:

- :func:`union_bins`: bins that overlap or touch (``[a, b]`` and ``[c, d]`` with
  ``c <= b``) become one bin ``[a, max(b, d)]`` with the summed counts. Merging two
  sets of bins is their concatenation, unioned.
- :func:`add_points`: exact scores (sorted, distinct, with counts) are added to a
  sorted set of bins: a score inside a bin's ``[lo, hi]`` is counted in that bin,
  one between bins becomes a new exact bin, inserted in place (a linear merge, no
  re-sort of the total).
- :func:`coarsen`: when there are more than ``limit`` finite bins, adjacent bins are
  merged into about ``limit // 2`` bins of about equal sample count. A bin that alone
  holds at least a share ``1 / (limit // 2)`` of the samples (a heavily tied score)
  stays its own bin, and the bins at ``-inf`` and ``+inf`` (errors under the error
  policies) are never merged: at most ``limit`` finite bins remain, plus those two.
  A tie that reaches that share only after it was merged into a wider bin stays
  there (its samples cannot be told apart any more): the bounds count it.

Pairs of samples in different bins are ordered correctly by the bins; only pairs
inside one bin (``lo < hi``) are uncertain. That is what the error bounds of
:mod:`shieldbench.metrics._sketch_bounds` rest on, and it holds for any block order.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shieldbench.errors import StatisticsError

__all__ = ["Bins", "add_points", "check_limit", "coarsen", "union_bins"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Bins = tuple[FloatArray, FloatArray, IntArray, IntArray]
"""``(lo, hi, pos, neg)``: ascending disjoint intervals and their class counts."""


def check_limit(limit: int) -> int:
    """``limit`` as an int >= 2, or :class:`StatisticsError` naming it."""
    if isinstance(limit, bool) or not isinstance(limit, int | np.integer) or limit < 2:
        raise StatisticsError(f"distinct_limit must be an integer >= 2, got {limit!r}")
    return int(limit)


def _group(bins: Bins, starts: npt.NDArray[np.intp], reach: FloatArray) -> Bins:
    """Bins ``starts[i] .. starts[i + 1] - 1`` merged; ``reach`` is the running max of hi."""
    lo, _, pos, neg = bins
    ends = np.r_[starts[1:], lo.size] - 1
    return (
        lo[starts],
        reach[ends],
        np.add.reduceat(pos, starts).astype(np.int64),
        np.add.reduceat(neg, starts).astype(np.int64),
    )


def union_bins(lo: FloatArray, hi: FloatArray, pos: IntArray, neg: IntArray) -> Bins:
    """Disjoint ascending bins from any bins (unsorted, overlapping or touching)."""
    if lo.size == 0:
        return lo, hi, pos, neg
    order = np.lexsort((hi, lo))
    bins = (lo[order], hi[order], pos[order], neg[order])
    reach = np.maximum.accumulate(bins[1])
    starts = np.flatnonzero(np.r_[True, bins[0][1:] > reach[:-1]])
    return _group(bins, starts, reach)


def add_points(bins: Bins, values: FloatArray, pos: IntArray, neg: IntArray) -> Bins:
    """``bins`` with exact scores ``values`` (ascending, distinct) and their counts added.

    A value inside a bin (``lo <= v <= hi``, an exact bin's own score included) is
    counted there; the others become exact bins, inserted where they belong.
    """
    lo, hi, bpos, bneg = bins
    if lo.size == 0:
        return values.copy(), values.copy(), pos.copy(), neg.copy()
    j = np.searchsorted(lo, values, side="right") - 1
    inside = (j >= 0) & (values <= hi[np.maximum(j, 0)])
    k = lo.size
    bpos = bpos + np.bincount(j[inside], pos[inside], minlength=k).astype(np.int64)
    bneg = bneg + np.bincount(j[inside], neg[inside], minlength=k).astype(np.int64)
    new = ~inside
    if not new.any():
        return lo, hi, bpos, bneg
    at = j[new] + 1
    v = values[new]
    return (
        np.insert(lo, at, v),
        np.insert(hi, at, v),
        np.insert(bpos, at, pos[new]),
        np.insert(bneg, at, neg[new]),
    )


def coarsen(bins: Bins, limit: int) -> Bins:
    """At most ``limit`` finite bins: adjacent bins merged into about ``limit // 2`` bins
    of equal sample count when there are more (module doc); unchanged otherwise."""
    lo, hi, pos, neg = bins
    finite = np.isfinite(lo) & np.isfinite(hi)
    if int(finite.sum()) <= limit:
        return bins
    target = max(1, limit // 2)
    weight = np.where(finite, pos + neg, 0)
    total = int(weight.sum())
    start = np.cumsum(weight) - weight
    # Integer arithmetic: group floor(start / (total / target)), and heavy bins
    # (weight >= total / target) start their own group.
    key = (start * target) // max(total, 1)
    heavy = weight * target >= total
    boundary = np.r_[True, (key[1:] != key[:-1]) | ~finite[1:] | ~finite[:-1] | heavy[1:]]
    starts = np.flatnonzero(boundary)
    reach = np.maximum.accumulate(hi)
    return _group(bins, starts, reach)
