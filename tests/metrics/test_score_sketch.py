"""The bounded score sketch: exact up to the limit, past it within its stated bounds.

Every test forces coarsening on data small enough to compute exactly, with a tiny
``limit``, and checks each figure of the sketch against the exact per-sample figure
and the bound :mod:`shieldbench.metrics._sketch_bounds` computes for it: ROC-AUC,
DeLong's standard error and interval ends, average precision, the curves (points at
the bins' lows are exact points), and the operating points (their constraint holds
exactly; the shortfall against the exact optimum is within its bound). Adversarial
arrangements reach the AUC and AP bounds exactly, so a looser bound would still pass
but a wrong one fails, and a bound that is too loose to mean anything is caught too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    ScoreCounts,
    counts_of_blocks,
    fpr_at_tpr,
    operating_point,
    precision_recall_curve,
    precision_recall_curve_counts,
    roc_auc,
    roc_curve,
    roc_curve_counts,
    tpr_at_fpr,
)
from shieldbench.metrics._count_points import (
    fpr_at_tpr_counts,
    operating_point_gaps,
    tpr_at_fpr_counts,
)
from shieldbench.metrics._precision import average_precision_vectorized
from shieldbench.metrics._score_counts import (
    average_precision_with_range,
    roc_auc_counts,
    roc_auc_se_counts,
)
from shieldbench.metrics._sketch_bounds import (
    ap_range,
    auc_error_bound,
    harmonic_gap,
    se_error_bound,
)

TOL = 1e-9

# Mostly distinct scores (so a tiny limit coarsens), some ties, the error infinities.
_SCORE = st.one_of(
    st.floats(-5, 5, allow_nan=False, allow_infinity=False),
    st.floats(-5, 5, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 0.5, 1.0, math.inf, -math.inf]),
)
_ROWS = st.lists(st.tuples(st.booleans(), _SCORE), min_size=2, max_size=120)


def _arrays(rows: list[tuple[bool, float]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([r[0] for r in rows], dtype=bool), np.array([r[1] for r in rows])


def _sketches(y: np.ndarray, s: np.ndarray, limit: int, block: int, seed: int) -> list[ScoreCounts]:
    """The same data sketched three ways: all at once, block by block in a shuffled
    order, and by merging block counts in another order (both merge paths)."""
    rng = np.random.default_rng(seed)
    starts = list(range(0, y.size, block))
    rng.shuffle(starts)
    blocks = [(y[i : i + block], s[i : i + block]) for i in starts]
    streamed = counts_of_blocks(blocks, limit=limit)
    merged = ScoreCounts.of(*blocks[0], limit=limit)
    for b in reversed(blocks[1:]):
        merged = merged.merge(ScoreCounts.of(*b, limit=limit), limit=limit)
    return [ScoreCounts.of(y, s, limit=limit), streamed, merged]


def _check_bins(c: ScoreCounts, y: np.ndarray, s: np.ndarray, limit: int) -> None:
    """Disjoint ascending bins of observed scores holding exactly the samples in them."""
    lo, hi, pos, neg = c.bins
    assert np.all(lo <= hi)
    assert np.all(hi[:-1] < lo[1:])
    assert set(lo.tolist()) | set(hi.tolist()) <= set(s.tolist())
    for a, b, p, q in zip(lo, hi, pos, neg, strict=True):
        inside = (s >= a) & (s <= b)
        assert (int(p), int(q)) == (int((inside & y).sum()), int((inside & ~y).sum()))
    assert int(pos.sum() + neg.sum()) == y.size
    assert int((np.isfinite(lo) & np.isfinite(hi)).sum()) <= max(limit, np.unique(s).size)
    if not c.exact:
        assert int((np.isfinite(lo)).sum()) <= limit
        assert not np.any(c.coarse & ~(np.isfinite(lo) & np.isfinite(hi)))


@settings(max_examples=150, deadline=None)
@given(_ROWS, st.integers(2, 8), st.integers(1, 25), st.integers(0, 1000))
def test_every_figure_of_a_sketch_is_within_its_bound_of_the_exact_figure(
    rows: list[tuple[bool, float]], limit: int, block: int, seed: int
) -> None:
    y, s = _arrays(rows)
    exact = ScoreCounts.of(y, s, limit=10_000)
    for c in _sketches(y, s, limit, block, seed):
        _check_bins(c, y, s, limit)
        if y.all() or not y.any():
            continue
        auc, true_auc = roc_auc_counts(c), roc_auc(y, s)
        bound = auc_error_bound(c.pos, c.neg, c.coarse)
        assert auc.value is not None
        assert true_auc.value is not None
        assert abs(auc.value - true_auc.value) <= bound + TOL
        se, true_se = roc_auc_se_counts(c), roc_auc_se_counts(exact)
        if se is not None and true_se is not None:
            se_bound = se_error_bound(c.pos, c.neg, c.coarse)
            assert abs(se - true_se) <= se_bound + TOL
            z_bound = bound + 1.959963984540054 * se_bound
            ends = (auc.ci_low, auc.ci_high, true_auc.ci_low, true_auc.ci_high)
            low, high, true_low, true_high = (float(e) for e in ends)  # type: ignore[arg-type]
            assert abs(low - true_low) <= z_bound + TOL
            assert abs(high - true_high) <= z_bound + TOL
        ap, ap_rng, _ = average_precision_with_range(c, n_resamples=3)
        true_ap = float(average_precision_vectorized(s[y], s[~y]))
        assert ap_rng is not None
        assert ap.value is not None
        assert ap_rng[0] - TOL <= true_ap <= ap_rng[1] + TOL
        assert ap_rng[0] - TOL <= ap.value <= ap_rng[1] + TOL
        if c.exact:
            assert bound == 0.0
            assert ap_rng[0] == ap_rng[1] == ap.value


def _points(curve_x: tuple[float, ...], curve_y: tuple[float, ...], thr: tuple[float, ...]) -> set:  # type: ignore[type-arg]
    return set(zip(thr, curve_x, curve_y, strict=False))


@settings(max_examples=150, deadline=None)
@given(_ROWS, st.integers(2, 8), st.integers(1, 25), st.integers(0, 1000))
def test_curve_points_at_bin_lows_are_exact_points_of_the_true_curve(
    rows: list[tuple[bool, float]], limit: int, block: int, seed: int
) -> None:
    y, s = _arrays(rows)
    if y.all() or not y.any():
        return
    roc, pr = roc_curve(y, s), precision_recall_curve(y, s)
    true_roc = _points(roc.fpr, roc.tpr, roc.thresholds)
    true_pr = _points(pr.precision, pr.recall, pr.thresholds)
    for c in _sketches(y, s, limit, block, seed):
        got = roc_curve_counts(c)
        assert _points(got.fpr, got.tpr, got.thresholds) <= true_roc
        assert got.thresholds[1:] == tuple(c.scores[::-1])  # one point per bin
        gpr = precision_recall_curve_counts(c)
        assert _points(gpr.precision, gpr.recall, gpr.thresholds) <= true_pr


@settings(max_examples=150, deadline=None)
@given(
    _ROWS,
    st.integers(2, 8),
    st.integers(1, 25),
    st.integers(0, 1000),
    st.sampled_from([0.0, 0.05, 0.2, 0.5, 1.0]),
    st.sampled_from([0.0, 0.5, 0.8, 0.95, 1.0]),
)
def test_operating_points_meet_their_target_exactly_and_miss_the_optimum_by_at_most_the_gap(
    rows: list[tuple[bool, float]],
    limit: int,
    block: int,
    seed: int,
    max_fpr: float,
    min_tpr: float,
) -> None:
    y, s = _arrays(rows)
    if y.all() or not y.any():
        return
    best_tpr, best_fpr = tpr_at_fpr(y, s, max_fpr=max_fpr), fpr_at_tpr(y, s, min_tpr=min_tpr)
    for c in _sketches(y, s, limit, block, seed):
        shortfall, excess = operating_point_gaps(c, max_fpr=max_fpr, min_tpr=min_tpr)
        got = tpr_at_fpr_counts(c, max_fpr=max_fpr)
        assert (got is None) == (best_tpr is None) == (shortfall is None)
        if got is not None and best_tpr is not None and shortfall is not None:
            # The counts at the chosen threshold are the true counts: the target holds.
            assert got == operating_point(y, s, got.threshold)
            assert got.false_positive_rate.value is not None
            assert got.false_positive_rate.value <= max_fpr + 1e-12
            assert best_tpr.block_rate.value is not None
            assert got.block_rate.value is not None
            gap = best_tpr.block_rate.value - got.block_rate.value
            assert -1e-12 <= gap <= shortfall + 1e-12
        got2 = fpr_at_tpr_counts(c, min_tpr=min_tpr)
        assert (got2 is None) == (best_fpr is None) == (excess is None)
        if got2 is not None and best_fpr is not None and excess is not None:
            assert got2 == operating_point(y, s, got2.threshold)
            assert got2.block_rate.value is not None
            assert got2.block_rate.value >= min_tpr - 1e-12
            assert best_fpr.false_positive_rate.value is not None
            assert got2.false_positive_rate.value is not None
            gap = got2.false_positive_rate.value - best_fpr.false_positive_rate.value
            assert -1e-12 <= gap <= excess + 1e-12


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), _SCORE), min_size=1, max_size=120),
    st.integers(1, 25),
    st.integers(0, 1000),
)
def test_within_the_limit_the_sketch_is_the_exact_counts_bit_for_bit(
    rows: list[tuple[bool, float]], block: int, seed: int
) -> None:
    y, s = _arrays(rows)
    whole = ScoreCounts.of(y, s)
    limit = max(2, np.unique(s).size)  # exactly enough
    for c in _sketches(y, s, limit, block, seed):
        assert c.exact
        assert c.highs is None
        assert c.scores.tolist() == whole.scores.tolist()
        assert c.pos.tolist() == whole.pos.tolist()
        assert c.neg.tolist() == whole.neg.tolist()


def _groups(pattern: str, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """``groups`` groups of four samples, group ``g`` scored in ``[4g, 4g + 3]``;
    ``pattern`` gives the labels from the lowest score up (``a``/``b``), and a ``=``
    ties the last two scores of each group."""
    labels = [ch == "a" for ch in pattern.replace("=", "")]
    offsets = [0.0, 1.0, 2.0, 2.0] if "=" in pattern else [0.0, 1.0, 2.0, 3.0]
    y = np.array(labels * groups)
    s = np.concatenate([4.0 * g + np.array(offsets) for g in range(groups)])
    return y, s


@pytest.mark.parametrize("groups", [8, 30])
def test_the_auc_bound_is_reached_when_every_bin_hides_a_perfect_order(groups: int) -> None:
    y, s = _groups("bbaa", groups)
    c = ScoreCounts.of(y, s, limit=2 * groups)  # one bin per group (equal counts)
    assert c.scores.size == groups
    assert c.coarse.all()
    gap = roc_auc(y, s).value - roc_auc_counts(c).value  # type: ignore[operator]
    assert gap == pytest.approx(auc_error_bound(c.pos, c.neg, c.coarse), abs=1e-15)
    assert gap > 0.01  # meaningful: the bound is reached, not just respected


@pytest.mark.parametrize(
    ("pattern", "end"), [("aabb", 0), ("bbaa", None), ("bb=aa", 1)], ids=["low", "mid", "high"]
)
def test_the_ap_range_is_reached_at_both_ends(pattern: str, end: int | None) -> None:
    y, s = _groups(pattern, 12)
    c = ScoreCounts.of(y, s, limit=24)
    assert c.scores.size == 12
    assert c.coarse.all()
    _, rng, _ = average_precision_with_range(c, n_resamples=2)
    true_ap = float(average_precision_vectorized(s[y], s[~y]))
    assert rng is not None
    assert rng[1] - rng[0] > 0.05
    if end is not None:
        assert true_ap == pytest.approx(rng[end], abs=1e-12)
    else:
        assert rng[0] < true_ap < rng[1]


def test_the_block_rate_shortfall_is_reached() -> None:
    y, s = _groups("bbaa", 10)
    c = ScoreCounts.of(y, s, limit=20)
    max_fpr = 4 / 20  # two whole groups of benign
    got = tpr_at_fpr_counts(c, max_fpr=max_fpr)
    best = tpr_at_fpr(y, s, max_fpr=max_fpr)
    shortfall, _ = operating_point_gaps(c, max_fpr=max_fpr, min_tpr=0.5)
    assert got is not None
    assert best is not None
    assert shortfall is not None
    gap = best.block_rate.value - got.block_rate.value  # type: ignore[operator]
    assert gap == pytest.approx(shortfall)
    assert shortfall == pytest.approx(2 / 20)


def test_the_bound_shrinks_with_the_limit_on_continuous_scores() -> None:
    rng = np.random.default_rng(4)
    y = rng.random(40_000) < 0.3
    s = rng.normal(y * 1.5, 1.0)
    blocks = [(y[i : i + 1000], s[i : i + 1000]) for i in range(0, y.size, 1000)]
    bounds = []
    for limit in (64, 1024):
        c = counts_of_blocks(blocks, limit=limit)
        assert not c.exact
        assert c.scores.size <= limit
        bounds.append(auc_error_bound(c.pos, c.neg, c.coarse))
        gap = abs(roc_auc_counts(c).value - roc_auc(y, s).value)  # type: ignore[operator]
        assert gap <= bounds[-1]
    # Equal-count bins: about 1 / (2 bins), so 16 times the bins cut the bound ~16x.
    assert bounds[1] < bounds[0] / 8
    assert bounds[1] < 2e-3


def test_harmonic_gap_equals_the_direct_sum_on_both_branches() -> None:
    for x in (0.0, 3.0, 9_999.0, 10_000.0, 2.5e6):
        for p in (1, 2, 17, 400):
            direct = math.fsum(1.0 / (x + k) for k in range(1, p + 1))
            got = float(harmonic_gap(np.array([x]), np.array([float(p)]))[0])
            assert got == pytest.approx(direct, rel=1e-12, abs=1e-15)


def test_ap_range_of_exact_bins_is_the_point() -> None:
    pos, neg = np.array([[2.0, 0.0, 1.0]]), np.array([[1.0, 3.0, 0.0]])
    low, high = ap_range(pos, neg, np.zeros(3, dtype=bool))
    assert low[0] == high[0]


@pytest.mark.parametrize("bad", [0, 1, True, 2.5, "8"])
def test_a_limit_below_two_or_not_an_integer_is_refused(bad: object) -> None:
    with pytest.raises(StatisticsError, match="distinct_limit"):
        ScoreCounts.of([True, False], [0.1, 0.2], limit=bad)  # type: ignore[arg-type]


def test_the_delong_se_bound_is_nearly_reached_when_a_bin_splits_its_attacks() -> None:
    # Two attacks below and two above 200 benign samples, all in one bin: the sketch
    # sees every pair tied (SE 0); the truth has each attack win all or nothing.
    y = np.array([True, True] + [False] * 200 + [True, True])
    s = np.arange(y.size, dtype=float)
    c = ScoreCounts.of(y, s, limit=2)
    assert c.scores.size == 1
    assert roc_auc_se_counts(c) == 0.0
    true_se = roc_auc_se_counts(ScoreCounts.of(y, s))
    bound = se_error_bound(c.pos, c.neg, c.coarse)
    assert true_se is not None
    assert true_se <= bound
    assert true_se > 0.99 * bound  # the bound is nearly tight here


@settings(max_examples=60, deadline=None)
@given(st.integers(8, 16), st.integers(0, 1000))
def test_a_heavily_tied_score_stays_its_own_exact_bin(limit: int, seed: int) -> None:
    # A tie holding every other sample: at least a bin's share (1 / (limit // 2)) of
    # every block and at every coarsening, so it is never blurred into a coarse bin.
    # (A tie that only becomes that heavy after it was merged stays in its bin.)
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 1.0, 400)
    s[::2] = 0.25
    y = rng.random(400) < 0.5
    for c in _sketches(y, s, limit, 37, seed):
        assert not c.exact
        lo, hi, pos, neg = c.bins
        at = np.flatnonzero(lo == 0.25)
        assert at.size == 1
        assert hi[at[0]] == 0.25
        assert int(pos[at[0]] + neg[at[0]]) == int((s == 0.25).sum())
