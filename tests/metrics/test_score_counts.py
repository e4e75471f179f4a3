"""Figures from per-distinct-score counts and from streamed order statistics equal
the figures computed from the per-sample arrays held in memory.

The bounded-memory paths (``shieldbench.metrics._score_counts``,
``_count_points`` and ``_order_stats``) are exact, not sketches: every curve point,
count and threshold is equal; ROC-AUC is equal; DeLong's variance and average
precision differ at most by floating-point summation order (1e-12); latency
percentiles and their interval bounds are equal to the last bit. The PR-AUC
bootstrap draws per-score multinomial counts: the same distribution as resampling
samples, so its interval agrees within Monte Carlo error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.metrics import (
    ScoreCounts,
    average_precision,
    fpr_at_tpr,
    precision_recall_curve,
    precision_recall_curve_counts,
    quantile_interval,
    roc_auc,
    roc_curve,
    roc_curve_counts,
    tpr_at_fpr,
)
from shieldbench.metrics._count_points import fpr_at_tpr_counts, tpr_at_fpr_counts
from shieldbench.metrics._order_stats import order_statistics, quantile_estimates
from shieldbench.metrics._precision import average_precision_vectorized
from shieldbench.metrics._score_counts import average_precision_counts, roc_auc_counts

# Few distinct scores (ties everywhere), infinities as the error policies make them.
_SCORE = st.one_of(
    st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0, math.inf, -math.inf]),
    st.floats(-5, 5, allow_nan=False, allow_infinity=False),
)
_SAMPLES = st.lists(st.tuples(st.booleans(), _SCORE), min_size=1, max_size=80)


def _arrays(rows: list[tuple[bool, float]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([r[0] for r in rows], dtype=bool), np.array([r[1] for r in rows])


@settings(max_examples=200, deadline=None)
@given(_SAMPLES, st.integers(1, 10))
def test_counts_merged_from_any_blocks_equal_the_counts_of_the_whole(
    rows: list[tuple[bool, float]], block: int
) -> None:
    y, s = _arrays(rows)
    whole = ScoreCounts.of(y, s)
    merged = ScoreCounts.of(y[:block], s[:block])
    for start in range(block, y.size, block):
        merged = merged.merge(ScoreCounts.of(y[start : start + block], s[start : start + block]))
    assert merged.scores.tolist() == whole.scores.tolist()
    assert merged.pos.tolist() == whole.pos.tolist()
    assert merged.neg.tolist() == whole.neg.tolist()
    assert (whole.m, whole.n) == (int(y.sum()), int((~y).sum()))


@settings(max_examples=200, deadline=None)
@given(_SAMPLES, st.sampled_from([0.0, 0.01, 0.3, 1.0]), st.sampled_from([0.0, 0.5, 0.9, 1.0]))
def test_every_score_figure_from_counts_equals_the_one_from_arrays(
    rows: list[tuple[bool, float]], max_fpr: float, min_tpr: float
) -> None:
    y, s = _arrays(rows)
    c = ScoreCounts.of(y, s)
    expected_auc, got_auc = roc_auc(y, s), roc_auc_counts(c)
    assert got_auc.value == expected_auc.value  # exactly: both are half-integers / (m n)
    assert got_auc.ci_low == pytest.approx(expected_auc.ci_low, abs=1e-12)
    assert got_auc.ci_high == pytest.approx(expected_auc.ci_high, abs=1e-12)
    assert got_auc.n == expected_auc.n
    if 0 < y.sum() < y.size:
        assert roc_curve_counts(c) == roc_curve(y, s)
        assert precision_recall_curve_counts(c) == precision_recall_curve(y, s)
        ap = average_precision_counts(c, n_resamples=5)
        assert ap.value == pytest.approx(
            float(average_precision_vectorized(s[y], s[~y])), abs=1e-12
        )
    if not y.all():
        assert tpr_at_fpr_counts(c, max_fpr=max_fpr) == tpr_at_fpr(y, s, max_fpr=max_fpr)
    if y.any():
        assert fpr_at_tpr_counts(c, min_tpr=min_tpr) == fpr_at_tpr(y, s, min_tpr=min_tpr)


def test_pr_auc_bootstrap_from_counts_has_the_distribution_of_the_sample_bootstrap() -> None:
    rng = np.random.default_rng(6)
    y = rng.random(3000) < 0.3
    s = np.round(y * 0.5 + rng.random(3000), 1)  # eleven or so distinct scores
    per_sample = average_precision(y, s, n_resamples=3000, seed=1)
    per_score = average_precision_counts(ScoreCounts.of(y, s), n_resamples=3000, seed=2)
    assert per_score.value == pytest.approx(per_sample.value, abs=1e-12)
    # Other random draws of the same distribution: Monte Carlo error of the bounds.
    assert per_score.ci_low == pytest.approx(per_sample.ci_low, abs=0.006)
    assert per_score.ci_high == pytest.approx(per_sample.ci_high, abs=0.006)
    again = average_precision_counts(ScoreCounts.of(y, s), n_resamples=3000, seed=2)
    assert again == per_score  # seeded


def _blocks(values: np.ndarray, size: int):  # type: ignore[no-untyped-def]
    return lambda: (values[i : i + size] for i in range(0, values.size, size))


_VALUES = st.lists(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(0.001, 1000, allow_nan=False),
        st.sampled_from([0.0, 1.0, 2.5, 1e-300, -1.0, 7.0]),
    ),
    min_size=1,
    max_size=120,
)


@settings(max_examples=200, deadline=None)
@given(_VALUES, st.integers(1, 17), st.data())
def test_order_statistics_from_blocks_are_those_of_the_sorted_values(
    values: list[float], block: int, data: st.DataObject
) -> None:
    x = np.array(values)
    ranks = data.draw(st.lists(st.integers(0, x.size - 1), min_size=1, max_size=6))
    got = order_statistics(_blocks(x, block), ranks)
    ordered = np.sort(x)
    assert {r: got[r] for r in ranks} == {r: float(ordered[r]) for r in ranks}


@settings(max_examples=150, deadline=None)
@given(_VALUES, st.integers(1, 17), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_streamed_quantiles_equal_quantile_interval_to_the_last_bit(
    values: list[float], block: int, confidence: float
) -> None:
    x = np.abs(np.array(values))  # latencies are not negative; keep sums finite
    x = x[x < 1e300]
    qs = (0.5, 0.95, 0.99, 0.1)
    n, mean, top, estimates = quantile_estimates(_blocks(x, block), qs, confidence=confidence)
    assert n == x.size
    if x.size == 0:
        assert (mean, top) == (None, None)
        return
    assert top == float(x.max())
    assert mean == pytest.approx(float(x.mean()), rel=1e-12, abs=1e-300)
    for q, got in zip(qs, estimates, strict=True):
        assert got == quantile_interval(x, q, confidence=confidence)


def test_streamed_quantiles_of_many_values_in_many_blocks() -> None:
    rng = np.random.default_rng(3)
    x = np.round(rng.lognormal(1.0, 1.0, 200_000), 3)  # ties, a long tail
    _, _, _, estimates = quantile_estimates(_blocks(x, 4096), (0.5, 0.95, 0.99))
    for q, got in zip((0.5, 0.95, 0.99), estimates, strict=True):
        assert got == quantile_interval(x, q)
