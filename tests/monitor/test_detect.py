"""Drift detection: paired on the same samples, two-sample otherwise, minimum effects."""

from __future__ import annotations

from dataclasses import replace

import pytest
from scipy import stats

from shieldbench.datasets import load_dataset, sample_dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense
from shieldbench.metrics import mcnemar_test, paired_tables
from shieldbench.monitor import Finding, MinEffect, compare_runs_for_drift
from shieldbench.types import Outcome, Run, Verdict


@pytest.fixture(scope="module")
def base() -> Run:
    return run_defense(build_defense("pattern"), load_dataset("builtin:core"), run_id="b")


def _weaken(run: Run, every: int) -> Run:
    k = 0
    outcomes = []
    for s, o in run.pairs():
        if s.is_attack and o.verdict is not None and o.verdict.blocked:
            k += 1
            if k % every == 0:
                o = replace(o, verdict=Verdict(False, 0.0))
        outcomes.append(o)
    return replace(run, id=f"w{every}", outcomes=tuple(outcomes))


def _by_metric(findings: list[Finding]) -> dict[str, Finding]:
    return {f.metric: f for f in findings}


def test_same_samples_are_tested_paired(base: Run) -> None:
    worse = _weaken(base, 2)
    found = _by_metric(
        compare_runs_for_drift(
            worse, [base], comparison="last run", alpha=0.05, min_effect=MinEffect()
        )
    )
    block = found["block_rate"]
    expected = mcnemar_test(paired_tables(worse, base)[0]).p_value
    assert block.p_value == pytest.approx(expected)
    assert block.test.startswith("McNemar")
    assert block.alert
    assert not found["false_positive_rate"].alert


def test_a_small_significant_drop_is_not_an_alert(base: Run) -> None:
    slightly = _weaken(base, 8)  # about 2.5 points: significant on 768 pairs, below 5
    (block,) = [
        f
        for f in compare_runs_for_drift(
            slightly, [base], comparison="last run", alpha=0.05, min_effect=MinEffect()
        )
        if f.metric == "block_rate"
    ]
    assert block.significant
    assert not block.large
    assert not block.alert


def test_different_samples_or_a_window_are_tested_two_sample(base: Run) -> None:
    data = load_dataset("builtin:core")
    other = run_defense(build_defense("pattern"), sample_dataset(data, 600, seed=3), run_id="o")
    errors = replace(
        other,
        outcomes=tuple(
            Outcome(o.sample_id, None, "error", error="boom") if i % 5 == 0 else o
            for i, o in enumerate(other.outcomes)
        ),
    )
    found = _by_metric(
        compare_runs_for_drift(
            errors, [base, base], comparison="last 2 runs", alpha=0.05, min_effect=MinEffect()
        )
    )
    err = found["error_rate"]
    n = len(errors.outcomes)
    k = sum(o.status != "ok" for o in errors.outcomes)
    expected = stats.fisher_exact([[k, n - k], [0, 2 * len(base.outcomes)]]).pvalue
    assert err.test == "Fisher exact"
    assert err.p_value == pytest.approx(expected)
    assert err.alert
    assert found["block_rate"].reference_runs == ("b", "b")


def test_latency_rise_needs_the_ratio_and_the_test(base: Run) -> None:
    slow = replace(
        base,
        outcomes=tuple(
            o if o.latency_ms is None else replace(o, latency_ms=o.latency_ms * 2)
            for o in base.outcomes
        ),
    )
    found = _by_metric(
        compare_runs_for_drift(
            slow, [base], comparison="last run", alpha=0.05, min_effect=MinEffect(latency_ratio=1.5)
        )
    )
    assert found["p95_latency"].effect == pytest.approx(2.0)
    assert found["p95_latency"].alert
    relaxed = _by_metric(
        compare_runs_for_drift(
            slow, [base], comparison="last run", alpha=0.05, min_effect=MinEffect(latency_ratio=3.0)
        )
    )
    assert not relaxed["p95_latency"].alert
