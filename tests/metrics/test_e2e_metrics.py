"""End-to-end metrics: Rogan-Gladen against a hand-computed case and a simulation,
the summary's outcome counting, McNemar between defenses, profile drift."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    compare_end_to_end,
    corrected_success_rate,
    end_to_end_summary,
    profile_drift,
    rate,
    rogan_gladen,
)
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, Run, RunConfig, Sample, Verdict


def test_rogan_gladen_hand_computed() -> None:
    # observed 30/100 judged successes; judge sensitivity 90/100, specificity 95/100
    # pi = (0.30 + 0.95 - 1) / (0.90 + 0.95 - 1) = 0.25 / 0.85
    assert rogan_gladen(0.30, 0.90, 0.95) == pytest.approx(0.25 / 0.85)
    c = corrected_success_rate(30, 100, 100, rate(90, 100), rate(95, 100))
    pi = 0.25 / 0.85
    var = (0.3 * 0.7 / 100 + pi**2 * 0.9 * 0.1 / 100 + (1 - pi) ** 2 * 0.95 * 0.05 / 100) / 0.85**2
    half = 1.959964 * math.sqrt(var)
    assert c.value == pytest.approx(0.294118, abs=1e-6)
    assert (c.ci_low, c.ci_high) == (
        pytest.approx(pi - half, abs=1e-6),
        pytest.approx(pi + half, abs=1e-6),
    )
    assert (round(c.ci_low, 4), round(c.ci_high, 4)) == (0.1808, 0.4074)
    assert c.raw.value == 0.30
    # attacks stopped before the judge certainly failed: 30/60 judged of 120 attacks
    half_judged = corrected_success_rate(30, 60, 120, rate(90, 100), rate(95, 100))
    assert half_judged.value == pytest.approx((0.5 + 0.95 - 1) / 0.85 * 0.5)


def test_rogan_gladen_edges() -> None:
    assert rogan_gladen(0.01, 0.9, 0.95) == 0.0  # below the false-positive floor: clipped
    assert rogan_gladen(0.99, 0.9, 0.95) == 1.0
    with pytest.raises(StatisticsError, match="no better than chance"):
        rogan_gladen(0.3, 0.5, 0.5)
    perfect = corrected_success_rate(10, 40, 40, rate(20, 20), rate(20, 20))
    assert perfect.value == pytest.approx(0.25)
    assert perfect.ci_high - perfect.ci_low > 0.2  # a perfect judge on 20+20 still has doubt


def test_interval_matches_a_simulation_of_run_and_judge_error() -> None:
    rng = np.random.default_rng(14)
    true_pi, se, sp, n, n_se, n_sp = 0.30, 0.90, 0.95, 200, 150, 150
    p_obs = true_pi * se + (1 - true_pi) * (1 - sp)
    estimates, covered = [], 0
    reps = 3000
    for _ in range(reps):
        k = int(rng.binomial(n, p_obs))
        k_se, k_sp = int(rng.binomial(n_se, se)), int(rng.binomial(n_sp, sp))
        c = corrected_success_rate(k, n, n, rate(k_se, n_se), rate(k_sp, n_sp))
        estimates.append(c.value)
        covered += c.ci_low <= true_pi <= c.ci_high
    one = corrected_success_rate(
        round(p_obs * n), n, n, rate(round(se * n_se), n_se), rate(round(sp * n_sp), n_sp)
    )
    delta_se = (one.ci_high - one.ci_low) / (2 * 1.959964)
    assert float(np.std(estimates)) == pytest.approx(delta_se, rel=0.1)
    assert 0.92 <= covered / reps <= 0.975
    # ignoring the judge's own uncertainty would be too narrow
    assert delta_se > math.sqrt(p_obs * (1 - p_obs) / n) / (se + sp - 1) * 1.02


def _run(run_id: str, defense: str, outcomes: list[tuple[Sample, str, dict[str, Any]]]) -> Run:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    samples = tuple(s for s, _, _ in outcomes)
    outs = tuple(
        Outcome(
            s.id,
            Verdict(kind.startswith(("stopped_by_def", "over_refused_by_def"))),
            "ok",
            end_to_end={"outcome": kind, **extra},
        )
        for s, kind, extra in outcomes
    )
    return Run(
        run_id,
        DefenseInfo(defense, defense),
        DatasetInfo("d", "sha256:1", len(samples)),
        RunConfig(),
        samples,
        outs,
        now,
        now,
        end_to_end={"target": {"spec": "t"}, "judges": ["refusal", "leak"], "rule": "any"},
    )


def _judged(success: bool, leak: bool) -> dict[str, Any]:
    return {
        "success": success or leak,
        "answer": "x",
        "judgements": {"refusal": {"success": success}, "leak": {"success": leak}},
    }


def test_summary_counts_outcomes_per_policy_and_agreement() -> None:
    a = [Sample(f"a{i}", "x", "attack", category="c1" if i < 4 else "c2") for i in range(6)]
    b = [Sample(f"b{i}", "x", "benign") for i in range(4)]
    run = _run(
        "r",
        "pattern",
        [
            (a[0], "stopped_by_defense", {}),
            (a[1], "refused_by_model", _judged(False, False)),
            (a[2], "attack_succeeded", _judged(True, True)),
            (a[3], "attack_succeeded", _judged(False, True)),
            (a[4], "stopped_by_output_defense", _judged(True, False)),
            (a[5], "error", {}),
            (b[0], "benign_answered", {}),
            (b[1], "over_refused_by_defense", {}),
            (b[2], "over_refused_by_model", {}),
            (b[3], "error", {}),
        ],
    )
    s = end_to_end_summary(run)  # fail_closed: errors count as not succeeded / not served
    assert (s.asr.k, s.asr.n) == (2, 6)
    assert (s.utility.k, s.utility.n) == (1, 4)
    assert (s.stopped_by_defense.k, s.stopped_by_output_defense.k, s.stopped_by_model.k) == (
        1,
        1,
        1,
    )
    assert (s.model_asr.k, s.model_asr.n) == (2, 3)
    funnel = {row.category: row for row in s.funnel}
    assert (funnel["c1"].sent, funnel["c1"].passed_defense, funnel["c1"].succeeded) == (4, 3, 2)
    (agreement,) = s.agreement
    assert (agreement.n, agreement.agreement) == (4, 0.5)
    assert s.examples[0]["sample_id"] == "a2"
    import dataclasses

    excluded = dataclasses.replace(run, config=RunConfig(error_policy="exclude"))
    assert end_to_end_summary(excluded).asr.n == 5
    opened = dataclasses.replace(run, config=RunConfig(error_policy="fail_open"))
    assert end_to_end_summary(opened).asr.k == 3
    corrected = end_to_end_summary(run, sensitivity=rate(9, 10), specificity=rate(19, 20))
    assert corrected.corrected is not None
    assert corrected.corrected.judged == 4


def test_mcnemar_between_defenses_on_end_to_end_success() -> None:
    attacks = [Sample(f"a{i}", "x", "attack") for i in range(12)]
    none = _run("r1", "none", [(s, "attack_succeeded", _judged(True, False)) for s in attacks])
    pattern = _run(
        "r2",
        "pattern",
        [
            (s, "stopped_by_defense" if i < 10 else "attack_succeeded", {})
            for i, s in enumerate(attacks)
        ],
    )
    (pair,) = compare_end_to_end([none, pattern])
    assert (pair.table.only_a, pair.table.only_b, pair.table.both) == (10, 0, 2)
    assert pair.test.p_value == pytest.approx(2 * 0.5**10)


def test_profile_drift_flags_what_changed_only() -> None:
    a = {
        "n": 300,
        "refused": 6,
        "leak": 0,
        "secret": 0,
        "pii": 1,
        "lengths": [200 + (i % 50) for i in range(300)],
        "languages": {"en": 280, "de": 20},
    }
    same = profile_drift(a, dict(a))
    assert not same.drifted
    refusing = profile_drift(a, dict(a, refused=45))
    assert [f.name for f in refusing.figures if f.drifted] == ["refused"]
    figure = next(f for f in refusing.figures if f.name == "refused")
    assert figure.difference == pytest.approx(0.13)
    assert figure.ci_low is not None
    assert 0 < figure.ci_low < 0.13 < (figure.ci_high or 0)
    terse = profile_drift(a, dict(a, lengths=[60 + (i % 20) for i in range(300)]))
    assert [f.name for f in terse.figures if f.drifted] == ["answer_length"]
    german = profile_drift(a, dict(a, languages={"en": 150, "de": 150}))
    assert [f.name for f in german.figures if f.drifted] == ["language_mix"]
    with pytest.raises(StatisticsError, match="not a behavioural profile"):
        profile_drift(a, {"n": 3})


def test_length_interval_is_welchs_as_scipy_computes_it() -> None:
    from scipy import stats

    a_len = [120 + (i * 37) % 90 for i in range(80)]
    b_len = [100 + (i * 53) % 140 for i in range(60)]
    a = {
        "n": 80,
        "refused": 0,
        "leak": 0,
        "secret": 0,
        "pii": 0,
        "lengths": a_len,
        "languages": {"en": 80},
    }
    b = {
        "n": 60,
        "refused": 0,
        "leak": 0,
        "secret": 0,
        "pii": 0,
        "lengths": b_len,
        "languages": {"en": 60},
    }
    figure = next(f for f in profile_drift(a, b).figures if f.name == "answer_length")
    ci = stats.ttest_ind(b_len, a_len, equal_var=False).confidence_interval(0.95)
    assert (figure.ci_low, figure.ci_high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    mw = stats.mannwhitneyu(b_len, a_len, alternative="two-sided").pvalue
    assert figure.p_value == pytest.approx(mw)
