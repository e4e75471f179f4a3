"""Proportion intervals against statsmodels, coverage by simulation, bootstrap and
quantile intervals against scipy, and the undefined cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    INTERVAL_METHODS,
    bootstrap_interval,
    proportion_interval,
    quantile_interval,
    rate,
)

SM_NAME = {
    "wilson": "wilson",
    "clopper_pearson": "beta",
    "jeffreys": "jeffreys",
    "agresti_coull": "agresti_coull",
}
GRID = [
    (k, n)
    for n in (1, 2, 3, 7, 10, 25, 50, 120, 1000)
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n})
]


@pytest.mark.parametrize("method", INTERVAL_METHODS)
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_intervals_match_statsmodels(method: str, confidence: float) -> None:
    for k, n in GRID:
        low, high = proportion_interval(k, n, confidence=confidence, method=method)  # type: ignore[arg-type]
        ref_low, ref_high = proportion_confint(k, n, alpha=1 - confidence, method=SM_NAME[method])
        if method == "jeffreys" and k == 0:
            # Brown, Cai & DasGupta's boundary fix; statsmodels keeps the raw beta quantile.
            assert low == 0.0
        else:
            assert low == pytest.approx(ref_low, abs=1e-9), (method, k, n)
        if method == "jeffreys" and k == n:
            assert high == 1.0
        else:
            assert high == pytest.approx(ref_high, abs=1e-9), (method, k, n)


def test_wilson_hand_computed() -> None:
    # 45/50 by the closed form, z = 1.959963984540054.
    z = 1.959963984540054
    p, n = 0.9, 50
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    r = rate(45, 50)
    assert (r.k, r.n, r.value) == (45, 50, 0.9)
    assert r.ci_low == pytest.approx(centre - half, abs=1e-12)
    assert r.ci_high == pytest.approx(centre + half, abs=1e-12)
    assert r.method == "wilson"
    assert r.confidence == 0.95


@pytest.mark.parametrize("method", INTERVAL_METHODS)
def test_empty_rate_is_none_with_whole_range(method: str) -> None:
    r = rate(0, 0, method=method)  # type: ignore[arg-type]
    assert r.value is None
    assert (r.ci_low, r.ci_high) == (0.0, 1.0)
    assert r.to_dict()["value"] is None


@pytest.mark.parametrize(
    ("k", "n", "kwargs"),
    [(3, 2, {}), (-1, 4, {}), (1, -1, {}), (1, 4, {"confidence": 1.0}), (1, 4, {"method": "wald"})],
)
def test_bad_input_is_refused(k: int, n: int, kwargs: dict[str, object]) -> None:
    with pytest.raises(StatisticsError):
        proportion_interval(k, n, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("k", "n"), [(1.5, 3), (1, 3.5), (math.nan, 3), (1, math.inf), ("1", 3)])
def test_counts_must_be_whole_numbers(k: object, n: object) -> None:
    # rate(1.5, 3) once gave Rate(k=1, value=0.5): the count and the value disagreed.
    with pytest.raises(StatisticsError, match="whole counts"):
        rate(k, n)  # type: ignore[arg-type]
    assert rate(np.int64(3), np.int64(10)) == rate(3.0, 10.0) == rate(3, 10)  # type: ignore[arg-type]


@given(
    n=st.integers(min_value=0, max_value=5000),
    frac=st.floats(min_value=0, max_value=1),
    method=st.sampled_from(INTERVAL_METHODS),
    confidence=st.floats(min_value=0.5, max_value=0.999),
)
@settings(max_examples=200, deadline=None)
def test_interval_contains_point_and_stays_in_unit_range(
    n: int, frac: float, method: str, confidence: float
) -> None:
    k = round(frac * n)
    r = rate(k, n, confidence=confidence, method=method)  # type: ignore[arg-type]
    assert 0.0 <= r.ci_low <= r.ci_high <= 1.0
    if r.value is not None:
        assert 0.0 <= r.value <= 1.0
        assert r.ci_low <= r.value <= r.ci_high


@given(n=st.integers(min_value=1, max_value=2000), frac=st.floats(min_value=0, max_value=1))
@settings(max_examples=100, deadline=None)
def test_wider_confidence_gives_wider_interval(n: int, frac: float) -> None:
    k = round(frac * n)
    narrow = rate(k, n, confidence=0.9)
    wide = rate(k, n, confidence=0.99)
    assert wide.ci_low <= narrow.ci_low + 1e-15
    assert wide.ci_high >= narrow.ci_high - 1e-15


# Exact coverage of these settings lies in [0.943, 0.956] (computed from the binomial
# pmf); with 20,000 draws the simulation's standard error is 0.0015, so [0.93, 0.97]
# is more than 8 standard errors away. Small n with extreme p (e.g. n=50, p=0.02) dips
# to 0.92 in truth: the Wilson interval's known oscillation, not a simulation artefact.
@pytest.mark.parametrize(
    ("n", "p"), [(100, 0.02), (200, 0.1), (200, 0.5), (500, 0.05), (1000, 0.3), (100, 0.5)]
)
def test_wilson_coverage_by_simulation(n: int, p: float) -> None:
    rng = np.random.default_rng(20260101 + n)
    ks = rng.binomial(n, p, size=20_000)
    bounds = {k: proportion_interval(int(k), n) for k in np.unique(ks)}
    covered = np.mean([bounds[k][0] <= p <= bounds[k][1] for k in ks])
    assert 0.93 <= covered <= 0.97


def test_bootstrap_interval_is_scipy_bootstrap_seeded() -> None:
    x = np.random.default_rng(3).exponential(size=80)
    for method, scipy_method in (("percentile", "percentile"), ("bca", "BCa")):
        est = bootstrap_interval(
            np.median,
            x,
            method=method,  # type: ignore[arg-type]
            n_resamples=999,
            seed=11,
        )
        ref = stats.bootstrap(
            (x,),
            np.median,
            n_resamples=999,
            method=scipy_method,
            rng=np.random.default_rng(11),
            vectorized=True,
        )
        assert est.value == pytest.approx(float(np.median(x)))
        assert est.ci_low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
        assert est.ci_high == pytest.approx(ref.confidence_interval.high, abs=1e-12)
        again = bootstrap_interval(np.median, x, method=method, n_resamples=999, seed=11)  # type: ignore[arg-type]
        assert again == est


def test_bootstrap_latency_percentile() -> None:
    latencies = np.random.default_rng(5).lognormal(mean=1.0, sigma=0.5, size=400)

    def p95(a: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.percentile(a, 95, axis=axis)

    est = bootstrap_interval(p95, latencies, method="percentile", n_resamples=1000, seed=1)
    assert est.ci_low is not None
    assert est.ci_high is not None
    assert est.ci_low < est.value < est.ci_high  # type: ignore[operator]


def test_bootstrap_degenerate_and_tiny_inputs() -> None:
    same = bootstrap_interval(np.mean, np.full(10, 2.0), method="bca")
    assert (same.value, same.ci_low, same.ci_high) == (2.0, 2.0, 2.0)
    one = bootstrap_interval(np.mean, [3.0])
    assert (one.value, one.ci_low, one.ci_high) == (3.0, None, None)
    empty = bootstrap_interval(np.mean, [])
    assert empty.value is None
    with pytest.raises(StatisticsError):
        bootstrap_interval(np.mean, [1.0, 2.0], method="basic")  # type: ignore[arg-type]


def test_quantile_interval_matches_scipy_quantile_test() -> None:
    x = np.random.default_rng(7).exponential(size=500)
    for q in (0.5, 0.95, 0.99):
        est = quantile_interval(x, q)
        ci = stats.quantile_test(x, q=np.quantile(x, q), p=q).confidence_interval(0.95)
        assert est.value == pytest.approx(float(np.quantile(x, q)), abs=1e-12)
        assert est.ci_low == pytest.approx(float(ci.low), abs=1e-12)
        assert est.ci_high == pytest.approx(float(ci.high), abs=1e-12)
        assert est.ci_low <= est.value <= est.ci_high  # type: ignore[operator]


@given(
    n=st.integers(2, 2_000),
    q=st.sampled_from([0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999]),
    confidence=st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999999]),
)
@settings(max_examples=300, deadline=None)
def test_quantile_interval_matches_scipy_at_every_size_and_level(
    n: int, q: float, confidence: float
) -> None:
    """The order statistics come from scipy.special's binomial functions (no
    scipy.stats import); they pick exactly scipy.stats.quantile_test's, bound or none."""
    x = np.arange(float(n))  # distinct values: each index is its own value
    est = quantile_interval(x, q, confidence=confidence)
    ci = stats.quantile_test(x, q=float(np.quantile(x, q)), p=q).confidence_interval(confidence)
    assert est.ci_low == (None if math.isnan(ci.low) else float(ci.low))
    assert est.ci_high == (None if math.isnan(ci.high) else float(ci.high))


def test_quantile_interval_order_statistics_by_hand() -> None:
    # 1..100, median: the 95% order-statistic interval is [x_(40), x_(61)].
    est = quantile_interval(np.arange(1.0, 101.0), 0.5)
    assert (est.value, est.ci_low, est.ci_high) == (50.5, 40.0, 61.0)
    # Coverage of that interval: P(40 <= B < 61), B ~ Bin(100, 0.5), at least 95%.
    assert stats.binom.cdf(60, 100, 0.5) - stats.binom.cdf(39, 100, 0.5) >= 0.95


def test_quantile_interval_open_tail_and_empty() -> None:
    est = quantile_interval(np.arange(50.0), 0.99)
    assert est.value is not None
    assert est.ci_high is None
    assert quantile_interval([], 0.5).value is None
    single = quantile_interval([4.0], 0.5)
    assert (single.value, single.ci_low, single.ci_high) == (4.0, None, None)
    with pytest.raises(StatisticsError):
        quantile_interval([1.0, 2.0], 1.0)
