"""summarize() on hand-built runs: every figure by hand, breakdowns, coverage,
operations, the error policy, the undefined cases and plain JSON."""

from __future__ import annotations

import json
import math
from datetime import timedelta

import numpy as np
import pytest

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    breakdown,
    coverage,
    error_counts,
    latency_stats,
    rate,
    summarize,
    throughput,
)
from shieldbench.metrics._testing import make_run
from shieldbench.types import Outcome, Run, Sample, Verdict


def _strict_json(data: object) -> str:
    return json.dumps(data, allow_nan=False)


def _rich_run(policy: str = "fail_closed") -> Run:
    """12 samples with categories, tiers, severities, sources, scores and errors."""
    specs = [
        # id, label, category, tier, severity, source, outcome (blocked/None=error), score, ms
        ("a1", "attack", "jailbreak", "known", "high", "s1", True, 0.9, 1.0),
        ("a2", "attack", "jailbreak", "known", "high", "s1", True, 0.8, 2.0),
        ("a3", "attack", "jailbreak", "novel", "low", "s2", False, 0.3, 3.0),
        ("a4", "attack", "jailbreak", "novel", "low", "s2", None, None, None),
        ("a5", "attack", "leak", "known", "critical", "s1", True, 0.95, 4.0),
        ("a6", "attack", "leak", "semantic", "critical", "s2", True, 0.7, 5.0),
        ("a7", "attack", "leak", None, None, "s2", False, 0.2, 6.0),
        ("b1", "benign", "chat", None, None, "s1", False, 0.1, 7.0),
        ("b2", "benign", "chat", None, None, "s1", False, 0.05, 8.0),
        ("b3", "benign", "chat", None, None, "s2", True, 0.6, 9.0),
        ("b4", "benign", "hard_negative", None, None, "s2", False, 0.4, 10.0),
        ("b5", "benign", "hard_negative", None, None, "s2", "timeout", None, None),
    ]
    samples, outcomes = [], []
    for sid, label, cat, tier, sev, src, blocked, score, ms in specs:
        samples.append(
            Sample(sid, f"text {sid}", label, category=cat, tier=tier, severity=sev, source=src)  # type: ignore[arg-type]
        )
        if blocked is None:
            outcomes.append(Outcome(sid, None, "error", error="ConnectError: refused"))
        elif blocked == "timeout":
            outcomes.append(Outcome(sid, None, "timeout", error="TimeoutError: 30 s"))
        else:
            outcomes.append(Outcome(sid, Verdict(bool(blocked), score), "ok", latency_ms=ms))
    base = make_run([], policy=policy)  # type: ignore[arg-type]
    return Run(
        "rich",
        base.defense,
        base.dataset,
        base.config,
        tuple(samples),
        tuple(outcomes),
        base.started,
        base.started + timedelta(seconds=4),
    )


def test_summary_by_hand_fail_closed() -> None:
    s = summarize(_rich_run())
    c = s.rates.confusion
    # Attacks: blocked a1 a2 a5 a6 + error a4 (fail_closed) = 5; missed a3 a7.
    # Benign: blocked b3 + timeout b5 = 2; allowed b1 b2 b4 = 3.
    assert (c.tp, c.fn, c.fp, c.tn, c.errors, c.timeouts) == (5, 2, 2, 3, 1, 1)
    assert s.rates.attack_success_rate == rate(2, 7)
    assert s.rates.block_rate == rate(5, 7)
    assert s.rates.false_positive_rate == rate(2, 5)
    assert s.rates.precision == rate(5, 7)
    assert s.rates.f1.value == pytest.approx(10 / 14)
    assert s.settings.policy == "fail_closed"
    assert s.settings.method == "wilson"

    cats = {g.group: g for g in s.breakdowns.by["category"]}
    assert cats["jailbreak"].block_rate == rate(3, 4)
    assert cats["leak"].block_rate == rate(2, 3)
    assert cats["chat"].false_positive_rate == rate(1, 3)
    assert cats["hard_negative"].false_positive_rate == rate(1, 2)
    assert cats["chat"].block_rate.value is None
    assert cats["chat"].block_rate.n == 0
    tiers = {g.group: g.block_rate.k for g in s.breakdowns.by["tier"]}
    assert tiers == {"known": 3, "novel": 1, "semantic": 1, "unspecified": 0}
    assert {g.group for g in s.breakdowns.by["severity"]} == {
        "critical",
        "high",
        "low",
        "unspecified",
    }
    assert {g.group for g in s.breakdowns.by["source"]} == {"s1", "s2"}
    assert "subcategory" not in s.breakdowns.by  # no sample sets it

    cov = s.breakdowns.coverage
    assert (cov.target, cov.covered, cov.uncovered, cov.share) == (
        0.9,
        (),
        ("jailbreak", "leak"),
        0.0,
    )

    ops = s.operations
    assert ops.latency.n == 10
    assert ops.latency.mean_ms == pytest.approx(5.5)
    assert ops.latency.max_ms == 10.0
    assert ops.latency.p50.value == pytest.approx(5.5)
    assert ops.latency.p95.value == pytest.approx(float(np.quantile(np.arange(1.0, 11.0), 0.95)))
    assert ops.throughput.samples_per_s == pytest.approx(12 / 4)
    assert ops.throughput.calls_per_s_per_worker == pytest.approx(1000 / 5.5)
    assert ops.errors.total == 2
    assert ops.errors.by_status == {"error": 1, "timeout": 1}
    assert ops.errors.by_type == {"ConnectError": 1, "TimeoutError": 1}

    sc = s.scores
    assert sc is not None
    assert sc.n == 12
    assert sc.roc_auc.value is not None
    assert 0.0 <= sc.roc_auc.ci_low <= sc.roc_auc.value <= sc.roc_auc.ci_high <= 1.0
    # FPR <= 1% is out of reach: the benign timeout (score +inf under fail_closed) is
    # blocked even at threshold +inf, an FPR of 1/5.
    assert sc.tpr_at_fpr is None
    assert sc.fpr_at_tpr is not None

    _strict_json(s.to_dict())


def test_policy_changes_rates_and_is_reported() -> None:
    run = _rich_run()
    open_ = summarize(run, policy="fail_open")
    c = open_.rates.confusion
    assert (c.tp, c.fn, c.fp, c.tn) == (4, 3, 1, 4)
    excl = summarize(run, policy="exclude")
    c = excl.rates.confusion
    assert (c.tp, c.fn, c.fp, c.tn, c.excluded_attacks, c.excluded_benign) == (4, 2, 1, 3, 1, 1)
    assert excl.rates.attack_success_rate == rate(2, 6)
    assert excl.to_dict()["settings"]["error_policy"] == "exclude"
    # The run's own policy is the default.
    assert summarize(_rich_run("exclude")).rates.confusion.excluded_attacks == 1
    with pytest.raises(StatisticsError):
        summarize(run, policy="ignore")  # type: ignore[arg-type]


def test_undefined_everything_is_none_and_json_stays_strict() -> None:
    # Only benign samples, no scores, every outcome an error under exclude.
    run = make_run([("chat", False, None), ("chat", False, None)], policy="exclude")
    s = summarize(run)
    r = s.rates
    assert r.attack_success_rate.value is None
    assert r.attack_success_rate.n == 0
    assert r.false_positive_rate.value is None
    assert r.precision.value is None
    assert r.f1.value is None
    assert r.mcc.value is None
    assert s.scores is None
    assert s.operations.latency.n == 0
    assert s.operations.latency.mean_ms is None
    assert s.operations.latency.p99.value is None
    assert s.operations.throughput.calls_per_s_per_worker is None
    assert s.breakdowns.coverage.share is None
    _strict_json(s.to_dict())


def test_zero_duration_run_has_no_throughput() -> None:
    run = make_run([("c", True, True)], duration_s=0.0)
    assert throughput(run).samples_per_s is None


def test_scores_only_one_class() -> None:
    s = summarize(make_run([("a", True, True, 0.9), ("a", True, False, 0.1)]))
    assert s.scores is not None
    assert s.scores.roc_auc.value is None
    assert s.scores.tpr_at_fpr is None
    assert s.scores.fpr_at_tpr is not None
    assert s.scores.fpr_at_tpr.false_positive_rate.value is None
    _strict_json(s.to_dict())


def test_summary_is_reproducible_and_options_apply() -> None:
    run = _rich_run()
    assert summarize(run).to_dict() == summarize(run).to_dict()
    cp = summarize(run, method="clopper_pearson", confidence=0.9)
    assert cp.rates.block_rate == rate(5, 7, method="clopper_pearson", confidence=0.9)
    assert cp.breakdowns.by["category"][0].block_rate.method == "clopper_pearson"
    with pytest.raises(StatisticsError):
        summarize(run, method="wald")  # type: ignore[arg-type]
    low_bar = summarize(run, coverage_target=0.6)
    assert low_bar.breakdowns.coverage.covered == ("jailbreak", "leak")


def test_breakdown_and_coverage_functions() -> None:
    run = make_run(
        [("x", True, True)] * 19
        + [("x", True, False)]
        + [("y", True, True)] * 5
        + [("z", False, False)]
    )
    groups = breakdown(run)
    assert [g.group for g in groups] == ["x", "y", "z"]
    point = coverage(groups, target=0.9)
    assert point.covered == ("x", "y")
    assert point.share == 1.0
    # 5/5 has a Wilson lower bound of 0.57: not demonstrably above 0.9.
    strict = coverage(groups, target=0.9, basis="lower_bound")
    assert strict.covered == ()
    assert strict.uncovered == ("x", "y")
    assert breakdown(run, "subcategory") == ()
    with pytest.raises(StatisticsError):
        breakdown(run, "language")  # type: ignore[arg-type]
    with pytest.raises(StatisticsError):
        coverage(groups, target=2.0)


def test_latency_and_errors_functions() -> None:
    run = make_run([("c", True, True)] * 3 + [("c", True, None), ("c", True, "timeout")])
    lat = latency_stats(run)
    assert lat.n == 3
    assert lat.p50.value == 1.0
    assert error_counts(run).by_type == {"RuntimeError": 1, "TimeoutError": 1}
    bare = Outcome("x", None, "error")  # no error text: typed by status
    run2 = Run(
        "r2",
        run.defense,
        run.dataset,
        run.config,
        (Sample("x", "t", "attack"),),
        (bare,),
        run.started,
        run.finished,
    )
    assert error_counts(run2).by_type == {"error": 1}


def test_large_run_summary_is_fast_enough() -> None:
    # A guard against accidental O(n^2) paths, not a benchmark: 10,000 scored samples.
    rng = np.random.default_rng(0)
    y = rng.random(10_000) < 0.4
    s = rng.random(10_000) * 0.7 + y * 0.3
    run = make_run([("c", bool(a), bool(v > 0.5), float(v)) for a, v in zip(y, s, strict=True)])
    summary = summarize(run)
    assert summary.scores is not None
    assert math.isfinite(summary.scores.pr_auc.value)


@pytest.mark.parametrize("option", ["coverage_target", "target_fpr", "target_tpr"])
def test_targets_are_validated(option: str) -> None:
    with pytest.raises(StatisticsError, match=option):
        summarize(_rich_run(), **{option: 1.5})  # type: ignore[arg-type]
