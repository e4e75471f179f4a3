"""Recommendations: each rule fires on the numbers it is about, and only then."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.attacks import AttackResult
from shieldbench.metrics import rate, required_sample_size
from shieldbench.metrics._testing import make_run
from shieldbench.reports import Recommendation, build_report, render_json
from shieldbench.types import Run


def _recs(report_runs: list[Run], **kwargs: object) -> list[Recommendation]:
    return list(build_report(report_runs, **kwargs).recommendations)  # type: ignore[arg-type]


def _by_rule(recs: list[Recommendation], rule: str) -> list[Recommendation]:
    return [r for r in recs if r.rule == rule]


def _good_rows(n_attacks: int = 200, n_benign: int = 2000) -> list[tuple[object, ...]]:
    """A strong defense: every attack blocked, no benign blocked, scores separate."""
    return [("inj", True, True, 0.95)] * n_attacks + [("chat", False, False, 0.05)] * n_benign


def test_a_strong_well_measured_defense_gets_only_information() -> None:
    recs = _recs([make_run(_good_rows(), latency_ms=1.0)])
    assert all(r.priority == "info" for r in recs), recs
    (fp,) = _by_rule(recs, "false_positive_cost")
    # 0 of 2000 blocked: say how high the FPR could still be, per 10,000 requests.
    upper = rate(0, 2000).ci_high
    assert fp.evidence["ci_high"] == upper
    assert f"up to {10_000 * upper:,.0f} of every 10,000" in fp.message
    assert not _by_rule(recs, "coverage_gap")
    assert not _by_rule(recs, "error_rate")


def test_coverage_gap_lists_categories_below_the_target() -> None:
    rows = [("inj", True, True, 0.9)] * 100
    rows += [("jb", True, i < 30, 0.9 if i < 30 else 0.1) for i in range(100)]  # 30% blocked
    rows += [("leak", True, i < 80, 0.9 if i < 80 else 0.1) for i in range(100)]  # 80%
    rows += [("chat", False, False, 0.1)] * 500
    recs = _recs([make_run(rows)])
    (gap,) = _by_rule(recs, "coverage_gap")
    assert gap.priority == "critical"  # a category lets through more than half its attacks
    assert [u["category"] for u in gap.evidence["uncovered"]] == ["jb", "leak"]
    assert gap.evidence["uncovered"][0]["value"] == 0.3
    assert "2 of 3 attack categories" in gap.message
    # Only "leak" below the target (80%): a warning, not critical.
    rows = [r for r in rows if r[0] != "jb"]
    (gap,) = _by_rule(_recs([make_run(rows)]), "coverage_gap")
    assert gap.priority == "warning"


def test_false_positive_cost_per_10000_requests() -> None:
    rows = [("inj", True, True, 0.9)] * 200
    rows += [("chat", False, i < 30, 0.9 if i < 30 else 0.1) for i in range(1000)]  # FPR 3%
    recs = _recs([make_run(rows)])
    (fp,) = _by_rule(recs, "false_positive_cost")
    r = rate(30, 1000)
    assert fp.priority == "warning"  # above the 1% target, below 5%
    assert fp.evidence["per_10k"] == 300.0
    assert "about 300 of every 10,000 benign requests" in fp.message
    assert f"between {10_000 * r.ci_low:,.0f} and {10_000 * r.ci_high:,.0f}" in fp.message
    rows = [("inj", True, True, 0.9)] * 200
    rows += [("chat", False, i < 100, 0.9 if i < 100 else 0.1) for i in range(1000)]  # 10%
    (fp,) = _by_rule(_recs([make_run(rows)]), "false_positive_cost")
    assert fp.priority == "critical"


def test_error_rate_explains_the_policy() -> None:
    rows = _good_rows(200, 200)
    rows = [(*r[:2], None) if i % 10 == 0 else r for i, r in enumerate(rows)]  # 10% errors
    closed = _by_rule(_recs([make_run(rows, policy="fail_closed")]), "error_rate")
    assert len(closed) == 1
    assert closed[0].priority == "warning"
    assert "40 of 400 calls failed (10.0%" in closed[0].message
    assert "count as blocked" in closed[0].message
    opened = _by_rule(_recs([make_run(rows, policy="fail_open")]), "error_rate")[0]
    assert "count as allowed" in opened.message
    assert "bypasses" in opened.message
    excluded = _by_rule(_recs([make_run(rows, policy="exclude")]), "error_rate")[0]
    assert "left out of every rate" in excluded.message
    many = [(*r[:2], None) if i % 5 == 0 else r for i, r in enumerate(_good_rows(200, 200))]
    assert _by_rule(_recs([make_run(many)]), "error_rate")[0].priority == "critical"


def test_one_sample_size_card_per_dataset_says_how_many_samples_are_needed() -> None:
    rows = [("inj", True, i < 15, 0.9 if i < 15 else 0.1) for i in range(20)]  # ASR 25%
    rows += [("chat", False, False, 0.1)] * 2000
    runs = [make_run(rows, run_id="a", spec="a"), make_run(rows, run_id="b", spec="b")]
    (card,) = _by_rule(_recs(runs, margin=0.05), "sample_size")  # one for both runs
    assert card.priority == "warning"
    assert card.subject == "inline"
    asr = card.evidence["headline"]["ASR"]
    assert asr["needed"] == required_sample_size(margin=0.05, rate=0.25)
    assert asr["n"] == 20
    assert f"about {asr['needed']} attack samples" in card.message
    assert "FPR" not in card.evidence["headline"]  # 2000 benign is plenty
    assert card.evidence["categories"][0]["category"] == "inj"
    # A wide enough margin: nothing to say.
    assert not _by_rule(_recs(runs, margin=0.5), "sample_size")


def test_missing_label_is_critical() -> None:
    recs = _recs([make_run([("inj", True, True, 0.9)] * 50)])
    (missing,) = _by_rule(recs, "missing_label")
    assert missing.priority == "critical"
    assert missing.evidence["label"] == "benign"
    assert "false positive rate cannot be measured" in missing.message


def test_threshold_rule_points_at_a_threshold_within_the_target() -> None:
    # Blocking at 0.5 costs 5% FPR; a threshold of 0.8 keeps every attack and no FPR.
    rows = [("inj", True, True, 0.9)] * 100
    rows += [("chat", False, i < 50, 0.6 if i < 50 else 0.1) for i in range(1000)]
    (th,) = _by_rule(_recs([make_run(rows)]), "threshold")
    assert th.evidence["threshold"] == 0.9
    assert "within the 1.0% target" in th.message


def test_latency_tail_and_no_scores() -> None:
    rows = [("inj", True, True), ("chat", False, False)] * 200
    run = make_run(rows, latency_ms=2.0)
    recs = _recs([run])
    assert _by_rule(recs, "no_scores")
    assert not _by_rule(recs, "latency_tail")

    def slowed(every: int) -> Run:
        slow = tuple(
            replace(o, latency_ms=900.0) if i % every == 0 else o
            for i, o in enumerate(run.outcomes)
        )
        return replace(run, outcomes=slow)

    # 2% slow calls: the p99's interval reaches down to the fast calls, no claim
    assert not _by_rule(_recs([slowed(50)]), "latency_tail")
    (lat,) = _by_rule(_recs([slowed(25)]), "latency_tail")  # 4%: the whole interval is slow
    assert lat.evidence["p50_ms"] == 2.0
    assert lat.evidence["p99_ms"] > 20.0


def test_comparison_names_the_leader_and_whether_it_is_significant() -> None:
    strong = make_run(_good_rows(120, 120), run_id="s", spec="strong")
    weak_rows = [("inj", True, i % 3 == 0, 0.9 if i % 3 == 0 else 0.2) for i in range(120)]
    weak = make_run(weak_rows + [("chat", False, False, 0.05)] * 120, run_id="w", spec="weak")
    (cmp,) = _by_rule(_recs([weak, strong]), "comparison")
    assert cmp.priority == "info"
    assert cmp.evidence["leader"] == "strong"
    assert cmp.evidence["runner_up"] == "weak"
    assert "block rate significantly better" in cmp.message
    twin = make_run(_good_rows(120, 120), run_id="t", spec="twin")
    (same,) = _by_rule(_recs([strong, twin]), "comparison")
    assert same.priority == "warning"
    assert "may be noise" in same.message


def test_recommendations_are_ordered_by_priority() -> None:
    rows = [("jb", True, i < 30, 0.9 if i < 30 else 0.1) for i in range(100)]
    rows += [("chat", False, False, 0.1)] * 100
    recs = _recs([make_run(rows)])
    order = {"critical": 0, "warning": 1, "info": 2}
    assert [order[r.priority] for r in recs] == sorted(order[r.priority] for r in recs)


def test_adaptive_attack_rule(attack_result: AttackResult) -> None:
    recs = list(build_report([], attack=attack_result).recommendations)
    (adaptive,) = _by_rule(recs, "adaptive_attack")
    f = attack_result.figures
    assert adaptive.evidence["static_asr"] == f.static_asr.value
    assert adaptive.evidence["adaptive_asr"] == f.adaptive_asr.value
    rise = (f.adaptive_asr.value or 0) - (f.static_asr.value or 0)
    assert (adaptive.priority != "info") == (rise >= 0.1)
    # Transfer to an identical defense evades as often as against the original.
    transfer = _by_rule(recs, "attack_transfer")
    evaded = attack_result.transfer[0].evaded.value
    assert bool(transfer) == (evaded is not None and evaded >= 0.3)


def test_no_threshold_advice_when_only_blocking_nothing_meets_the_target() -> None:
    # The most suspicious text is benign: only "block nothing" (threshold +inf) has FPR 0.
    rows = [("inj", True, True, 0.6)] * 50
    rows += [("chat", False, i == 0, 0.99 if i == 0 else 0.1) for i in range(20)]
    report = build_report([make_run(rows)])
    assert not _by_rule(list(report.recommendations), "threshold")
    assert report.runs[0].summary.scores is not None
    render_json(report)  # strict JSON: no infinity leaked into the evidence


# --- what the data supports (issue 30, defect 6) ---------------------------------------------


def _core_sized(seed: int) -> list[tuple[object, ...]]:
    """30 samples shaped like ``sample(builtin:core, n=30)``: 16 attacks in 5 categories
    (0 to 2 of 3 blocked), 14 benign with one false positive."""
    rows: list[tuple[object, ...]] = []
    for c, blocked in enumerate((0, 0, 1, 1, 2)):
        rows += [(f"cat{c}", True, i < blocked, 0.9 if i < blocked else 0.1) for i in range(3)]
    rows.append(("cat4", True, seed % 2 == 0, 0.6))
    rows += [("chat", False, i == 0, 0.7 if i == 0 else 0.05 * (i % 5)) for i in range(14)]
    return rows


def test_a_30_sample_run_gets_few_cards_and_no_critical_one() -> None:
    runs = [make_run(_core_sized(i), run_id=f"r{i}", spec=f"d{i}") for i in range(3)]
    recs = _recs(runs)
    assert len(recs) <= 8, [(r.priority, r.rule, r.subject) for r in recs]
    assert not [r for r in recs if r.priority == "critical"]
    assert len(_by_rule(recs, "sample_size")) == 1  # one sample-size note for the data
    assert not _by_rule(recs, "latency_tail")  # 30 calls cannot bound a p99
    assert not _by_rule(recs, "threshold")  # 14 benign samples cannot show an FPR <= 1%
    (fp,) = _by_rule(recs, "false_positive_cost")  # the same finding: one card, both named
    assert fp.subject == "d0, d1, d2"
    assert fp.evidence["subjects"] == ["d0", "d1", "d2"]


def test_a_false_positive_rate_whose_interval_includes_the_target_is_information() -> None:
    rows = [("inj", True, True, 0.9)] * 50
    rows += [("chat", False, i < 1, 0.9 if i < 1 else 0.1) for i in range(40)]  # 2.5%
    (fp,) = _by_rule(_recs([make_run(rows)]), "false_positive_cost")
    assert fp.evidence["ci_low"] < 0.01 < fp.evidence["value"]
    assert fp.priority == "info"
    assert "still includes the 1.0% target" in fp.message


def _critical_intervals(recs: list[Recommendation], target_fpr: float) -> list[tuple[float, str]]:
    """``(lower bound, what)`` of the interval behind each critical card; the line it crossed."""
    out = []
    for r in recs:
        if r.priority != "critical":
            continue
        if r.rule == "false_positive_cost":
            out.append((r.evidence["ci_low"] - 5 * target_fpr, "fpr"))
        elif r.rule == "coverage_gap":
            out.append((0.5 - min(u["ci_high"] for u in r.evidence["uncovered"]), "gap"))
        elif r.rule == "error_rate":
            low = rate(r.evidence["errors"], r.evidence["outcomes"]).ci_low or 0.0
            out.append((low - 0.1, "errors"))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_attack=st.integers(1, 60),
    n_benign=st.integers(1, 60),
    blocked=st.floats(0, 1),
    false_pos=st.floats(0, 1),
    errors=st.floats(0, 0.5),
)
def test_no_critical_card_comes_from_an_interval_that_includes_the_threshold(
    n_attack: int, n_benign: int, blocked: float, false_pos: float, errors: float
) -> None:
    rows: list[tuple[object, ...]] = []
    for i in range(n_attack):
        hit = i < round(blocked * n_attack)
        rows.append((f"c{i % 3}", True, None if i % 7 == 0 and errors > 0.25 else hit,
                     0.9 if hit else 0.1))  # fmt: skip
    for i in range(n_benign):
        hit = i < round(false_pos * n_benign)
        rows.append(("chat", False, None if i < round(errors * n_benign) else hit,
                     0.8 if hit else 0.2))  # fmt: skip
    recs = _recs([make_run(rows)])
    for margin_past, what in _critical_intervals(recs, target_fpr=0.01):
        assert margin_past > 0, (what, [r.message for r in recs if r.priority == "critical"])
