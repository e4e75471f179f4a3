"""Operating points from per-distinct-score counts (:class:`ScoreCounts`).

:func:`tpr_at_fpr_counts` and :func:`fpr_at_tpr_counts` are
:func:`~shieldbench.metrics.tpr_at_fpr` and :func:`~shieldbench.metrics.fpr_at_tpr`
for a run whose scores were counted a block at a time rather than held as arrays:
the same thresholds, the same counts, the same intervals (tested equal).
"""

from __future__ import annotations

from shieldbench.errors import StatisticsError
from shieldbench.metrics._intervals import IntervalMethod
from shieldbench.metrics._score_counts import ScoreCounts, curve_counts
from shieldbench.metrics._thresholds import (
    OperatingPoint,
    _check_target,
    _point_at,
    _select,
    _thresholds_of,
)

__all__ = ["fpr_at_tpr_counts", "tpr_at_fpr_counts"]


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
