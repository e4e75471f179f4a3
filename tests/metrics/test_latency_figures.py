"""Per-call latency figures: bounds n cannot give say why; the amortised batch cost."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from shieldbench.metrics import (
    latency_stats,
    missing_bound_reason,
    quantile_bound_n,
    quantile_interval,
    summarize,
)
from shieldbench.metrics._testing import make_run
from shieldbench.reports._format import quantile_text
from shieldbench.types import Run


@settings(max_examples=60, deadline=None)
@given(
    q=st.sampled_from([0.5, 0.9, 0.95, 0.99]),
    confidence=st.sampled_from([0.9, 0.95, 0.99]),
    n=st.integers(2, 500),
)
def test_a_bound_exists_exactly_from_the_n_quantile_bound_n_names(
    q: float, confidence: float, n: int
) -> None:
    x = np.arange(1.0, n + 1.0)
    ci = stats.quantile_test(x, q=float(np.quantile(x, q)), p=q).confidence_interval(confidence)
    assert np.isfinite(ci.high) == (n >= quantile_bound_n(q, "high", confidence=confidence))
    assert np.isfinite(ci.low) == (n >= quantile_bound_n(q, "low", confidence=confidence))


def test_a_missing_bound_is_shown_with_its_reason_never_as_a_question_mark() -> None:
    e = quantile_interval(np.linspace(1.0, 2.0, 30), 0.99)
    assert e.ci_high is None
    reason = missing_bound_reason(e, 0.99)
    assert reason == "no upper bound: a 95% interval for p99 needs n >= 368 values, n = 30"
    text = quantile_text(e, 0.99)
    assert "?" not in text
    assert text.endswith("–none: n=30 < 368]")
    assert missing_bound_reason(quantile_interval(np.arange(100.0), 0.5), 0.5) is None
    one = quantile_interval([3.0], 0.5)
    assert missing_bound_reason(one, 0.5) == (
        "no lower or upper bound: a 95% interval for p50 needs n >= 6 values, n = 1"
    )


def test_latency_stats_name_their_measure_and_list_unbounded_percentiles() -> None:
    run = make_run([("c", True, True)] * 30, latency_ms=2.0)
    d = latency_stats(run).to_dict()
    assert d["measure"].startswith("per-call latency: one text per call")
    assert set(d["unbounded"]) == {"p95_ms", "p99_ms"}
    assert "n >= 72" in d["unbounded"]["p95_ms"]


def test_throughput_reads_the_amortised_batch_cost_the_engine_recorded() -> None:
    run = make_run([("c", True, True)] * 4, latency_ms=2.0)
    assert summarize(run).operations.throughput.batch_ms_per_text is None

    def with_env(**env: str) -> Run:
        return dataclasses.replace(run, environment=env)

    thr = summarize(with_env(batched_texts="64", batch_ms_per_text="7.5")).operations.throughput
    assert (thr.batch_ms_per_text, thr.batched_texts) == (7.5, 64)
    for broken in ({"batched_texts": "64", "batch_ms_per_text": "nan"}, {"batched_texts": "x"}):
        assert summarize(with_env(**broken)).operations.throughput.batch_ms_per_text is None
