"""Operating points: what a score threshold buys in blocked attacks and costs in
false positives, and how to pick one.

An :class:`OperatingPoint` is a threshold with its block rate (TPR on attacks) and
false positive rate (on benign samples), both with intervals. A text is blocked
when its score is ``>= threshold``; the threshold ``+inf`` (``None`` in JSON) blocks
nothing but errors counted as blocked under ``fail_closed`` (score ``+inf``), and
errors counted as allowed under ``fail_open`` (score ``-inf``) are never blocked.

- :func:`threshold_sweep`: operating points at every distinct score (or at given
  thresholds).
- :func:`tpr_at_fpr`: the highest block rate whose FPR is at most a target (e.g. 1%);
  :func:`fpr_at_tpr`: the lowest FPR whose block rate reaches a target. Both pick
  among observed thresholds, no interpolation; ``None`` when no threshold qualifies.
- :func:`calibrate_threshold`: choose the threshold on one run (FPR at most the
  target there) and check what it gives on another run of the same defense, e.g.
  calibrated on one benign corpus, checked on real traffic.
- :func:`~shieldbench.metrics.security_utility_tradeoff`
  (:mod:`shieldbench.metrics._tradeoff`): the block-rate-versus-FPR curve and the
  threshold that meets a stated policy.

Example:
    >>> y = [True, True, True, False, False, False, False]
    >>> s = [0.95, 0.9, 0.4, 0.5, 0.2, 0.1, 0.05]
    >>> p = tpr_at_fpr(y, s, max_fpr=0.0)
    >>> p.threshold, round(p.block_rate.value, 3), p.false_positive_rate.value
    (0.9, 0.667, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shieldbench.errors import StatisticsError
from shieldbench.metrics._curves import (
    ArrayLike,
    BoolArray,
    FloatArray,
    _binary_curve,
    score_arrays,
    validate_scores,
)
from shieldbench.metrics._intervals import IntervalMethod, Rate, rate
from shieldbench.types import ErrorPolicy, Run

__all__ = [
    "OperatingPoint",
    "ThresholdCalibration",
    "calibrate_threshold",
    "fpr_at_tpr",
    "operating_point",
    "threshold_sweep",
    "tpr_at_fpr",
]


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """A threshold and what it does: block rate on attacks, FPR on benign samples."""

    threshold: float
    block_rate: Rate
    false_positive_rate: Rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold if math.isfinite(self.threshold) else None,
            "block_rate": self.block_rate.to_dict(),
            "false_positive_rate": self.false_positive_rate.to_dict(),
        }


def operating_point(
    is_attack: ArrayLike,
    scores: ArrayLike,
    threshold: float,
    *,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> OperatingPoint:
    """Block rate and FPR of blocking every score ``>= threshold``."""
    y, s = validate_scores(is_attack, scores)
    blocked = (s >= threshold) & (s != -np.inf)
    m = int(y.sum())
    return OperatingPoint(
        float(threshold),
        rate(int((blocked & y).sum()), m, confidence=confidence, method=method),
        rate(int((blocked & ~y).sum()), int(y.size - m), confidence=confidence, method=method),
    )


def _curve_counts(y: BoolArray, s: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(thresholds, blocked attacks, blocked benign) from ``+inf`` down to the lowest score."""
    if y.size == 0:
        raise StatisticsError("no scored samples: an operating point needs data")
    return _thresholds_of(*_binary_curve(y, s))


def _thresholds_of(
    fps: FloatArray, tps: FloatArray, thr: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:func:`_curve_counts` from a cumulative curve (highest threshold first)."""
    if thr[0] != np.inf:
        # Threshold +inf blocks nothing (when +inf scores exist, the curve starts there).
        thr, tps, fps = np.r_[np.inf, thr], np.r_[0.0, tps], np.r_[0.0, fps]
    if thr.size > 1 and thr[-1] == -np.inf:
        # -inf scores (errors under fail_open) are never blocked: no threshold at -inf.
        thr, tps, fps = thr[:-1], tps[:-1], fps[:-1]
    return thr, tps, fps


def _point_at(
    classes: tuple[int, int],
    counts: tuple[FloatArray, FloatArray, FloatArray],
    i: int,
    *,
    confidence: float,
    method: IntervalMethod,
) -> OperatingPoint:
    """The operating point at curve index ``i``; ``classes`` is (attacks, benign)."""
    thr, tps, fps = counts
    m, n = classes
    return OperatingPoint(
        float(thr[i]),
        rate(int(tps[i]), m, confidence=confidence, method=method),
        rate(int(fps[i]), n, confidence=confidence, method=method),
    )


def _classes(y: BoolArray) -> tuple[int, int]:
    m = int(y.sum())
    return m, int(y.size) - m


def _points(
    y: BoolArray, s: FloatArray, *, confidence: float, method: IntervalMethod
) -> list[OperatingPoint]:
    counts = _curve_counts(y, s)
    return [
        _point_at(_classes(y), counts, i, confidence=confidence, method=method)
        for i in range(counts[0].size)
    ]


def _select(
    classes: tuple[int, int],
    counts: tuple[FloatArray, FloatArray, FloatArray],
    *,
    max_fpr: float | None,
    min_tpr: float | None,
) -> int | None:
    """Index of the best threshold under the policy, or None if none qualifies."""
    _, tps, fps = counts
    m, n = classes
    tpr = tps / m if m else np.zeros_like(tps)
    fpr = fps / n if n else np.zeros_like(fps)
    if max_fpr is not None:
        ok = np.flatnonzero(fpr <= max_fpr + 1e-12)
        if ok.size == 0:
            return None
        # Highest block rate; the curve is monotone, so the first index reaching it.
        return int(ok[np.argmax(tpr[ok])])
    assert min_tpr is not None
    ok = np.flatnonzero(tpr >= min_tpr - 1e-12)
    if ok.size == 0:
        return None
    # Lowest FPR; among equal FPRs the lowest threshold blocks the most attacks.
    return int(ok[fpr[ok] == fpr[ok].min()][-1])


def threshold_sweep(
    is_attack: ArrayLike,
    scores: ArrayLike,
    *,
    thresholds: Sequence[float] | None = None,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> tuple[OperatingPoint, ...]:
    """Operating points at ``thresholds`` (default: ``+inf`` then every distinct score,
    highest first)."""
    y, s = validate_scores(is_attack, scores)
    if thresholds is None:
        return tuple(_points(y, s, confidence=confidence, method=method))
    return tuple(
        operating_point(y, s, float(t), confidence=confidence, method=method) for t in thresholds
    )


def _check_target(name: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise StatisticsError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def tpr_at_fpr(
    is_attack: ArrayLike,
    scores: ArrayLike,
    *,
    max_fpr: float = 0.01,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> OperatingPoint | None:
    """The observed threshold with the highest block rate among those with FPR <= ``max_fpr``.

    Needs benign samples to measure FPR (else :class:`StatisticsError`); ``None``
    when even the threshold ``+inf`` exceeds ``max_fpr`` (benign errors counted as
    blocked).
    """
    _check_target("max_fpr", max_fpr)
    y, s = validate_scores(is_attack, scores)
    if y.all():
        raise StatisticsError("TPR at a fixed FPR needs benign samples to measure the FPR")
    counts = _curve_counts(y, s)
    i = _select(_classes(y), counts, max_fpr=max_fpr, min_tpr=None)
    return (
        None
        if i is None
        else _point_at(_classes(y), counts, i, confidence=confidence, method=method)
    )


def fpr_at_tpr(
    is_attack: ArrayLike,
    scores: ArrayLike,
    *,
    min_tpr: float = 0.95,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> OperatingPoint | None:
    """The observed threshold with the lowest FPR among those blocking >= ``min_tpr``
    of attacks. Needs attacks; ``None`` if no threshold blocks that many."""
    _check_target("min_tpr", min_tpr)
    y, s = validate_scores(is_attack, scores)
    if not y.any():
        raise StatisticsError("FPR at a fixed TPR needs attacks to measure the TPR")
    counts = _curve_counts(y, s)
    i = _select(_classes(y), counts, max_fpr=None, min_tpr=min_tpr)
    return (
        None
        if i is None
        else _point_at(_classes(y), counts, i, confidence=confidence, method=method)
    )


@dataclass(frozen=True, slots=True)
class ThresholdCalibration:
    """A threshold chosen for ``target_fpr`` on one run and checked on another.

    ``calibration`` is the operating point on the calibration run (its FPR is at most
    the target by construction); ``check`` the same threshold on the check run
    (``None`` without one). ``check_within_target`` says whether the check FPR stayed
    at most the target (``None`` when the check run has no benign samples).
    """

    target_fpr: float
    threshold: float
    calibration: OperatingPoint
    check: OperatingPoint | None
    calibration_dataset: str
    check_dataset: str | None

    @property
    def check_within_target(self) -> bool | None:
        if self.check is None or self.check.false_positive_rate.value is None:
            return None
        return self.check.false_positive_rate.value <= self.target_fpr + 1e-12

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_fpr": self.target_fpr,
            "threshold": self.threshold if math.isfinite(self.threshold) else None,
            "calibration": self.calibration.to_dict(),
            "check": None if self.check is None else self.check.to_dict(),
            "calibration_dataset": self.calibration_dataset,
            "check_dataset": self.check_dataset,
            "check_within_target": self.check_within_target,
        }


def calibrate_threshold(
    calibration: Run,
    check: Run | None = None,
    *,
    target_fpr: float = 0.01,
    policy: ErrorPolicy | None = None,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> ThresholdCalibration:
    """Pick the lowest observed threshold with FPR <= ``target_fpr`` on ``calibration``
    (the highest block rate there) and measure it on ``check``.

    Both runs must be of the same defense spec (scores of different defenses are not
    on one scale): otherwise :class:`StatisticsError`. The calibration run needs
    benign samples and scores on every verdict.
    """
    _check_target("target_fpr", target_fpr)
    if check is not None and check.defense.spec != calibration.defense.spec:
        raise StatisticsError(
            f"calibration run {calibration.id!r} is of defense {calibration.defense.spec!r} but"
            f" check run {check.id!r} is of {check.defense.spec!r}; a threshold only transfers"
            " between runs of the same defense"
        )
    y, s = score_arrays(calibration, policy=policy)
    if y.all():
        raise StatisticsError(
            f"calibration run {calibration.id!r} has no benign samples: cannot calibrate an FPR"
        )
    chosen = tpr_at_fpr(y, s, max_fpr=target_fpr, confidence=confidence, method=method)
    if chosen is None:
        raise StatisticsError(
            f"no threshold reaches FPR <= {target_fpr} on run {calibration.id!r}: its benign"
            " errors alone exceed it under the fail_closed policy"
        )
    checked = None
    if check is not None:
        cy, cs = score_arrays(check, policy=policy)
        checked = operating_point(cy, cs, chosen.threshold, confidence=confidence, method=method)
    return ThresholdCalibration(
        target_fpr,
        chosen.threshold,
        chosen,
        checked,
        calibration.dataset.spec,
        None if check is None else check.dataset.spec,
    )
