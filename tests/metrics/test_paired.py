"""McNemar against statsmodels and by simulation, Newcombe and Tango against published
worked examples, non-inferiority, and Holm against statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    EXACT_BELOW,
    PairedTable,
    adjust_p_values,
    mcnemar_test,
    non_inferiority_test,
    paired_difference,
    tango_interval,
)
from shieldbench.metrics._paired import _tango_statistic

tables = st.builds(
    PairedTable,
    st.integers(0, 200),
    st.integers(0, 60),
    st.integers(0, 60),
    st.integers(0, 200),
)


@given(tables)
@settings(max_examples=300, deadline=None)
def test_mcnemar_matches_statsmodels(t: PairedTable) -> None:
    r = mcnemar_test(t)
    b, c = t.only_a, t.only_b
    if b + c == 0:
        assert (r.p_value, r.statistic, r.n_discordant) == (1.0, None, 0)
        return
    if b + c < EXACT_BELOW:
        ref = mcnemar(t.as_matrix(), exact=True)
        assert r.method == "exact-binomial"
        assert r.statistic == ref.statistic
        assert r.p_value == pytest.approx(ref.pvalue, abs=1e-9)
    else:
        ref = mcnemar(t.as_matrix(), exact=False, correction=True)
        assert r.method == "chi2-continuity"
        if b != c:  # statsmodels uses (|b-c|-1)^2 even when b == c; we floor at 0
            assert r.statistic == pytest.approx(ref.statistic, abs=1e-9)
            assert r.p_value == pytest.approx(ref.pvalue, abs=1e-9)
        else:
            assert (r.statistic, r.p_value) == (0.0, 1.0)


def test_mcnemar_switches_at_25_discordant_pairs() -> None:
    assert mcnemar_test(PairedTable(10, 20, 4, 10)).method == "exact-binomial"
    assert mcnemar_test(PairedTable(10, 20, 5, 10)).method == "chi2-continuity"
    assert mcnemar_test(PairedTable(10, 20, 5, 10), exact_below=100).method == "exact-binomial"


def test_mcnemar_false_rejection_rate_under_the_null() -> None:
    # 300 pairs, each discordant with probability 0.5 and either direction equally
    # likely: ~150 discordant pairs, so the chi-square branch runs. With few discordant
    # pairs both branches are conservative (about 0.02 at 20 pairs), by design.
    rng = np.random.default_rng(12345)
    trials = 4000
    discordant = rng.binomial(300, 0.5, size=trials)
    only_a = rng.binomial(discordant, 0.5)
    rejected = sum(
        mcnemar_test(PairedTable(0, int(b), int(d - b), 300 - int(d))).p_value < 0.05
        for b, d in zip(only_a, discordant, strict=True)
    )
    assert 0.03 <= rejected / trials <= 0.07


# Newcombe (1998), Stat Med 17:2635, Table II, method 10; and the Cavo et al. (2012)
# table of Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables".
@pytest.mark.parametrize(
    ("cells", "low", "high"),
    [
        ((36, 12, 2, 0), 0.0569, 0.3404),
        ((18, 12, 2, 18), 0.0562, 0.3290),
        ((53, 0, 0, 1), -0.0729, 0.0729),
        ((0, 30, 0, 0), 0.8395, 1.0),
        ((59, 6, 16, 80), -0.1186, -0.0046),
    ],
)
def test_newcombe_published_examples(
    cells: tuple[int, int, int, int], low: float, high: float
) -> None:
    d = paired_difference(PairedTable(*cells))
    e, f, g, h = cells
    assert d.estimate == pytest.approx((f - g) / (e + f + g + h))
    assert round(d.ci_low, 4) == pytest.approx(low, abs=1e-12)
    assert round(d.ci_high, 4) == pytest.approx(high, abs=1e-12)


def test_tango_published_example() -> None:
    # Cavo et al. (2012) in Fagerland et al.: Tango score CI -0.1240 to -0.0054.
    low, high = tango_interval(PairedTable(59, 6, 16, 80))
    assert (round(low, 4), round(high, 4)) == (-0.1240, -0.0054)


@given(tables)
@settings(max_examples=200, deadline=None)
def test_tango_at_margin_zero_is_uncorrected_mcnemar(t: PairedTable) -> None:
    if t.discordant == 0:
        return
    z = _tango_statistic(t, 0.0)
    ref = mcnemar(t.as_matrix(), exact=False, correction=False)
    assert z * z == pytest.approx(ref.statistic, rel=1e-9, abs=1e-12)
    assert np.sign(z) == np.sign(t.only_a - t.only_b)


@given(tables, st.sampled_from([0.0, 0.01, 0.02, 0.05, 0.1]), st.booleans())
@settings(max_examples=200, deadline=None)
def test_non_inferiority_decision_agrees_with_its_bound(
    t: PairedTable, margin: float, higher: bool
) -> None:
    r = non_inferiority_test(t, margin=margin, alpha=0.05, higher_is_better=higher)
    if t.n == 0:
        assert r.difference is None
        assert r.p_value == 1.0
        assert not r.non_inferior
        return
    assert 0.0 <= r.p_value <= 1.0
    clears = r.bound > -margin if higher else r.bound < margin
    if abs(r.bound - (-margin if higher else margin)) > 1e-6:  # away from the knife edge
        assert r.non_inferior == clears
    if higher:
        assert r.bound <= r.difference + 1e-12  # type: ignore[operator]
    else:
        assert r.bound >= r.difference - 1e-12  # type: ignore[operator]


def test_non_inferiority_size_at_the_margin() -> None:
    # True block rates 0.80 (baseline) and 0.78 (candidate): exactly at a margin of
    # 0.02, so non-inferiority should be (wrongly) claimed about alpha = 5% of the time.
    rng = np.random.default_rng(99)
    p_both, p_only_a, p_only_b = 0.70, 0.08, 0.10  # rate_a = 0.78, rate_b = 0.80
    trials, n = 3000, 500
    cells = rng.multinomial(
        n, [p_both, p_only_a, p_only_b, 1 - p_both - p_only_a - p_only_b], size=trials
    )
    claimed = sum(
        non_inferiority_test(PairedTable(*map(int, c)), margin=0.02).non_inferior for c in cells
    )
    assert 0.03 <= claimed / trials <= 0.07


def test_non_inferiority_hand_example_and_bad_input() -> None:
    t = PairedTable(both=180, only_a=6, only_b=9, neither=5)
    r = non_inferiority_test(t, margin=0.06)
    assert r.difference == pytest.approx(-0.015)
    assert r.statistic == pytest.approx(_tango_statistic(t, -0.06))
    assert r.p_value == pytest.approx(stats.norm.sf(r.statistic))  # type: ignore[arg-type]
    assert r.non_inferior
    # False positive rates: lower is better, H0 is "a exceeds b by at least the margin".
    fp = non_inferiority_test(t, margin=0.06, higher_is_better=False)
    assert fp.p_value == pytest.approx(stats.norm.cdf(_tango_statistic(t, 0.06)))
    assert fp.to_dict()["method"] == "tango-score"
    with pytest.raises(StatisticsError):
        non_inferiority_test(t, margin=-0.1)
    with pytest.raises(StatisticsError):
        non_inferiority_test(t, margin=0.1, alpha=0.7)


def test_empty_and_agreeing_tables() -> None:
    empty = PairedTable(0, 0, 0, 0)
    assert mcnemar_test(empty).p_value == 1.0
    d = paired_difference(empty)
    assert d.estimate is None
    assert (d.ci_low, d.ci_high) == (-1.0, 1.0)
    assert tango_interval(empty) == (-1.0, 1.0)
    agree = PairedTable(40, 0, 0, 60)
    assert mcnemar_test(agree).p_value == 1.0
    d = paired_difference(agree)
    assert d.estimate == 0.0
    assert d.ci_low < 0.0 < d.ci_high
    with pytest.raises(StatisticsError):
        PairedTable(-1, 0, 0, 0)


@given(tables)
@settings(max_examples=150, deadline=None)
def test_paired_difference_properties(t: PairedTable) -> None:
    d = paired_difference(t)
    if t.n == 0:
        return
    assert -1.0 <= d.ci_low <= d.estimate <= d.ci_high <= 1.0  # type: ignore[operator]
    mirrored = paired_difference(PairedTable(t.both, t.only_b, t.only_a, t.neither))
    assert mirrored.estimate == pytest.approx(-d.estimate)  # type: ignore[operator]
    assert mirrored.ci_low == pytest.approx(-d.ci_high, abs=1e-12)
    assert mirrored.ci_high == pytest.approx(-d.ci_low, abs=1e-12)


def test_holm_and_bonferroni_match_statsmodels(monkeypatch: pytest.MonkeyPatch) -> None:
    # multipletests calls gc.collect() on every call, slow in a big test session.
    monkeypatch.setattr("gc.collect", lambda *args: 0)
    rng = np.random.default_rng(21)
    families = [[0.0], [1.0], [0.05, 0.05, 0.05], [0.01, 0.04, 0.03, 0.5, 1.0, 0.0]]
    for size in rng.integers(1, 30, size=40):
        ps = rng.random(size) ** 3  # many small p-values
        ps[rng.random(size) < 0.2] = ps[0]  # and ties
        families.append(ps.tolist())
    for ps in families:
        for method in ("holm", "bonferroni"):
            ref = multipletests(ps, alpha=0.05, method=method)[1]
            np.testing.assert_allclose(adjust_p_values(ps, method=method), ref, atol=1e-12)  # type: ignore[arg-type]
        assert adjust_p_values(ps, method="none") == tuple(ps)


def test_adjust_p_values_refuses_bad_input() -> None:
    with pytest.raises(StatisticsError):
        adjust_p_values([0.1, 1.5])
    with pytest.raises(StatisticsError):
        adjust_p_values([0.1], method="fdr")  # type: ignore[arg-type]
    assert adjust_p_values([]) == ()
