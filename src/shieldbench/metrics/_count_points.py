"""Operating points from per-distinct-score counts (:class:`ScoreCounts`).

:func:`tpr_at_fpr_counts` and :func:`fpr_at_tpr_counts` are
:func:`~shieldbench.metrics.tpr_at_fpr` and :func:`~shieldbench.metrics.fpr_at_tpr`
for a run whose scores were counted a block at a time rather than held as arrays:
the same thresholds, the same counts, the same intervals (tested equal).

From a coarsened sketch they pick among the bins' lows: the counts at the chosen
threshold are exact (so the FPR or block-rate target is met exactly), but the exact
optimum may lie inside the neighbouring bin. :func:`operating_point_gaps` says by
how much at most, from that one bin's counts; :func:`sketch_bounds` gathers every
stated error of a sketch's figures (:mod:`shieldbench.metrics._sketch_bounds`).
"""

from __future__ import annotations

import numpy as np

from shieldbench.errors import StatisticsError
from shieldbench.metrics._curves import FloatArray
from shieldbench.metrics._intervals import IntervalMethod, z_value
from shieldbench.metrics._score_counts import ScoreCounts, curve_counts
from shieldbench.metrics._sketch_bounds import SketchBounds, auc_error_bound, se_error_bound
from shieldbench.metrics._thresholds import (
    OperatingPoint,
    _check_target,
    _point_at,
    _select,
    _thresholds_of,
)

__all__ = ["fpr_at_tpr_counts", "operating_point_gaps", "sketch_bounds", "tpr_at_fpr_counts"]


def _pick(
    c: ScoreCounts,
    *,
    max_fpr: float | None,
    min_tpr: float | None,
    confidence: float,
    method: IntervalMethod,
) -> OperatingPoint | None:
    if c.scores.size == 0:
        raise StatisticsError("no scored samples: an operating point needs data")
    classes = (c.m, c.n)
    counts = _thresholds_of(*curve_counts(c))
    i = _select(classes, counts, max_fpr=max_fpr, min_tpr=min_tpr)
    return (
        None if i is None else _point_at(classes, counts, i, confidence=confidence, method=method)
    )


def tpr_at_fpr_counts(
    c: ScoreCounts,
    *,
    max_fpr: float = 0.01,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> OperatingPoint | None:
    """The highest block rate among thresholds with FPR <= ``max_fpr`` (needs benign
    samples); ``None`` when no threshold qualifies."""
    _check_target("max_fpr", max_fpr)
    if c.n == 0:
        raise StatisticsError("TPR at a fixed FPR needs benign samples to measure the FPR")
    return _pick(c, max_fpr=max_fpr, min_tpr=None, confidence=confidence, method=method)


def fpr_at_tpr_counts(
    c: ScoreCounts,
    *,
    min_tpr: float = 0.95,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> OperatingPoint | None:
    """The lowest FPR among thresholds blocking >= ``min_tpr`` of attacks (needs
    attacks); ``None`` when no threshold qualifies."""
    _check_target("min_tpr", min_tpr)
    if c.m == 0:
        raise StatisticsError("FPR at a fixed TPR needs attacks to measure the TPR")
    return _pick(c, max_fpr=None, min_tpr=min_tpr, confidence=confidence, method=method)


def _curve_with_coarse(
    c: ScoreCounts,
) -> tuple[tuple[FloatArray, FloatArray, FloatArray], np.ndarray]:
    """The operating-point curve of ``c`` and, per point, whether its bin is coarse.

    The bins' highs go through the same edits as the lows (``+inf`` prepended,
    ``-inf`` dropped: infinite scores are never in a coarse bin, so both agree).
    """
    fps, tps, lows = curve_counts(c)
    counts = _thresholds_of(fps, tps, lows)
    highs = c.bins[1][::-1].copy()
    high_thr = _thresholds_of(fps, tps, highs)[0]
    return counts, high_thr > counts[0]


def operating_point_gaps(
    c: ScoreCounts, *, max_fpr: float, min_tpr: float
) -> tuple[float | None, float | None]:
    """How far the operating points from ``c`` can be from the exact optima.

    ``(shortfall, excess)``: the best exact block rate with FPR <= ``max_fpr`` exceeds
    the one :func:`tpr_at_fpr_counts` reports by at most ``shortfall`` (the attacks of
    the coarse bin just below the last threshold that meets the target, over ``m``);
    the lowest exact FPR with block rate >= ``min_tpr`` is below the one
    :func:`fpr_at_tpr_counts` reports by at most ``excess`` (the benign samples of the
    chosen coarse bin, over ``n``). 0 when that bin is exact; ``None`` when there is no
    such point (a class missing, or no threshold meets the target).
    """
    m, n = c.m, c.n
    if c.scores.size == 0 or m == 0 or n == 0:
        return None, None
    (thr, tps, fps), coarse = _curve_with_coarse(c)
    shortfall = excess = None
    fits = np.flatnonzero(fps / n <= max_fpr + 1e-12)
    if fits.size:
        k = int(fits[-1])  # the feasible thresholds are a prefix: the last one
        below = k + 1 < thr.size and bool(coarse[k + 1])
        shortfall = float(tps[k + 1] - tps[k]) / m if below else 0.0
    reach = np.flatnonzero(tps / m >= min_tpr - 1e-12)
    if reach.size:
        k = int(reach[0])  # the feasible thresholds are a suffix: the first one
        excess = float(fps[k] - fps[k - 1]) / n if k > 0 and bool(coarse[k]) else 0.0
    return shortfall, excess


def sketch_bounds(
    c: ScoreCounts,
    *,
    distinct_limit: int,
    confidence: float,
    target_fpr: float,
    target_tpr: float,
    average_precision_range: tuple[float, float] | None,
    average_precision: float | None,
    average_precision_interval: float,
) -> SketchBounds | None:
    """Every stated error of the figures from ``c``; ``None`` when ``c`` is exact.

    The average-precision parts come from
    :func:`~shieldbench.metrics._score_counts.average_precision_with_range` (they need
    its resamples).
    """
    if c.exact:
        return None
    coarse = c.coarse
    weight = (c.pos + c.neg)[coarse]
    total = max(c.m + c.n, 1)
    auc = auc_error_bound(c.pos, c.neg, coarse)
    se = se_error_bound(c.pos, c.neg, coarse)
    low, high = average_precision_range or (0.0, 0.0)
    value = average_precision if average_precision is not None else low
    shortfall, excess = operating_point_gaps(c, max_fpr=target_fpr, min_tpr=target_tpr)
    return SketchBounds(
        distinct_limit=distinct_limit,
        bins=int(c.scores.size),
        coarse_bins=int(coarse.sum()),
        largest_bin_share=float(weight.max()) / total if weight.size else 0.0,
        roc_auc=auc,
        roc_auc_se=se,
        roc_auc_interval=auc + z_value(confidence) * se,
        average_precision=max(value - low, high - value),
        average_precision_low=low,
        average_precision_high=high,
        average_precision_interval=average_precision_interval,
        tpr_at_fpr_shortfall=shortfall,
        fpr_at_tpr_excess=excess,
    )
