"""The bounded score sketch: :class:`ScoreCounts` and how it is built and merged.

A :class:`ScoreCounts` is the exact per-distinct-score counts of a run while they
number at most ``limit`` (default :data:`DISTINCT_LIMIT`); past it, at most ``limit``
bins of about equal sample count (:mod:`shieldbench.metrics._score_bins`), whose
figures carry stated error bounds (:mod:`shieldbench.metrics._sketch_bounds`). The
figures themselves are in :mod:`shieldbench.metrics._score_counts`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shieldbench.metrics._curves import ArrayLike, FloatArray, validate_scores
from shieldbench.metrics._score_bins import Bins, add_points, check_limit, coarsen, union_bins

__all__ = ["DISTINCT_LIMIT", "ScoreCounts", "counts_of_blocks"]

IntArray = npt.NDArray[np.int64]

DISTINCT_LIMIT = 1 << 20
"""Distinct scores up to which the counts are exact (1,048,576: 32 MiB of bins); past
it, a sketch of at most this many bins with stated error bounds."""

_PENDING_BLOCKS = 1024


@dataclass(frozen=True, slots=True)
class ScoreCounts:
    """Distinct scores (ascending) and how many attacks / benign samples carry each.

    A coarsened sketch (module doc) holds bins instead: ``scores`` are their lows and
    ``highs`` their highs; ``highs`` is ``None`` when every bin is one exact score.
    """

    scores: FloatArray
    pos: IntArray
    neg: IntArray
    highs: FloatArray | None = None

    @property
    def m(self) -> int:
        """Number of attacks."""
        return int(self.pos.sum())

    @property
    def n(self) -> int:
        """Number of benign samples."""
        return int(self.neg.sum())

    @property
    def exact(self) -> bool:
        """True when every bin is one distinct score: every figure is exact."""
        return self.highs is None

    @property
    def coarse(self) -> npt.NDArray[np.bool_]:
        """Per bin: does it span more than one score (``lo < hi``)?"""
        if self.highs is None:
            return np.zeros(self.scores.size, dtype=bool)
        return self.highs > self.scores

    @property
    def bins(self) -> Bins:
        """``(lo, hi, pos, neg)`` (:mod:`shieldbench.metrics._score_bins`)."""
        highs = self.scores if self.highs is None else self.highs
        return self.scores, highs, self.pos, self.neg

    @classmethod
    def from_bins(cls, bins: Bins) -> ScoreCounts:
        """Counts of disjoint ascending bins (``highs`` dropped when all are exact)."""
        lo, hi, pos, neg = bins
        exact = bool(np.array_equal(lo, hi))
        return cls(lo.astype(float), pos, neg, None if exact else hi.astype(float))

    @classmethod
    def of(
        cls, is_attack: ArrayLike, scores: ArrayLike, *, limit: int = DISTINCT_LIMIT
    ) -> ScoreCounts:
        """The counts of aligned per-sample arrays (validated as the curves validate),
        coarsened when they have more than ``limit`` distinct scores."""
        y, s = validate_scores(is_attack, scores)
        distinct, index = np.unique(s, return_inverse=True)
        pos = np.bincount(index[y], minlength=distinct.size).astype(np.int64)
        neg = np.bincount(index[~y], minlength=distinct.size).astype(np.int64)
        return cls(distinct.astype(float), pos, neg)._limited(check_limit(limit))

    def merge(self, other: ScoreCounts, *, limit: int = DISTINCT_LIMIT) -> ScoreCounts:
        """The counts of both: exact and order-free while the distinct scores fit in
        ``limit``; past it, bins whose stated bounds hold whatever the merge order.

        An exact side's scores join the other side's bins
        (:func:`~shieldbench.metrics._score_bins.add_points`). Two coarsened sides
        over the same score range interleave, and their overlapping bins must become
        one (:func:`~shieldbench.metrics._score_bins.union_bins`): correct, with
        bounds that hold, but wide. To merge shards, merge their exact block counts
        into one total (:func:`counts_of_blocks`) rather than their sketches.
        """
        limit = check_limit(limit)
        if self.exact and other.exact:
            distinct, index = np.unique(np.r_[self.scores, other.scores], return_inverse=True)
            pos = np.bincount(index, np.r_[self.pos, other.pos], minlength=distinct.size)
            neg = np.bincount(index, np.r_[self.neg, other.neg], minlength=distinct.size)
            merged = ScoreCounts(distinct, pos.astype(np.int64), neg.astype(np.int64))
            return merged._limited(limit)
        if self.exact or other.exact:
            points, into = (self, other) if self.exact else (other, self)
            bins = add_points(into.bins, points.scores, points.pos, points.neg)
            return ScoreCounts.from_bins(coarsen(bins, limit))
        (lo, hi, pos, neg), (lo2, hi2, pos2, neg2) = self.bins, other.bins
        bins = union_bins(np.r_[lo, lo2], np.r_[hi, hi2], np.r_[pos, pos2], np.r_[neg, neg2])
        return ScoreCounts.from_bins(coarsen(bins, limit))

    def _limited(self, limit: int) -> ScoreCounts:
        if self.scores.size <= limit:
            return self
        return ScoreCounts.from_bins(coarsen(self.bins, limit))


_EMPTY = ScoreCounts(np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64))


def _flush(total: Bins, pending: list[ScoreCounts], limit: int) -> Bins:
    """``total`` with the pending (exact) block counts added, coarsened to ``limit``."""
    if not pending:
        return total
    values, index = np.unique(np.concatenate([c.scores for c in pending]), return_inverse=True)
    pos = np.bincount(index, np.concatenate([c.pos for c in pending]), minlength=values.size)
    neg = np.bincount(index, np.concatenate([c.neg for c in pending]), minlength=values.size)
    merged = add_points(total, values, pos.astype(np.int64), neg.astype(np.int64))
    return coarsen(merged, limit)


def counts_of_blocks(
    blocks: Iterable[tuple[ArrayLike, ArrayLike]], *, limit: int = DISTINCT_LIMIT
) -> ScoreCounts:
    """The :class:`ScoreCounts` of ``(is_attack, scores)`` blocks, never holding more
    than ``limit`` bins plus the blocks waiting to be added (memory: the block size
    and the limit, not the number of blocks).

    Each block is counted exactly; the counts wait until they hold as many scores as
    the total (at least half the limit, at most 1,024 blocks) and are then added in
    one linear pass (:func:`~shieldbench.metrics._score_bins.add_points`): a score
    inside a bin joins it, so bins are never merged with overlapping bins, and the
    time per sample stays flat however many blocks come. Exact while the distinct
    scores fit in ``limit``; the stated bounds hold for any block order.
    """
    limit = check_limit(limit)
    total: Bins = _EMPTY.bins
    pending: list[ScoreCounts] = []
    waiting = 0
    for is_attack, scores in blocks:
        block = ScoreCounts.of(is_attack, scores, limit=max(limit, len(scores)))  # exact
        pending.append(block)
        waiting += block.scores.size
        if waiting >= max(limit // 2, total[0].size) or len(pending) >= _PENDING_BLOCKS:
            total, pending, waiting = _flush(total, pending, limit), [], 0
    return ScoreCounts.from_bins(_flush(total, pending, limit))
