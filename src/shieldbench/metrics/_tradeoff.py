"""The security / utility trade-off: block rate against FPR across thresholds, and the
threshold that meets a stated policy ("FPR <= 1%: the highest block rate" or "block
rate >= 90%: the lowest FPR"), from a run's per-distinct-score counts (or a sketch
of them past ``distinct_limit``: each point's counts stay exact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from shieldbench.errors import StatisticsError
from shieldbench.metrics._intervals import IntervalMethod
from shieldbench.metrics._score_counts import (
    DISTINCT_LIMIT,
    ScoreCounts,
    curve_counts,
    score_counts,
)
from shieldbench.metrics._thresholds import (
    OperatingPoint,
    _check_target,
    _point_at,
    _select,
    _thresholds_of,
)
from shieldbench.types import ErrorPolicy, Run

__all__ = ["TradeOff", "security_utility_tradeoff", "security_utility_tradeoff_counts"]


@dataclass(frozen=True, slots=True)
class TradeOff:
    """The security / utility curve of one defense and the threshold a policy picks.

    ``points`` run from threshold ``+inf`` (block nothing) down to the lowest score;
    ``chosen`` is ``None`` when no threshold meets the policy.
    """

    points: tuple[OperatingPoint, ...]
    policy: str
    chosen: OperatingPoint | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "chosen": None if self.chosen is None else self.chosen.to_dict(),
            "points": [p.to_dict() for p in self.points],
        }


def _tradeoff_policy(
    max_fpr: float | None, min_block_rate: float | None, max_points: int
) -> float | None:
    """``max_fpr`` once the options are checked (0.01 when neither target is given)."""
    if max_fpr is not None and min_block_rate is not None:
        raise StatisticsError("give max_fpr or min_block_rate, not both")
    if max_fpr is None and min_block_rate is None:
        max_fpr = 0.01
    if max_points < 2:
        raise StatisticsError(f"max_points must be >= 2, got {max_points!r}")
    return max_fpr


def security_utility_tradeoff(
    run: Run,
    *,
    max_fpr: float | None = None,
    min_block_rate: float | None = None,
    policy: ErrorPolicy | None = None,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
    max_points: int = 200,
    distinct_limit: int = DISTINCT_LIMIT,
) -> TradeOff:
    """Block rate against FPR across thresholds, and the threshold meeting a policy.

    Give at most one of ``max_fpr`` ("FPR <= x: the highest block rate", the default
    with x = 0.01) or ``min_block_rate`` ("block rate >= x: the lowest FPR"). The
    curve is thinned to about ``max_points`` evenly spaced points (the chosen one is
    always kept). Needs scores on every verdict and both classes. Past
    ``distinct_limit`` distinct scores the thresholds are a sketch's bin lows: each
    point's counts are still exact (:mod:`shieldbench.metrics._count_points`).
    """
    max_fpr = _tradeoff_policy(max_fpr, min_block_rate, max_points)  # before reading the run
    scored = score_counts(run, policy=policy, distinct_limit=distinct_limit)
    return security_utility_tradeoff_counts(
        scored,
        max_fpr=max_fpr,
        min_block_rate=min_block_rate,
        confidence=confidence,
        method=method,
        max_points=max_points,
        source=f"run {run.id!r}",
    )


def security_utility_tradeoff_counts(
    scored: ScoreCounts,
    *,
    max_fpr: float | None = None,
    min_block_rate: float | None = None,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
    max_points: int = 200,
    source: str = "the counts",
) -> TradeOff:
    """:func:`security_utility_tradeoff` from a run's score counts
    (:func:`~shieldbench.metrics.score_counts`), for a caller that has them already
    (the report draws its curves from the same counts); ``source`` names them in an
    error."""
    max_fpr = _tradeoff_policy(max_fpr, min_block_rate, max_points)
    classes = (scored.m, scored.n)
    if 0 in classes:
        raise StatisticsError(
            f"{source}: a security / utility trade-off needs attacks and benign samples"
        )
    if max_fpr is not None:
        _check_target("max_fpr", max_fpr)
        description = f"false positive rate <= {max_fpr:g}: highest block rate"
    else:
        assert min_block_rate is not None
        _check_target("min_block_rate", min_block_rate)
        description = f"block rate >= {min_block_rate:g}: lowest false positive rate"
    counts = _thresholds_of(*curve_counts(scored))
    best = _select(classes, counts, max_fpr=max_fpr, min_tpr=min_block_rate)
    size = counts[0].size
    keep = set(np.linspace(0, size - 1, min(size, max_points)).round().astype(int).tolist())
    if best is not None:
        keep.add(best)
    points = {
        i: _point_at(classes, counts, i, confidence=confidence, method=method) for i in sorted(keep)
    }
    chosen = None if best is None else points[best]
    return TradeOff(tuple(points.values()), description, chosen)
