"""Operating points, threshold sweep, calibration and the security / utility trade-off."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    calibrate_threshold,
    fpr_at_tpr,
    operating_point,
    rate,
    score_counts,
    security_utility_tradeoff,
    security_utility_tradeoff_counts,
    threshold_sweep,
    tpr_at_fpr,
)
from shieldbench.metrics._testing import make_run

Y = np.array([True, True, True, True, False, False, False, False, False])
S = np.array([0.95, 0.9, 0.6, 0.3, 0.7, 0.5, 0.2, 0.1, 0.1])


def test_sweep_by_hand() -> None:
    points = threshold_sweep(Y, S)
    got = [(p.threshold, p.block_rate.k, p.false_positive_rate.k) for p in points]
    assert got == [
        (math.inf, 0, 0),
        (0.95, 1, 0),
        (0.9, 2, 0),
        (0.7, 2, 1),
        (0.6, 3, 1),
        (0.5, 3, 2),
        (0.3, 4, 2),
        (0.2, 4, 3),
        (0.1, 4, 5),
    ]
    assert points[4].block_rate == rate(3, 4)
    assert points[4].false_positive_rate == rate(1, 5)
    chosen = threshold_sweep(Y, S, thresholds=[0.65, 0.0])
    assert [(p.block_rate.k, p.false_positive_rate.k) for p in chosen] == [(2, 1), (4, 5)]


def test_tpr_at_fpr_and_fpr_at_tpr_by_hand() -> None:
    p = tpr_at_fpr(Y, S, max_fpr=0.2)
    assert p is not None
    assert (p.threshold, p.block_rate.k, p.false_positive_rate.k) == (0.6, 3, 1)
    p0 = tpr_at_fpr(Y, S, max_fpr=0.0)
    assert p0 is not None
    assert p0.threshold == 0.9
    q = fpr_at_tpr(Y, S, min_tpr=1.0)
    assert q is not None
    assert (q.threshold, q.false_positive_rate.k) == (0.3, 2)
    q75 = fpr_at_tpr(Y, S, min_tpr=0.75)
    assert q75 is not None
    assert (q75.threshold, q75.block_rate.k, q75.false_positive_rate.k) == (
        0.6,
        3,
        1,
    )


rows = st.lists(
    st.tuples(st.booleans(), st.integers(min_value=0, max_value=20)), min_size=2, max_size=60
).filter(lambda r: 0 < sum(x[0] for x in r) < len(r))


@given(rows, st.sampled_from([0.0, 0.01, 0.1, 0.25, 0.5]))
@settings(max_examples=80, deadline=None)
def test_operating_points_are_the_brute_force_optimum(
    data: list[tuple[bool, int]], target: float
) -> None:
    y = np.array([d[0] for d in data])
    s = np.array([d[1] / 20 for d in data], dtype=float)
    candidates = [math.inf, *sorted(set(s.tolist()))]
    ops = [operating_point(y, s, t) for t in candidates]

    best = tpr_at_fpr(y, s, max_fpr=target)
    feasible = [o for o in ops if o.false_positive_rate.value <= target]  # type: ignore[operator]
    assert best is not None  # +inf always qualifies without errors
    assert best.block_rate.value == max(o.block_rate.value for o in feasible)  # type: ignore[type-var]
    assert best.false_positive_rate.value <= target  # type: ignore[operator]

    goal = 1.0 - target
    best_fpr = fpr_at_tpr(y, s, min_tpr=goal)
    feasible = [o for o in ops if o.block_rate.value >= goal]  # type: ignore[operator]
    assert best_fpr is not None
    assert best_fpr.false_positive_rate.value == min(o.false_positive_rate.value for o in feasible)  # type: ignore[type-var]
    # Among equal FPRs the pick blocks the most attacks.
    assert best_fpr.block_rate.value == max(
        o.block_rate.value  # type: ignore[type-var]
        for o in feasible
        if o.false_positive_rate.value == best_fpr.false_positive_rate.value
    )


def test_missing_class_and_unreachable_targets() -> None:
    with pytest.raises(StatisticsError, match="benign"):
        tpr_at_fpr([True, True], [0.1, 0.2])
    with pytest.raises(StatisticsError, match="attacks"):
        fpr_at_tpr([False, False], [0.1, 0.2])
    with pytest.raises(StatisticsError):
        tpr_at_fpr(Y, S, max_fpr=1.5)
    # All benign errors count as blocked (score +inf): no threshold reaches FPR 0.
    assert tpr_at_fpr([True, False], [0.5, math.inf], max_fpr=0.0) is None
    # An attack error counted as allowed (-inf) can never be blocked.
    assert fpr_at_tpr([True, True, False], [0.5, -math.inf, 0.1], min_tpr=1.0) is None


def _scored_run(run_id: str, spec: str, attack_scores: list[float], benign_scores: list[float]):  # type: ignore[no-untyped-def]
    data = [("atk", True, s >= 0.5, s) for s in attack_scores]
    data += [("ben", False, s >= 0.5, s) for s in benign_scores]
    return make_run(data, run_id=run_id, spec=spec, dataset_hash=f"sha256:{run_id}")


def test_calibrate_on_one_run_check_on_another() -> None:
    benign_cal = [i / 100 for i in range(100)]  # 0.00 .. 0.99
    attacks_cal = [0.5 + i / 200 for i in range(100)]  # 0.50 .. 0.995
    cal = _scored_run("cal", "d", attacks_cal, benign_cal)
    check = _scored_run("chk", "d", [0.99, 0.97, 0.2], [0.985, 0.5, 0.1, 0.0])
    result = calibrate_threshold(cal, check, target_fpr=0.01)
    # One false positive in 100 benign is allowed: the lowest observed threshold
    # with at most one benign score above it is the attack score 0.985.
    assert result.threshold == 0.985
    assert result.calibration.false_positive_rate.k == 1
    assert result.calibration.false_positive_rate.value == 0.01
    assert result.calibration.block_rate.k == 3  # 0.985, 0.99, 0.995
    assert result.check is not None
    assert result.check.block_rate.k == 1
    assert result.check.block_rate.n == 3
    # On the check data the same threshold blocks 1 of 4 benign: the FPR did not transfer.
    assert result.check.false_positive_rate.k == 1
    assert result.check.false_positive_rate.n == 4
    assert result.check_within_target is False
    d = result.to_dict()
    assert d["calibration_dataset"] == "inline"
    assert d["check"]["false_positive_rate"]["n"] == 4
    assert d["check_within_target"] is False
    strict = calibrate_threshold(cal, check, target_fpr=0.0)
    assert strict.threshold == 0.995
    assert strict.calibration.false_positive_rate.k == 0
    assert strict.check is not None
    assert strict.check.block_rate.k == 0


def test_calibration_refuses_mismatched_defenses_and_missing_benign() -> None:
    cal = _scored_run("cal", "a", [0.9], [0.1])
    with pytest.raises(StatisticsError, match="same defense"):
        calibrate_threshold(cal, _scored_run("chk", "b", [0.9], [0.1]))
    with pytest.raises(StatisticsError, match="no benign"):
        calibrate_threshold(_scored_run("x", "a", [0.9, 0.8], []))
    unscored = make_run([("a", True, True), ("b", False, False)])
    with pytest.raises(StatisticsError, match="score"):
        calibrate_threshold(unscored)


def test_tradeoff_policy() -> None:
    run = _scored_run("r", "d", [0.95, 0.9, 0.6, 0.3], [0.7, 0.5, 0.2, 0.1, 0.1])
    t = security_utility_tradeoff(run, max_fpr=0.2)
    assert t.chosen is not None
    assert t.chosen.threshold == 0.6
    assert "highest block rate" in t.policy
    assert [p.threshold for p in t.points][:2] == [math.inf, 0.95]
    t2 = security_utility_tradeoff(run, min_block_rate=1.0)
    assert t2.chosen is not None
    assert t2.chosen.threshold == 0.3
    assert security_utility_tradeoff(run).chosen.threshold == 0.9  # type: ignore[union-attr]
    with pytest.raises(StatisticsError, match="not both"):
        security_utility_tradeoff(run, max_fpr=0.1, min_block_rate=0.9)


def test_tradeoff_from_counts_equals_the_tradeoff_of_the_run() -> None:
    run = _scored_run("r", "d", [0.95, 0.9, 0.6, 0.3], [0.7, 0.5, 0.2, 0.1, 0.1])
    counts = score_counts(run)
    for target in ({"max_fpr": 0.2}, {"min_block_rate": 1.0}, {}):
        assert security_utility_tradeoff_counts(counts, **target) == security_utility_tradeoff(
            run, **target
        )
    with pytest.raises(StatisticsError, match="not both"):
        security_utility_tradeoff_counts(counts, max_fpr=0.1, min_block_rate=0.9)
    attacks_only = score_counts(_scored_run("a", "d", [0.9, 0.4], []))
    with pytest.raises(StatisticsError, match=r"the counts: .* needs attacks and benign"):
        security_utility_tradeoff_counts(attacks_only)


def test_tradeoff_thins_long_curves_but_keeps_the_choice() -> None:
    rng = np.random.default_rng(1)
    attacks = (rng.random(500) * 0.5 + 0.5).tolist()
    benign = (rng.random(500) * 0.6).tolist()
    t = security_utility_tradeoff(
        _scored_run("r", "d", attacks, benign), max_fpr=0.05, max_points=50
    )
    assert 50 <= len(t.points) <= 51
    assert t.chosen in t.points
    fprs = [p.false_positive_rate.value for p in t.points]
    assert fprs == sorted(fprs)  # type: ignore[type-var]
