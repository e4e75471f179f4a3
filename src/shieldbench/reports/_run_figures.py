"""A run's curves and latency histogram for the report, read without per-sample arrays.

The curves come from the per-distinct-score counts (or a bounded sketch of them past
``distinct_limit``: :func:`shieldbench.metrics.score_counts`), thinned to
:data:`CURVE_POINTS` points that are points of the exact curves; the latency
histogram is counted a block of rows at a time (two passes: the range, then the
counts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import partial

import numpy as np

from shieldbench.metrics import (
    DISTINCT_LIMIT,
    PrecisionRecallCurve,
    RocCurve,
    columnar,
    has_scores,
    latency_blocks,
    precision_recall_curve_counts,
    roc_curve_counts,
    score_counts,
    security_utility_tradeoff_counts,
)
from shieldbench.reports._model import LatencyHistogram, ScoreCurves
from shieldbench.types import ErrorPolicy, Run

__all__ = ["CURVE_POINTS", "HISTOGRAM_BINS", "curves", "latency_histogram"]

CURVE_POINTS = 200
HISTOGRAM_BINS = 30


def _thin(n: int, max_points: int) -> list[int]:
    return sorted(set(np.linspace(0, n - 1, min(n, max_points)).round().astype(int).tolist()))


def curves(
    run: Run, policy: ErrorPolicy, target_fpr: float, distinct_limit: int = DISTINCT_LIMIT
) -> ScoreCurves | None:
    """Thinned curves; past ``distinct_limit`` distinct scores, the exact points at a
    sketch's bin lows (the summary's ``scores.sketch`` states the bounds)."""
    if not has_scores(run):
        return None
    # Per distinct score (at most distinct_limit bins): memory not per sample.
    counts = score_counts(run, policy=policy, distinct_limit=distinct_limit)
    if counts.m == 0 or counts.n == 0:
        return None
    roc = roc_curve_counts(counts)
    keep = _thin(len(roc.fpr), CURVE_POINTS)
    roc = RocCurve(
        tuple(roc.fpr[i] for i in keep),
        tuple(roc.tpr[i] for i in keep),
        tuple(roc.thresholds[i] for i in keep),
        roc.n_attacks,
        roc.n_benign,
    )
    pr = precision_recall_curve_counts(counts)
    keep = _thin(len(pr.precision), CURVE_POINTS)
    pr = PrecisionRecallCurve(
        tuple(pr.precision[i] for i in keep),
        tuple(pr.recall[i] for i in keep),
        tuple(pr.thresholds[i] for i in keep if i < len(pr.thresholds)),
        pr.n_attacks,
        pr.n_benign,
    )
    tradeoff = security_utility_tradeoff_counts(  # the same counts: the run read once
        counts, max_fpr=target_fpr, max_points=CURVE_POINTS, source=f"run {run.id!r}"
    )
    return ScoreCurves(roc, pr, tradeoff, CURVE_POINTS)


def latency_histogram(run: Run) -> LatencyHistogram | None:
    """Counts of the finite latencies in 30 bins, read a block at a time (two reads:
    the range, then the counts; the same counts as one histogram of every value)."""
    if columnar(run):
        blocks: Callable[[], Iterable[np.ndarray]] = partial(latency_blocks, run)
    else:
        values = np.asarray(
            [o.latency_ms for o in run.outcomes if o.status == "ok" and o.latency_ms is not None],
            dtype=float,
        )
        blocks = partial(iter, [values])
    lo, hi = math.inf, -math.inf
    for block in blocks():
        block = block[np.isfinite(block)]
        if block.size:
            lo, hi = min(lo, float(block.min())), max(hi, float(block.max()))
    if lo > hi:
        return None
    if hi <= lo:
        hi = lo + max(abs(lo) * 0.01, 1e-6)
    log = lo > 0 and hi / lo > 20
    edges = (
        np.geomspace(lo, hi, HISTOGRAM_BINS + 1) if log else np.linspace(lo, hi, HISTOGRAM_BINS + 1)
    )
    counts = np.zeros(edges.size - 1, dtype=np.int64)
    for block in blocks():
        counts += np.histogram(block[np.isfinite(block)], bins=edges)[0]
    return LatencyHistogram(
        tuple(float(e) for e in edges),
        tuple(int(c) for c in counts),
        "log" if log else "linear",
    )
