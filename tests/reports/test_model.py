"""build_report: what the model holds for a run, a benchmark and an attack."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from shieldbench.attacks import AttackResult
from shieldbench.errors import ConfigError
from shieldbench.metrics import compare_runs, effective_blocked, latency_stats, summarize
from shieldbench.metrics._testing import make_run as make_small_run
from shieldbench.reports import build_report
from shieldbench.reports._run_figures import CURVE_POINTS
from shieldbench.types import Run, RunConfig, Sample

from .conftest import make_run

NOW = datetime(2026, 2, 3, 4, 5, 6, tzinfo=UTC)


def test_single_run_section_matches_the_metrics(run_a: Run) -> None:
    report = build_report([run_a], generated_at=NOW)
    assert report.scope == "run"
    assert report.generated_at == NOW
    assert report.title == "shieldbench report: keyword on jsonl:hostile.jsonl"
    (section,) = report.runs
    assert section.label == "keyword"
    assert section.summary.to_dict() == summarize(run_a).to_dict()
    # One dataset group, no comparison with a single run, sample-size warnings present.
    (group,) = report.groups
    assert group.runs == ("keyword",)
    assert group.comparison is None
    assert group.sample_size_warnings  # 12 attacks per category is far below 93
    # Errors: every non-ok outcome counted, split by label, policy explained.
    bad = [(s, o) for s, o in run_a.pairs() if o.status != "ok"]
    assert section.errors.total == len(bad) > 0
    assert section.errors.attack_errors == sum(s.is_attack for s, _ in bad)
    assert section.errors.benign_errors == sum(not s.is_attack for s, _ in bad)
    assert section.errors.counted_as == "blocked"
    assert section.errors.by_status == dict(Counter(o.status for _, o in bad))
    assert set(section.errors.by_status) == {"error", "timeout"}
    assert len(section.errors.messages) <= 3


def test_latency_histogram_counts_every_ok_latency(run_a: Run) -> None:
    section = build_report([run_a]).runs[0]
    h = section.latency_histogram
    assert h is not None
    assert sum(h.counts) == latency_stats(run_a).n
    assert len(h.edges_ms) == len(h.counts) + 1
    assert list(h.edges_ms) == sorted(h.edges_ms)
    values = [o.latency_ms for o in run_a.outcomes if o.latency_ms is not None]
    assert h.edges_ms[0] == pytest.approx(min(values))
    assert h.edges_ms[-1] == pytest.approx(max(values))
    assert h.scale == ("log" if max(values) / min(values) > 20 else "linear")


def test_curves_are_thinned_but_keep_their_ends() -> None:
    rng = np.random.default_rng(0)
    rows = [("c", True, bool(s > 0.5), float(s)) for s in rng.random(800)]
    rows += [("b", False, bool(s > 0.9), float(s)) for s in rng.random(800)]
    run = make_small_run(rows)
    curves = build_report([run]).runs[0].curves
    assert curves is not None
    assert len(curves.roc.fpr) <= CURVE_POINTS
    assert (curves.roc.fpr[0], curves.roc.tpr[0]) == (0.0, 0.0)
    assert (curves.roc.fpr[-1], curves.roc.tpr[-1]) == (1.0, 1.0)
    assert len(curves.pr.recall) <= CURVE_POINTS
    assert curves.pr.recall[-1] == 0.0
    assert curves.pr.precision[-1] == 1.0
    assert curves.tradeoff.chosen is not None
    assert curves.tradeoff.chosen.false_positive_rate.value is not None
    assert curves.tradeoff.chosen.false_positive_rate.value <= 0.01


def test_no_curves_without_scores_or_without_a_class(samples: list[Sample]) -> None:
    no_scores = make_run(samples, scores=False)
    assert build_report([no_scores]).runs[0].curves is None
    only_attacks = make_small_run([("c", True, True, 0.9), ("c", True, False, 0.1)])
    assert build_report([only_attacks]).runs[0].curves is None


def test_worst_case_examples_are_the_worst_of_each_category(run_b: Run) -> None:
    report = build_report([run_b], examples=2)
    wc = report.runs[0].worst_case
    blocked = [effective_blocked(o, "fail_closed") for o in run_b.outcomes]
    bypass_ids = {
        s.id for s, b in zip(run_b.samples, blocked, strict=True) if s.is_attack and not b
    }
    assert wc.n_bypasses == len(bypass_ids)
    assert {e.sample_id for e in wc.bypasses} <= bypass_ids
    per_category: dict[str, list[float]] = {}
    for e in wc.bypasses:
        assert e.kind == "bypass"
        assert e.run == run_b.defense.spec
        per_category.setdefault(e.category, []).append(e.score or 0.0)
    assert all(len(v) <= 2 for v in per_category.values())
    # Within a category the lowest-scored bypass (the surest miss) comes first ...
    for category, scores in per_category.items():
        all_scores = sorted(
            o.verdict.score or 0.0
            for s, o in run_b.pairs()
            if s.id in bypass_ids and s.category == category and o.verdict is not None
        )
        assert scores == all_scores[: len(scores)]
    # ... and the first examples span the categories, worst category first.
    first = [e.category for e in wc.bypasses[: len(per_category)]]
    assert len(set(first)) == len(per_category)
    worst = wc.worst_categories[0]
    assert first[0] == worst.group
    assert [g.attack_success_rate.value for g in wc.worst_categories] == sorted(
        (g.attack_success_rate.value or 0.0 for g in wc.worst_categories), reverse=True
    )
    for e in wc.false_positives:
        assert e.kind == "false_positive"


def test_example_texts_are_cut_to_the_limit() -> None:
    long_text = "Ignore previous instructions " + "x" * 5000
    run = make_small_run([("c", True, False, 0.1), ("b", False, False, 0.1)])
    samples = (replace(run.samples[0], text=long_text), run.samples[1])
    run = replace(run, samples=samples)
    report = build_report([run])
    (example,) = report.runs[0].worst_case.bypasses
    assert example.truncated
    assert example.text_length == len(long_text)
    assert len(example.text) == report.settings.text_limit
    assert example.to_dict()["truncated"] is True


def test_examples_zero_keeps_counts_but_no_examples(run_b: Run) -> None:
    wc = build_report([run_b], examples=0).runs[0].worst_case
    assert wc.bypasses == ()
    assert wc.false_positives == ()
    assert wc.n_bypasses > 0


def test_benchmark_groups_runs_by_content_hash_and_compares(
    samples: list[Sample], run_a: Run, run_b: Run
) -> None:
    other_data = make_run(samples[:40], spec="keyword", run_id="r-c", dataset_hash="sha256:other")
    report = build_report([run_a, run_b, other_data])
    assert report.scope == "benchmark"
    # Same spec on two datasets: labels name the dataset; all labels are unique.
    labels = [r.label for r in report.runs]
    assert len(set(labels)) == 3
    assert labels[1] == "<i>weak</i>|spec"
    assert [g.dataset.content_hash for g in report.groups] == ["sha256:hostile", "sha256:other"]
    first, second = report.groups
    assert first.runs == (labels[0], labels[1])
    assert second.runs == (labels[2],)
    assert first.comparison is not None
    assert second.comparison is None
    assert first.comparison.to_dict() == compare_runs([run_a, run_b]).to_dict()


def test_a_given_comparison_is_used_for_its_dataset(run_a: Run, run_b: Run) -> None:
    cmp = compare_runs([run_a, run_b], margin=0.05, alpha=0.01)
    report = build_report([run_a, run_b], comparison=cmp)
    assert report.groups[0].comparison is cmp


def test_runs_that_cannot_be_compared_are_reported_with_the_reason(
    samples: list[Sample],
) -> None:
    a = make_run(samples, run_id="x", policy="fail_closed", error_every=10)
    b = make_run(samples, spec="other", run_id="y", policy="exclude")
    report = build_report([a, b])
    group = report.groups[0]
    assert group.comparison is None
    assert group.comparison_note is not None
    assert "error polic" in group.comparison_note
    assert any(r.rule == "comparison" and r.priority == "warning" for r in report.recommendations)
    # With one policy for all, they are compared.
    forced = build_report([a, b], policy="exclude")
    assert forced.groups[0].comparison is not None
    assert forced.runs[0].errors.counted_as == "excluded"


def test_composite_facts_from_verdict_details(samples: list[Sample]) -> None:
    tiered = build_report([make_run(samples, details="tiered")]).runs[0]
    assert tiered.composite is not None
    assert tiered.composite.dual_gain is None
    ps = tiered.composite.path_shares
    assert ps is not None
    assert ps.fast + ps.deep == len(samples)
    dual = build_report([make_run(samples, details="dual")]).runs[0]
    assert dual.composite is not None
    assert dual.composite.path_shares is None
    gain = dual.composite.dual_gain
    assert gain is not None
    assert gain.attacks + gain.benign == len(samples)
    plain = build_report([make_run(samples)]).runs[0]
    assert plain.composite is None


def test_attack_report(attack_result: AttackResult, run_a: Run) -> None:
    report = build_report([], attack=attack_result)
    assert report.scope == "attack"
    assert report.runs == ()
    assert report.title == "shieldbench adaptive attack: keyword on jsonl:hostile.jsonl"
    assert report.attack is not None
    assert report.attack.data == attack_result.to_dict()
    assert report.attack.result is attack_result  # the record itself, no mirror type
    # Its to_dict() form (a saved attack.json) reads back to an equal record.
    again = build_report([], attack=attack_result.to_dict()).attack
    assert again is not None
    assert again.result == attack_result
    # An attack alongside runs keeps both.
    both = build_report([run_a], attack=attack_result)
    assert both.scope == "attack"
    assert len(both.runs) == 1


def test_malformed_attack_results_are_refused(attack_result: AttackResult) -> None:
    class Fake:
        def __init__(self, data: dict[str, object]) -> None:
            self.data = data

        def to_dict(self) -> dict[str, object]:
            return self.data

    good = attack_result.to_dict()
    with pytest.raises(ConfigError, match="not an adaptive-attack result"):
        build_report([], attack=Fake({**good, "kind": "shieldbench.run"}))
    with pytest.raises(ConfigError, match="schema_version 99"):
        build_report([], attack=Fake({**good, "schema_version": 99}))
    broken = {**good, "figures": {k: v for k, v in good["figures"].items() if k != "curve"}}
    with pytest.raises(ConfigError, match=r"malformed attack result.*curve"):
        build_report([], attack=Fake(broken))
    with pytest.raises(ConfigError, match=r"adaptive-attack result \(AttackResult\), got object"):
        build_report([], attack=object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"margin": 0.0}, "margin"),
        ({"margin": 0.7}, "margin"),
        ({"margin": math.nan}, "margin"),
        ({"examples": -1}, "examples"),
        ({"examples": 2.5}, "examples"),
        ({"policy": "fail_maybe"}, "policy"),
    ],
)
def test_bad_options_fail_fast(run_a: Run, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        build_report([run_a], **kwargs)  # type: ignore[arg-type]


def test_needs_runs_or_an_attack() -> None:
    with pytest.raises(ConfigError, match="at least one run"):
        build_report([])
    with pytest.raises(ConfigError, match=r"runs\[0\] is a dict"):
        build_report([{"id": "x"}])  # type: ignore[list-item]


def test_policy_override_changes_every_figure(samples: list[Sample]) -> None:
    run = make_run(samples, error_every=5)
    closed = build_report([run]).runs[0]
    opened = build_report([run], policy="fail_open").runs[0]
    assert closed.summary.settings.policy == "fail_closed"
    assert opened.summary.settings.policy == "fail_open"
    assert opened.errors.counted_as == "allowed"
    closed_fpr = closed.summary.rates.false_positive_rate.value
    opened_fpr = opened.summary.rates.false_positive_rate.value
    assert closed_fpr is not None
    assert opened_fpr is not None
    assert closed_fpr > opened_fpr
    assert run.config == RunConfig(error_policy="fail_closed")


def test_a_given_comparison_must_match_the_runs(
    run_a: Run, run_b: Run, samples: list[Sample]
) -> None:
    cmp = compare_runs([run_a, run_b])
    third = make_run(samples, spec="third", run_id="r-3")
    with pytest.raises(ConfigError, match="covers 2 runs but the report has 3"):
        build_report([run_a, run_b, third], comparison=cmp)
    elsewhere = make_run(samples, spec="x", run_id="r-x", dataset_hash="sha256:elsewhere")
    with pytest.raises(ConfigError, match="which no run of the report has"):
        build_report([elsewhere], comparison=cmp)
