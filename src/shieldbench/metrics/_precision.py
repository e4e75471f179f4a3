"""PR-AUC: average precision with a stratified bootstrap interval.

Average precision is scikit-learn's step-wise area under the precision-recall curve
(no interpolation): ``AP = sum_t (R_t - R_{t-1}) P_t`` over the distinct thresholds
``t`` from the highest score down (tied scores form one threshold).

The interval is a seeded stratified bootstrap: attacks and benign samples are
resampled separately (so every resample has both classes), exactly what
:func:`scipy.stats.bootstrap` does with ``paired=False``. The percentile method
(default) uses a faster equivalent: each class is sorted once, and a resample is a
vector of multiplicities (how often each sample was drawn) accumulated along that
fixed order, O(n) per resample instead of a sort of the resampled data. ``tests/metrics`` checks it
against :func:`scipy.stats.bootstrap`; ``benchmarks/metrics_speed.py`` measures the
gain. ``method="bca"`` runs :func:`scipy.stats.bootstrap` itself, whose jackknife is
O(n²): keep it for small data.

Undefined: with no attacks or no benign samples the value is ``None`` and the
interval (0, 1) (with only attacks every threshold has precision 1, which says
nothing about the defense).

Example:
    >>> ap = average_precision([True, False, True, False], [0.9, 0.8, 0.7, 0.1])
    >>> round(ap.value, 4), ap.method
    (0.8333, 'bootstrap-percentile')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shieldbench.errors import StatisticsError
from shieldbench.metrics._curves import ArrayLike, FloatArray, validate_scores
from shieldbench.metrics._intervals import (
    BOOTSTRAP_METHODS,
    BootstrapMethod,
    Estimate,
    _check_confidence,
    bootstrap_interval,
)

__all__ = ["average_precision"]

_CELLS_PER_BATCH = 4_000_000


def average_precision_vectorized(pos: FloatArray, neg: FloatArray, axis: int = -1) -> FloatArray:
    """Average precision of attack scores ``pos`` against benign scores ``neg`` along
    the last axis (leading axes are bootstrap batches, as scipy passes them)."""
    pos = np.moveaxis(np.asarray(pos, dtype=float), axis, -1)
    neg = np.moveaxis(np.asarray(neg, dtype=float), axis, -1)
    neg = np.broadcast_to(neg, (*pos.shape[:-1], neg.shape[-1]))
    m = pos.shape[-1]
    s = np.concatenate([pos, neg], axis=-1)
    y = np.concatenate([np.ones(pos.shape), np.zeros(neg.shape)], axis=-1)
    order = np.argsort(-s, axis=-1, kind="mergesort")
    s = np.take_along_axis(s, order, axis=-1)
    y = np.take_along_axis(y, order, axis=-1)
    tps = np.cumsum(y, axis=-1)
    ranks = np.arange(1, s.shape[-1] + 1)
    is_end = np.ones(s.shape, dtype=bool)
    is_end[..., :-1] = s[..., 1:] != s[..., :-1]
    end_tps = np.where(is_end, tps, 0.0)
    prev_end_tps = np.zeros(s.shape)
    prev_end_tps[..., 1:] = np.maximum.accumulate(end_tps, axis=-1)[..., :-1]
    gain = np.where(is_end, (tps - prev_end_tps) / m * (tps / ranks), 0.0)
    out: FloatArray = gain.sum(axis=-1)
    return out


def _multiplicities(rng: np.random.Generator, size: int, rows: int) -> FloatArray:
    """``rows`` bootstrap resamples of ``size`` items, as draw counts per item.

    The counts are exchangeable (a multinomial with equal cell probabilities), so they
    can be laid directly along any fixed order of the items, such as sorted order.
    """
    draws = rng.integers(0, size, size=(rows, size)) + size * np.arange(rows)[:, None]
    counts = np.bincount(draws.ravel(), minlength=rows * size).reshape(rows, size)
    out: FloatArray = counts.astype(float)
    return out


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where each threshold of the attack scores sits, computed once per data set."""

    ends: npt.NDArray[np.intp]  # last index of each tied group of sorted attack scores
    neg_above: npt.NDArray[np.intp]  # benign scores >= that group's score

    @classmethod
    def of(cls, pos: FloatArray, neg: FloatArray) -> _Layout:
        pos_sorted = np.sort(pos)[::-1]
        ends = np.r_[np.flatnonzero(pos_sorted[1:] != pos_sorted[:-1]), pos.size - 1]
        neg_ascending = np.sort(neg)
        neg_above = neg.size - np.searchsorted(neg_ascending, pos_sorted[ends], side="left")
        return cls(ends, neg_above.astype(np.intp))


def _resampled_ap(layout: _Layout, pos_weights: FloatArray, neg_weights: FloatArray) -> FloatArray:
    """AP of each resample (rows of multiplicities, attack scores in descending order).

    Only thresholds holding an attack add to AP: ``sum_g (TP_g - TP_{g-1}) / m *
    TP_g / (TP_g + FP_g)`` where FP_g counts the benign draws scoring ``>=`` the
    group's score (benign draws tied with attacks are at the same threshold).
    """
    m = pos_weights.shape[1]
    tp = np.cumsum(pos_weights, axis=1)[:, layout.ends]
    cum_neg = np.zeros((neg_weights.shape[0], neg_weights.shape[1] + 1))
    # Benign weights in descending score order; the count above a threshold is a prefix.
    np.cumsum(neg_weights, axis=1, out=cum_neg[:, 1:])
    fp = cum_neg[:, layout.neg_above]
    prev = np.zeros_like(tp)
    prev[:, 1:] = tp[:, :-1]
    total = tp + fp
    precision = np.divide(tp, total, out=np.zeros_like(tp), where=total > 0)
    out: FloatArray = ((tp - prev) * precision).sum(axis=1) / m
    return out


def _percentile_interval(
    pos: FloatArray, neg: FloatArray, *, confidence: float, n_resamples: int, seed: int
) -> tuple[float, float]:
    layout = _Layout.of(pos, neg)
    rng = np.random.default_rng(seed)
    batch = max(1, _CELLS_PER_BATCH // (pos.size + neg.size))
    values = []
    for start in range(0, n_resamples, batch):
        rows = min(batch, n_resamples - start)
        values.append(
            _resampled_ap(
                layout, _multiplicities(rng, pos.size, rows), _multiplicities(rng, neg.size, rows)
            )
        )
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(np.concatenate(values), [alpha, 1.0 - alpha])
    return float(low), float(high)


def average_precision(
    is_attack: ArrayLike,
    scores: ArrayLike,
    *,
    confidence: float = 0.95,
    method: BootstrapMethod = "percentile",
    n_resamples: int = 1000,
    seed: int = 0,
) -> Estimate:
    """PR-AUC as average precision, with a seeded stratified bootstrap interval."""
    confidence = _check_confidence(confidence)
    if method not in BOOTSTRAP_METHODS:
        raise StatisticsError(
            f"bootstrap method must be one of {BOOTSTRAP_METHODS}, got {method!r}"
        )
    if n_resamples < 1:
        raise StatisticsError(f"n_resamples must be >= 1, got {n_resamples!r}")
    y, s = validate_scores(is_attack, scores)
    pos, neg = s[y], s[~y]
    label = f"bootstrap-{method}"
    n = int(y.size)
    if pos.size == 0 or neg.size == 0:
        return Estimate(None, 0.0, 1.0, label, confidence, n)
    value = float(average_precision_vectorized(pos, neg))
    if method == "percentile":
        low, high = _percentile_interval(
            pos, neg, confidence=confidence, n_resamples=n_resamples, seed=seed
        )
        return Estimate(value, low, high, label, confidence, n)
    est = bootstrap_interval(
        average_precision_vectorized,
        pos,
        neg,
        confidence=confidence,
        method=method,
        n_resamples=n_resamples,
        seed=seed,
        paired=False,
    )
    low_b = 0.0 if est.ci_low is None else est.ci_low
    high_b = 1.0 if est.ci_high is None else est.ci_high
    return Estimate(value, low_b, high_b, label, confidence, n)
