"""Curves and AUCs against scikit-learn, DeLong against an independent O(m n)
implementation, PR-AUC bootstrap against scipy, and the undefined cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn import metrics as skm

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    average_precision,
    compare_auc,
    has_scores,
    precision_recall_curve,
    roc_auc,
    roc_curve,
    score_arrays,
)
from shieldbench.metrics._curves import _average_ranks
from shieldbench.metrics._precision import average_precision_vectorized
from shieldbench.metrics._testing import make_run

# Scores on a coarse grid so that ties (within and across classes) are common.
scored = st.lists(
    st.tuples(st.booleans(), st.integers(min_value=0, max_value=12)), min_size=2, max_size=80
).filter(lambda rows: 0 < sum(r[0] for r in rows) < len(rows))


def _arrays(rows: list[tuple[bool, int]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([r[0] for r in rows]), np.array([r[1] / 12 for r in rows])


@given(scored)
@settings(max_examples=40, deadline=None)
def test_curves_and_aucs_match_scikit_learn(rows: list[tuple[bool, int]]) -> None:
    y, s = _arrays(rows)
    roc = roc_curve(y, s)
    fpr, tpr, thr = skm.roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(roc.fpr, fpr, atol=1e-12)
    np.testing.assert_allclose(roc.tpr, tpr, atol=1e-12)
    np.testing.assert_array_equal(roc.thresholds, thr)
    pr = precision_recall_curve(y, s)
    p, r, t = skm.precision_recall_curve(y, s)
    np.testing.assert_allclose(pr.precision, p, atol=1e-12)
    np.testing.assert_allclose(pr.recall, r, atol=1e-12)
    np.testing.assert_array_equal(pr.thresholds, t)
    assert roc_auc(y, s).value == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    ap = float(average_precision_vectorized(s[y], s[~y]))
    assert ap == pytest.approx(skm.average_precision_score(y, s), abs=1e-12)


def _naive_delong(y: np.ndarray, *scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong et al. (1988) straight from the definition: psi over all m x n pairs."""
    v_pos, v_neg, aucs = [], [], []
    for s in scores:
        x, z = s[y], s[~y]
        psi = (x[:, None] > z[None, :]) + 0.5 * (x[:, None] == z[None, :])
        v_pos.append(psi.mean(axis=1))
        v_neg.append(psi.mean(axis=0))
        aucs.append(psi.mean())
    m, n = int(y.sum()), int((~y).sum())
    cov = np.atleast_2d(np.cov(np.vstack(v_pos))) / m + np.atleast_2d(np.cov(np.vstack(v_neg))) / n
    return np.array(aucs), cov


@given(scored)
@settings(max_examples=60, deadline=None)
def test_delong_interval_matches_definition(rows: list[tuple[bool, int]]) -> None:
    y, s = _arrays(rows)
    if min(y.sum(), (~y).sum()) < 2:
        return
    aucs, cov = _naive_delong(y, s)
    est = roc_auc(y, s)
    half = stats.norm.isf(0.025) * math.sqrt(cov[0, 0])
    assert est.value == pytest.approx(aucs[0], abs=1e-12)
    assert est.ci_low == pytest.approx(max(0.0, aucs[0] - half), abs=1e-9)
    assert est.ci_high == pytest.approx(min(1.0, aucs[0] + half), abs=1e-9)


def test_paired_delong_matches_definition() -> None:
    rng = np.random.default_rng(4)
    y = rng.random(300) < 0.4
    a = y * 0.8 + rng.normal(size=300)
    b = y * 0.5 + 0.6 * a + rng.normal(size=300)  # correlated with a
    aucs, cov = _naive_delong(y, a, b)
    var = cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]
    z = (aucs[0] - aucs[1]) / math.sqrt(var)
    r = compare_auc(y, a, b)
    assert r.difference == pytest.approx(aucs[0] - aucs[1], abs=1e-12)
    assert r.z == pytest.approx(z, abs=1e-9)
    assert r.p_value == pytest.approx(2 * stats.norm.sf(abs(z)), abs=1e-9)
    assert r.auc_a.value == pytest.approx(skm.roc_auc_score(y, a))
    swapped = compare_auc(y, b, a)
    assert swapped.z == pytest.approx(-r.z, abs=1e-12)  # type: ignore[operator]
    assert swapped.p_value == pytest.approx(r.p_value, abs=1e-12)


def test_paired_delong_false_rejection_rate_under_null() -> None:
    # Two exchangeable scorers of equal AUC: rejections at alpha 0.05 should be ~5%.
    rng = np.random.default_rng(8)
    rejections = 0
    trials = 300
    for _ in range(trials):
        y = rng.random(200) < 0.5
        a = y * 1.0 + rng.normal(size=200)
        b = y * 1.0 + rng.normal(size=200)
        rejections += compare_auc(y, a, b).p_value < 0.05
    assert 0.02 <= rejections / trials <= 0.09


def test_undefined_auc_and_curves_with_one_class() -> None:
    y = np.array([True, True, True])
    s = np.array([0.1, 0.5, 0.9])
    e = roc_auc(y, s)
    assert e.value is None
    assert (e.ci_low, e.ci_high) == (0.0, 1.0)
    ap = average_precision(y, s)
    assert ap.value is None
    assert (ap.ci_low, ap.ci_high) == (0.0, 1.0)
    cmp = compare_auc(y, s, s)
    assert cmp.difference is None
    assert cmp.p_value == 1.0
    with pytest.raises(StatisticsError, match="both attacks and benign"):
        roc_curve(y, s)
    with pytest.raises(StatisticsError):
        precision_recall_curve(~y, s)


def test_single_sample_of_a_class_has_no_variance() -> None:
    e = roc_auc([True, False, False], [0.9, 0.1, 0.5])
    assert e.value == 1.0
    assert (e.ci_low, e.ci_high) == (0.0, 1.0)


def test_identical_scorers_compare_as_no_difference() -> None:
    y = np.array([True, False] * 10)
    s = np.linspace(0, 1, 20)
    r = compare_auc(y, s, s)
    assert r.difference == 0.0
    assert r.p_value == 1.0
    assert r.z is None


def test_bad_scores_are_refused() -> None:
    with pytest.raises(StatisticsError, match="NaN"):
        roc_auc([True, False], [0.1, float("nan")])
    with pytest.raises(StatisticsError, match="aligned"):
        roc_auc([True, False], [0.1])


def test_pr_auc_bootstrap_is_stratified_scipy_bootstrap() -> None:
    rng = np.random.default_rng(6)
    y = rng.random(300) < 0.3
    s = np.round(y * 0.5 + rng.random(300), 2)  # with ties
    reference = {}
    for method, scipy_method in (("percentile", "percentile"), ("bca", "BCa")):
        ref = stats.bootstrap(
            (s[y], s[~y]),
            average_precision_vectorized,
            n_resamples=3000,
            paired=False,
            vectorized=True,
            method=scipy_method,
            rng=np.random.default_rng(9),
        )
        reference[method] = (ref.confidence_interval.low, ref.confidence_interval.high)
    # BCa runs scipy itself: identical for the same seed.
    bca = average_precision(y, s, method="bca", n_resamples=3000, seed=9)
    assert (bca.ci_low, bca.ci_high) == pytest.approx(reference["bca"], abs=1e-12)
    # The percentile path resamples by multiplicities along one sort: the same
    # distribution, other random draws. Monte Carlo error of the bounds is ~0.005.
    fast = average_precision(y, s, n_resamples=3000, seed=1)
    assert fast.value == pytest.approx(skm.average_precision_score(y, s), abs=1e-12)
    assert fast.ci_low == pytest.approx(reference["percentile"][0], abs=0.015)
    assert fast.ci_high == pytest.approx(reference["percentile"][1], abs=0.015)
    assert fast.ci_low < fast.value < fast.ci_high  # type: ignore[operator]
    assert average_precision(y, s, n_resamples=300, seed=4) == average_precision(
        y, s, n_resamples=300, seed=4
    )


def test_weighted_resample_equals_materialised_resample() -> None:
    # A resample given as multiplicities along sorted order equals AP of the data it
    # stands for, ties within and across classes included.
    from shieldbench.metrics._precision import _Layout, _multiplicities, _resampled_ap

    rng = np.random.default_rng(2)
    pos = np.round(rng.random(40), 1)
    neg = np.round(rng.random(60) * 0.8, 1)
    draw = np.random.default_rng(5)
    wp, wn = _multiplicities(draw, 40, 4), _multiplicities(draw, 60, 4)
    got = _resampled_ap(_Layout.of(pos, neg), wp, wn)
    pos_desc, neg_desc = np.sort(pos)[::-1], np.sort(neg)[::-1]
    for cp, cn, value in zip(wp.astype(int), wn.astype(int), got, strict=True):
        rp, rn = np.repeat(pos_desc, cp), np.repeat(neg_desc, cn)
        expected = skm.average_precision_score(
            np.r_[np.ones(rp.size), np.zeros(rn.size)], np.r_[rp, rn]
        )
        assert value == pytest.approx(expected, abs=1e-12)


def test_score_arrays_apply_the_error_policy() -> None:
    run = make_run(
        [("a", True, True, 0.9), ("a", True, None), ("b", False, False, 0.2), ("b", False, None)]
    )
    assert has_scores(run)
    y, s = score_arrays(run, policy="fail_closed")
    assert y.tolist() == [True, True, False, False]
    assert s.tolist() == [0.9, math.inf, 0.2, math.inf]
    _, s_open = score_arrays(run, policy="fail_open")
    assert s_open.tolist() == [0.9, -math.inf, 0.2, -math.inf]
    y_ex, s_ex = score_arrays(run, policy="exclude")
    assert y_ex.tolist() == [True, False]
    assert s_ex.tolist() == [0.9, 0.2]
    # fail_closed errors are blocked at every threshold, including +inf.
    roc = roc_curve(*score_arrays(run, policy="fail_closed"))
    assert roc.thresholds[0] == math.inf
    assert roc.tpr[1] == 0.5
    assert roc.fpr[1] == 0.5
    assert roc.to_dict()["thresholds"][0] is None


def test_runs_without_scores() -> None:
    run = make_run([("a", True, True), ("b", False, False, 0.1)])
    assert not has_scores(run)
    with pytest.raises(StatisticsError, match="without a score"):
        score_arrays(run)
    assert not has_scores(make_run([("a", True, None)]))


@given(
    st.lists(
        st.lists(st.integers(0, 5) | st.floats(-3, 3, allow_nan=False), min_size=1, max_size=40),
        min_size=1,
        max_size=3,
    ).filter(lambda rows: len({len(r) for r in rows}) == 1),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_average_ranks_are_scipy_rankdata(rows: list[list[float]], with_nan: bool) -> None:
    """DeLong's ranks (numpy only, so a run need not import scipy.stats) are
    scipy.stats.rankdata's along each row: ties averaged, a NaN row all NaN."""
    a = np.array(rows, dtype=float)
    if with_nan:
        a[0, 0] = np.nan
    assert np.array_equal(_average_ranks(a), stats.rankdata(a, axis=1), equal_nan=True)
