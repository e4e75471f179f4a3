"""Every score figure from per-distinct-score counts, or from a bounded sketch of them:
memory bounded by :data:`DISTINCT_LIMIT`, never by the number of samples.

ROC and PR curves, ROC-AUC with its DeLong variance, average precision and the
operating points depend on the scored samples only through, for each distinct
score, how many attacks and how many benign samples carry it. A
:class:`ScoreCounts` holds exactly that (the distinct scores ascending, with an
attack count and a benign count each): 24 bytes per distinct score, whatever the
number of samples. :func:`score_counts` builds it from a run a block of rows at a
time (a large run's columns stay on disk), so a ten-million-sample run of a defense
with a few hundred distinct scores needs a few kilobytes.

**Exact up to the limit.** While a run has at most ``distinct_limit`` distinct scores
(default :data:`DISTINCT_LIMIT`, 1,048,576: every run of up to a million samples),
nothing is approximated: every figure equals the one computed from the per-sample
arrays (:mod:`shieldbench.metrics._curves`), up to the order of floating-point
additions (ROC-AUC is exactly equal; DeLong variance and average precision agree to
~1e-12 relative; ``tests/metrics/test_score_counts.py``):

- ``AUC = sum_g pos_g (neg_below_g + neg_g / 2) / (m n)``;
- DeLong's structural components are per-score too: an attack scoring ``x`` has
  ``V10 = (#benign below x + #benign at x / 2) / n``, a benign sample
  ``V01 = 1 - (#attacks below x + #attacks at x / 2) / m``; their variances are the
  count-weighted variances (``ddof=1``, as :func:`numpy.cov`);
- average precision is ``sum_g pos_g / m * TP_g / (TP_g + FP_g)`` from the highest
  score down.

**A sketch past it.** With more distinct scores (a continuous classifier score on
millions of samples), adjacent scores are merged into bins: disjoint score intervals
``[lo, hi]`` with exact class counts, about ``distinct_limit / 2`` of them of equal
sample count (:mod:`shieldbench.metrics._score_bins`). ``scores`` then holds the
bins' lows and ``highs`` their highs; the same formulas read a bin as one score (its
samples tied), and :mod:`shieldbench.metrics._sketch_bounds` computes, from the bins,
how far each figure can be from the exact one (stated in the summary and reports).
Memory: at most ``distinct_limit`` bins of 32 bytes (32 MiB at the default), plus
the blocks waiting to be merged, whatever the number of samples; time per sample is
flat (each merge is a linear pass over the bins, done once per about as many new
scores as there are bins).

**PR-AUC interval.** The stratified bootstrap resamples attacks and benign samples
separately; a resample's AP depends only on how many draws fall on each distinct
score (bin), and those counts are multinomial with the observed shares. So each
resample here draws ``D`` multinomial counts per class (``D`` distinct scores or
bins) instead of ``n`` indices: the **same bootstrap distribution** as resampling
the samples, other random draws (seeded: the same run gives the same interval).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from shieldbench.errors import StatisticsError
from shieldbench.metrics._columnar import BLOCK, columnar
from shieldbench.metrics._confusion import resolve_policy
from shieldbench.metrics._curves import (
    FloatArray,
    PrecisionRecallCurve,
    RocCurve,
    pr_from_cumulative,
    roc_from_cumulative,
    score_arrays,
)
from shieldbench.metrics._intervals import Estimate, _check_confidence, z_value
from shieldbench.metrics._score_sketch import DISTINCT_LIMIT, ScoreCounts, counts_of_blocks
from shieldbench.metrics._sketch_bounds import ap_range
from shieldbench.types import ErrorPolicy, Run

__all__ = [
    "DISTINCT_LIMIT",
    "ScoreCounts",
    "average_precision_counts",
    "average_precision_with_range",
    "counts_of_blocks",
    "curve_counts",
    "precision_recall_curve_counts",
    "roc_auc_counts",
    "roc_auc_se_counts",
    "roc_curve_counts",
    "score_counts",
]

IntArray = npt.NDArray[np.int64]

_CELLS_PER_BATCH = 4_000_000
_CELLS_PER_CHUNK = 500_000


def _blocks(run: Run, policy: ErrorPolicy) -> Iterator[tuple[Any, Any, int]]:
    """``(is_attack, scores, offset)`` per block of a columnar run, policy applied."""
    import pyarrow.compute as pc

    samples: Any = run.samples
    outcomes: Any = run.outcomes
    offset = 0
    for sb, ob in zip(
        samples.batches(["label"], size=BLOCK),
        outcomes.batches(["blocked", "score"], size=BLOCK),
        strict=True,
    ):
        attack = pc.equal(sb.column("label"), "attack").to_numpy(zero_copy_only=False)
        verdict = ob.column("blocked").is_valid().to_numpy(zero_copy_only=False)
        score = np.array(ob.column("score").to_numpy(zero_copy_only=False), dtype=float)
        missing = verdict & np.isnan(score)
        if missing.any():
            sample_id = run.samples[offset + int(np.flatnonzero(missing)[0])].id
            raise StatisticsError(
                f"run {run.id!r}: sample {sample_id!r} has a verdict without a score;"
                " score-based metrics need a score on every verdict"
            )
        if policy == "exclude":
            attack, score = attack[verdict], score[verdict]
        else:
            score[~verdict] = np.inf if policy == "fail_closed" else -np.inf
        yield attack, score, offset
        offset += len(sb)


def score_counts(
    run: Run, *, policy: ErrorPolicy | None = None, distinct_limit: int = DISTINCT_LIMIT
) -> ScoreCounts:
    """The :class:`ScoreCounts` of ``run`` under the error policy (as ``score_arrays``),
    a sketch of at most ``distinct_limit`` bins when it has more distinct scores.

    A columnar run is read a block of rows at a time; a run held as objects is made
    into arrays first (it fits in memory). Raises :class:`StatisticsError` when a
    verdict has no score.
    """
    chosen = resolve_policy(run, policy)
    if not columnar(run):
        return ScoreCounts.of(*score_arrays(run, policy=chosen), limit=distinct_limit)
    blocks = ((attack, score) for attack, score, _ in _blocks(run, chosen))
    return counts_of_blocks(blocks, limit=distinct_limit)


def curve_counts(c: ScoreCounts) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Cumulative ``(fps, tps, thresholds)`` at each distinct score, highest first
    (what ``_binary_curve`` gives from the arrays)."""
    tps = np.cumsum(c.pos[::-1]).astype(float)
    fps = np.cumsum(c.neg[::-1]).astype(float)
    return fps, tps, c.scores[::-1].copy()


def _need_both(c: ScoreCounts, what: str) -> tuple[int, int]:
    m, n = c.m, c.n
    if m == 0 or n == 0:
        raise StatisticsError(
            f"{what} needs both attacks and benign samples; got {m} attacks and {n} benign"
        )
    return m, n


def roc_curve_counts(c: ScoreCounts) -> RocCurve:
    """:func:`~shieldbench.metrics.roc_curve` from counts (equal to it)."""
    m, n = _need_both(c, "a ROC curve")
    return roc_from_cumulative(*curve_counts(c), m, n)


def precision_recall_curve_counts(c: ScoreCounts) -> PrecisionRecallCurve:
    """:func:`~shieldbench.metrics.precision_recall_curve` from counts (equal to it)."""
    m, n = _need_both(c, "a precision-recall curve")
    return pr_from_cumulative(*curve_counts(c), m, n)


def _weighted_var(values: FloatArray, weights: IntArray) -> float:
    """Variance with ``ddof=1`` of ``values`` repeated ``weights`` times."""
    total = float(weights.sum())
    mean = float((weights * values).sum()) / total
    return float((weights * (values - mean) ** 2).sum()) / (total - 1.0)


def roc_auc_se_counts(c: ScoreCounts) -> float | None:
    """DeLong's standard error of ROC-AUC from counts; ``None`` below two of a class."""
    m, n = c.m, c.n
    if m < 2 or n < 2:
        return None
    neg_below = np.cumsum(c.neg) - c.neg
    pos_below = np.cumsum(c.pos) - c.pos
    v_pos = (neg_below + 0.5 * c.neg) / n
    v_neg = 1.0 - (pos_below + 0.5 * c.pos) / m
    var = _weighted_var(v_pos[c.pos > 0], c.pos[c.pos > 0]) / m + (
        _weighted_var(v_neg[c.neg > 0], c.neg[c.neg > 0]) / n
    )
    return float(np.sqrt(max(var, 0.0)))


def roc_auc_counts(c: ScoreCounts, *, confidence: float = 0.95) -> Estimate:
    """:func:`~shieldbench.metrics.roc_auc` (DeLong interval) from counts."""
    confidence = _check_confidence(confidence)
    m, n = c.m, c.n
    size = m + n
    if m == 0 or n == 0:
        return Estimate(None, 0.0, 1.0, "delong", confidence, size)
    neg_below = np.cumsum(c.neg) - c.neg
    twice = int((c.pos * (2 * neg_below + c.neg)).sum())  # exact: 2 * sum of wins
    auc = (twice / 2.0) / (m * n)
    se = roc_auc_se_counts(c)
    if se is None:
        return Estimate(auc, 0.0, 1.0, "delong", confidence, size)
    half = z_value(confidence) * se
    return Estimate(auc, max(0.0, auc - half), min(1.0, auc + half), "delong", confidence, size)


def _ap(pos_desc: FloatArray, neg_desc: FloatArray) -> FloatArray:
    """AP of each row of counts per distinct score (highest first); 0 for no attack."""
    tp = np.cumsum(pos_desc, axis=-1)
    fp = np.cumsum(neg_desc, axis=-1)
    total = tp + fp
    precision = np.divide(tp, total, out=np.zeros_like(tp), where=total > 0)
    m = tp[..., -1]
    gain = (pos_desc * precision).sum(axis=-1)
    out: FloatArray = np.divide(gain, m, out=np.zeros_like(gain), where=m > 0)
    return out


def _ap_resamples(c: ScoreCounts, n_resamples: int, seed: int) -> tuple[FloatArray, float]:
    """AP of ``n_resamples`` stratified multinomial resamples, and the largest distance
    from a resample's binned AP to the ends of its exact range (0 when exact).

    Draws come in batches of about 4M cells (the seeded stream of draws depends on
    it); each batch is evaluated in row chunks of about 500k cells, so the
    temporaries stay small whatever the number of bins.
    """
    m, n = c.m, c.n
    pos_desc, neg_desc = c.pos[::-1].astype(float), c.neg[::-1].astype(float)
    coarse_desc = c.coarse[::-1]
    rng = np.random.default_rng(seed)
    width = max(c.scores.size, 1)
    batch, chunk = max(1, _CELLS_PER_BATCH // width), max(1, _CELLS_PER_CHUNK // width)
    values, spread = [], 0.0
    for start in range(0, n_resamples, batch):
        rows = min(batch, n_resamples - start)
        draw_pos = rng.multinomial(m, pos_desc / m, size=rows).astype(float)
        draw_neg = rng.multinomial(n, neg_desc / n, size=rows).astype(float)
        for at in range(0, rows, chunk):
            p, q = draw_pos[at : at + chunk], draw_neg[at : at + chunk]
            ap = _ap(p, q)
            values.append(ap)
            if not c.exact:
                low, high = ap_range(p, q, coarse_desc)
                spread = max(spread, float(np.max(np.maximum(ap - low, high - ap))))
    return np.concatenate(values), spread


def average_precision_with_range(
    c: ScoreCounts, *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0
) -> tuple[Estimate, tuple[float, float] | None, float]:
    """:func:`average_precision_counts`, the range ``(low, high)`` the exact AP lies in
    (``None`` without both classes) and how far each interval end can be from the
    exact bootstrap's (0 when ``c`` is exact; :mod:`shieldbench.metrics._sketch_bounds`).
    """
    confidence = _check_confidence(confidence)
    if n_resamples < 1:
        raise StatisticsError(f"n_resamples must be >= 1, got {n_resamples!r}")
    m, n = c.m, c.n
    label = "bootstrap-percentile"
    if m == 0 or n == 0:
        return Estimate(None, 0.0, 1.0, label, confidence, m + n), None, 0.0
    pos_desc, neg_desc = c.pos[::-1].astype(float), c.neg[::-1].astype(float)
    value = float(_ap(pos_desc, neg_desc))
    low, high = value, value
    if not c.exact:
        low_a, high_a = ap_range(pos_desc, neg_desc, c.coarse[::-1])
        low, high = float(low_a), float(high_a)
    values, spread = _ap_resamples(c, n_resamples, seed)
    alpha = (1.0 - confidence) / 2.0
    ci_low, ci_high = np.quantile(values, [alpha, 1.0 - alpha])
    estimate = Estimate(value, float(ci_low), float(ci_high), label, confidence, m + n)
    return estimate, (low, high), spread


def average_precision_counts(
    c: ScoreCounts, *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0
) -> Estimate:
    """Average precision with a seeded stratified percentile bootstrap, from counts.

    The resamples draw multinomial counts per distinct score (module doc): the same
    bootstrap distribution as :func:`~shieldbench.metrics.average_precision`'s. From a
    coarsened sketch, the AP of the bins read as tied scores
    (:func:`average_precision_with_range` gives its stated error).
    """
    estimate, _, _ = average_precision_with_range(
        c, confidence=confidence, n_resamples=n_resamples, seed=seed
    )
    return estimate
