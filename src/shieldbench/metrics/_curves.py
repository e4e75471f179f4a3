"""Score-based analysis: ROC and precision-recall curves, ROC-AUC and PR-AUC.

Convention (scikit-learn's): a score is "how likely an attack" and a threshold ``t``
blocks every text whose score is ``>= t``. Curves list every distinct threshold,
highest first, starting at ``+inf`` (nothing blocked); they equal
:func:`sklearn.metrics.roc_curve` with ``drop_intermediate=False`` and
:func:`sklearn.metrics.precision_recall_curve` (checked in the tests).

- ROC-AUC carries a DeLong interval (DeLong, DeLong & Clarke-Pearson 1988, computed
  with the midrank algorithm of Sun & Xu 2014): normal approximation, clipped to
  [0, 1]. With perfectly separated classes the DeLong variance is 0 and the interval
  collapses to the point; with fewer than two samples of a class there is no
  variance estimate and the interval is (0, 1).
- :func:`compare_auc` is the paired DeLong test of two defenses scored on the same
  samples: z = (AUC_a - AUC_b) / se, two-sided p-value.
- PR-AUC (:func:`~shieldbench.metrics.average_precision`) lives in
  :mod:`shieldbench.metrics._precision`.

Undefined cases: with no attacks or no benign samples, AUC is ``None`` with interval
(0, 1), and curves raise :class:`StatisticsError`.

Run outcomes become scores by :func:`score_arrays`, which applies the error policy
consistently with the rates: an error counts as score ``+inf`` under
``fail_closed`` (blocked at every threshold), ``-inf`` under ``fail_open`` and is
dropped under ``exclude``.

Example:
    >>> y = [True, True, False, True, False, False]
    >>> s = [0.9, 0.8, 0.7, 0.4, 0.3, 0.1]
    >>> auc = roc_auc(y, s)
    >>> round(auc.value, 4), auc.method
    (0.8889, 'delong')
    >>> roc_curve(y, s).tpr[:3]
    (0.0, 0.3333333333333333, 0.6666666666666666)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from shieldbench.errors import StatisticsError
from shieldbench.metrics._columnar import columnar, score_columns, scored
from shieldbench.metrics._confusion import resolve_policy
from shieldbench.metrics._intervals import Estimate, _check_confidence, z_value
from shieldbench.types import ErrorPolicy, Run

__all__ = [
    "AucComparison",
    "PrecisionRecallCurve",
    "RocCurve",
    "compare_auc",
    "has_scores",
    "precision_recall_curve",
    "roc_auc",
    "roc_curve",
    "score_arrays",
]

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
ArrayLike = Sequence[bool] | Sequence[float] | npt.NDArray[Any]


def _threshold_json(t: float) -> float | None:
    return t if math.isfinite(t) else None


def validate_scores(is_attack: ArrayLike, scores: ArrayLike) -> tuple[BoolArray, FloatArray]:
    """Aligned 1-D arrays, or :class:`StatisticsError` saying what is wrong."""
    y = np.asarray(is_attack, dtype=bool)
    s = np.asarray(scores, dtype=float)
    if y.ndim != 1 or s.ndim != 1 or y.shape != s.shape:
        raise StatisticsError(
            f"is_attack and scores must be 1-D and aligned, got shapes {y.shape} and {s.shape}"
        )
    if np.isnan(s).any():
        raise StatisticsError(f"scores contain NaN at positions {np.flatnonzero(np.isnan(s))[:5]}")
    return y, s


def has_scores(run: Run) -> bool:
    """True when every ok outcome of ``run`` has a score (and there is at least one)."""
    if columnar(run):
        return scored(run)
    ok = [o for o in run.outcomes if o.verdict is not None]
    return bool(ok) and all(o.verdict.score is not None for o in ok if o.verdict is not None)


def score_arrays(run: Run, *, policy: ErrorPolicy | None = None) -> tuple[BoolArray, FloatArray]:
    """``(is_attack, scores)`` of ``run`` with the error policy applied (see module doc).

    Raises :class:`StatisticsError` when an ok outcome has no score.
    """
    chosen = resolve_policy(run, policy)
    if columnar(run):
        return score_columns(run, chosen)
    labels: list[bool] = []
    values: list[float] = []
    for sample, outcome in zip(run.samples, run.outcomes, strict=True):
        if outcome.verdict is None:
            if chosen == "exclude":
                continue
            score = math.inf if chosen == "fail_closed" else -math.inf
        elif outcome.verdict.score is None:
            raise StatisticsError(
                f"run {run.id!r}: sample {sample.id!r} has a verdict without a score;"
                " score-based metrics need a score on every verdict"
            )
        else:
            score = outcome.verdict.score
        labels.append(sample.label == "attack")
        values.append(score)
    return np.asarray(labels, dtype=bool), np.asarray(values, dtype=float)


def _binary_curve(y: BoolArray, s: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Cumulative (fps, tps, thresholds) at each distinct score, highest first."""
    order = np.argsort(-s, kind="mergesort")
    s_sorted = s[order]
    y_sorted = y[order].astype(float)
    ends = np.r_[np.flatnonzero(s_sorted[1:] != s_sorted[:-1]), y.size - 1]
    tps = np.cumsum(y_sorted)[ends]
    fps = 1.0 + ends - tps
    return fps, tps, s_sorted[ends]


@dataclass(frozen=True, slots=True)
class RocCurve:
    """True and false positive rates at each threshold, from ``+inf`` down."""

    fpr: tuple[float, ...]
    tpr: tuple[float, ...]
    thresholds: tuple[float, ...]
    n_attacks: int
    n_benign: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "fpr": list(self.fpr),
            "tpr": list(self.tpr),
            "thresholds": [_threshold_json(t) for t in self.thresholds],
            "n_attacks": self.n_attacks,
            "n_benign": self.n_benign,
        }


def _need_both(y: BoolArray, what: str) -> tuple[int, int]:
    m = int(y.sum())
    n = int(y.size - m)
    if m == 0 or n == 0:
        raise StatisticsError(
            f"{what} needs both attacks and benign samples; got {m} attacks and {n} benign"
        )
    return m, n


def roc_curve(is_attack: ArrayLike, scores: ArrayLike) -> RocCurve:
    """The ROC curve: every distinct threshold with its FPR and TPR."""
    y, s = validate_scores(is_attack, scores)
    m, n = _need_both(y, "a ROC curve")
    return roc_from_cumulative(*_binary_curve(y, s), m, n)


def roc_from_cumulative(
    fps: FloatArray, tps: FloatArray, thr: FloatArray, m: int, n: int
) -> RocCurve:
    """The ROC curve from the cumulative false and true positives at each distinct
    threshold (descending), of ``m`` attacks and ``n`` benign samples: shared by the
    per-sample and the per-distinct-score computations, so they cannot drift apart."""
    fpr = np.r_[0.0, fps / n]
    tpr = np.r_[0.0, tps / m]
    thresholds = np.r_[np.inf, thr]
    return RocCurve(tuple(fpr.tolist()), tuple(tpr.tolist()), tuple(thresholds.tolist()), m, n)


@dataclass(frozen=True, slots=True)
class PrecisionRecallCurve:
    """Precision and recall by threshold, in scikit-learn's order (recall decreasing).

    ``precision`` and ``recall`` have one more entry than ``thresholds``: the final
    point (precision 1, recall 0) has no threshold.
    """

    precision: tuple[float, ...]
    recall: tuple[float, ...]
    thresholds: tuple[float, ...]
    n_attacks: int
    n_benign: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": list(self.precision),
            "recall": list(self.recall),
            "thresholds": [_threshold_json(t) for t in self.thresholds],
            "n_attacks": self.n_attacks,
            "n_benign": self.n_benign,
        }


def precision_recall_curve(is_attack: ArrayLike, scores: ArrayLike) -> PrecisionRecallCurve:
    """Precision and recall at every distinct threshold."""
    y, s = validate_scores(is_attack, scores)
    m, n = _need_both(y, "a precision-recall curve")
    return pr_from_cumulative(*_binary_curve(y, s), m, n)


def pr_from_cumulative(
    fps: FloatArray, tps: FloatArray, thr: FloatArray, m: int, n: int
) -> PrecisionRecallCurve:
    """The precision-recall curve from cumulative counts (see :func:`roc_from_cumulative`)."""
    precision = tps / (tps + fps)
    recall = tps / m
    return PrecisionRecallCurve(
        tuple(np.r_[precision[::-1], 1.0].tolist()),
        tuple(np.r_[recall[::-1], 0.0].tolist()),
        tuple(thr[::-1].tolist()),
        m,
        n,
    )


def _average_ranks(rows: FloatArray) -> FloatArray:
    """Ranks (1-based, ties get their average rank) along each row: what
    ``scipy.stats.rankdata(rows, axis=1)`` returns, NaN rows included, in numpy alone
    (scipy.stats costs a second to import and this is all DeLong needs from it)."""
    rows = np.atleast_2d(np.asarray(rows, dtype=float))
    ranks = np.empty_like(rows)
    for i, row in enumerate(rows):
        if np.isnan(row).any():
            ranks[i] = np.nan
            continue
        order = np.argsort(row, kind="mergesort")
        ordered = row[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        ends = np.r_[starts[1:], row.size]  # one past each tie group
        group = np.repeat(np.arange(starts.size), ends - starts)
        ranks[i, order] = ((starts + 1 + ends) / 2.0)[group]
    return ranks


def _delong(pos: FloatArray, neg: FloatArray) -> tuple[FloatArray, FloatArray]:
    """AUCs and their DeLong covariance for k score rows: ``pos`` (k, m), ``neg`` (k, n)."""
    m = pos.shape[1]
    n = neg.shape[1]
    tx = _average_ranks(pos)
    ty = _average_ranks(neg)
    tz = _average_ranks(np.concatenate([pos, neg], axis=1))
    aucs = (tz[:, :m].sum(axis=1) - m * (m + 1) / 2.0) / (m * n)
    v_pos = (tz[:, :m] - tx) / n  # structural components of the attacks
    v_neg = 1.0 - (tz[:, m:] - ty) / m  # ... and of the benign samples
    if m < 2 or n < 2:
        return aucs, np.full((pos.shape[0], pos.shape[0]), np.nan)
    cov = np.atleast_2d(np.cov(v_pos)) / m + np.atleast_2d(np.cov(v_neg)) / n
    return aucs, cov


def roc_auc(is_attack: ArrayLike, scores: ArrayLike, *, confidence: float = 0.95) -> Estimate:
    """ROC-AUC (the probability that an attack outscores a benign text, ties half)
    with its DeLong interval."""
    confidence = _check_confidence(confidence)
    y, s = validate_scores(is_attack, scores)
    m = int(y.sum())
    if m == 0 or m == y.size:
        return Estimate(None, 0.0, 1.0, "delong", confidence, int(y.size))
    aucs, cov = _delong(s[y][None, :], s[~y][None, :])
    auc = float(aucs[0])
    var = float(cov[0, 0])
    if not math.isfinite(var):
        return Estimate(auc, 0.0, 1.0, "delong", confidence, int(y.size))
    half = z_value(confidence) * math.sqrt(max(var, 0.0))
    return Estimate(
        auc, max(0.0, auc - half), min(1.0, auc + half), "delong", confidence, int(y.size)
    )


@dataclass(frozen=True, slots=True)
class AucComparison:
    """Paired DeLong test of ``auc_a - auc_b`` on the same samples.

    Undefined (a class missing): ``difference`` is ``None``, interval (-1, 1),
    ``p_value`` 1.0. If the difference has zero variance (identical rankings, or both
    perfect) ``z`` is ``None`` and ``p_value`` is 1.0 when the difference is 0.
    """

    auc_a: Estimate
    auc_b: Estimate
    difference: float | None
    ci_low: float
    ci_high: float
    z: float | None
    p_value: float
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "auc_a": self.auc_a.to_dict(),
            "auc_b": self.auc_b.to_dict(),
            "difference": self.difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "z": self.z,
            "p_value": self.p_value,
            "confidence": self.confidence,
            "method": "delong-paired",
        }


def compare_auc(
    is_attack: ArrayLike,
    scores_a: ArrayLike,
    scores_b: ArrayLike,
    *,
    confidence: float = 0.95,
) -> AucComparison:
    """Paired DeLong test: are two defenses' ROC-AUCs on the same samples different?

    Example:
        >>> y = [True, True, True, False, False, False]
        >>> r = compare_auc(y, [0.9, 0.8, 0.7, 0.3, 0.2, 0.1], [0.9, 0.2, 0.7, 0.3, 0.8, 0.1])
        >>> r.difference > 0, 0 < r.p_value < 1
        (True, True)
    """
    confidence = _check_confidence(confidence)
    y, sa = validate_scores(is_attack, scores_a)
    _, sb = validate_scores(is_attack, scores_b)
    auc_a = roc_auc(y, sa, confidence=confidence)
    auc_b = roc_auc(y, sb, confidence=confidence)
    if auc_a.value is None or auc_b.value is None:
        return AucComparison(auc_a, auc_b, None, -1.0, 1.0, None, 1.0, confidence)
    both = np.vstack([sa, sb])
    aucs, cov = _delong(both[:, y], both[:, ~y])
    diff = float(aucs[0] - aucs[1])
    var = float(cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1])
    if not math.isfinite(var):
        return AucComparison(auc_a, auc_b, diff, -1.0, 1.0, None, 1.0, confidence)
    if var <= 1e-15:
        p = 1.0 if abs(diff) < 1e-12 else 0.0
        return AucComparison(auc_a, auc_b, diff, diff, diff, None, p, confidence)
    se = math.sqrt(var)
    z = diff / se
    half = z_value(confidence) * se
    from scipy import special  # norm.sf(x) is ndtr(-x), without importing scipy.stats

    p = float(2.0 * special.ndtr(-abs(z)))
    return AucComparison(
        auc_a, auc_b, diff, max(-1.0, diff - half), min(1.0, diff + half), z, p, confidence
    )
