"""Every count and rate of a run read from disk a block at a time equals the in-memory one.

A large run's samples and outcomes stay in a Parquet file
(:class:`~shieldbench.runfiles.ParquetRows`) and the metrics read the few columns
they need a block of rows at a time (``shieldbench.metrics._columnar``). Here the
blocks and the row groups are a handful of rows, so every figure is assembled from
many blocks, and must equal exactly the figure computed over the same run held as
objects: confusion counts, every rate and interval, every breakdown, latency and
error counts, the score figures, under each error policy.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.metrics import _columnar, summarize
from shieldbench.runfiles import ParquetRows, _parquet, load_run, save_run
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, Run, RunConfig, Sample, Verdict

NOW = datetime(2026, 1, 1, tzinfo=UTC)

_ROW = st.tuples(
    st.booleans(),  # attack
    st.sampled_from(["ok", "ok", "ok", "error", "timeout"]),
    st.booleans(),  # blocked
    st.floats(0, 1, allow_nan=False),  # score
    st.sampled_from(["c0", "c1", "c2/s", None]),  # category (None: uncategorized)
    st.sampled_from([None, "known", "novel"]),  # tier
    st.one_of(st.none(), st.floats(0.01, 500, allow_nan=False)),  # latency
)


def _run(rows: list[tuple], policy: str) -> Run:  # type: ignore[type-arg]
    samples, outcomes = [], []
    for i, (attack, status, blocked, score, category, tier, latency) in enumerate(rows):
        cat, _, sub = (category or "uncategorized").partition("/")
        samples.append(
            Sample(f"s{i}", f"t{i}", "attack" if attack else "benign", cat, sub or None, tier=tier)
        )
        if status == "ok":
            outcomes.append(Outcome(f"s{i}", Verdict(blocked, score), "ok", latency_ms=latency))
        else:
            outcomes.append(Outcome(f"s{i}", None, status, "boom", latency_ms=latency))
    info = DatasetInfo("inline", "sha256:0", len(rows))
    config = RunConfig(error_policy=policy)  # type: ignore[arg-type]
    return Run("r", DefenseInfo("d", "d"), info, config, tuple(samples), tuple(outcomes), NOW, NOW)


@contextmanager
def _on_disk(run: Run, block: int) -> Iterator[Run]:
    """``run`` saved as Parquet and read back, in row groups and metric blocks of a
    handful of rows (so every figure is assembled from many blocks)."""
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(_parquet, "ROW_GROUP", block + 2)
        mp.setattr(_columnar, "BLOCK", block)
        back = load_run(save_run(run, Path(tmp) / "run.parquet"))
        assert isinstance(back.outcomes, ParquetRows)
        assert _columnar.columnar(back)
        yield back


@settings(max_examples=30, deadline=None)
@given(
    st.lists(_ROW, min_size=1, max_size=60),
    st.sampled_from(["fail_closed", "fail_open", "exclude"]),
    st.integers(1, 9),
)
def test_figures_from_blocks_on_disk_equal_the_in_memory_figures(
    rows: list[tuple],  # type: ignore[type-arg]
    policy: str,
    block: int,
) -> None:
    run = _run(rows, policy)
    with _on_disk(run, block) as back:
        try:
            expected = summarize(run).to_dict()
        except Exception as exc:  # the same refusal both ways (e.g. a verdict without score)
            with pytest.raises(type(exc)):
                summarize(back)
            return
        got = summarize(back).to_dict()
    assert got == expected


@settings(max_examples=25, deadline=None)
@given(
    st.lists(_ROW, min_size=1, max_size=60),
    st.sampled_from(["fail_closed", "fail_open", "exclude"]),
    st.integers(1, 9),
)
def test_report_curves_and_latency_histogram_from_blocks_equal_the_in_memory_ones(
    rows: list[tuple],  # type: ignore[type-arg]
    policy: str,
    block: int,
) -> None:
    from shieldbench.metrics import precision_recall_curve, roc_curve, score_arrays
    from shieldbench.reports import _run_figures

    run = _run(rows, policy)
    with _on_disk(run, block) as back:
        assert _run_figures.latency_histogram(back) == _run_figures.latency_histogram(run)
        try:
            expected = _run_figures.curves(run, run.config.error_policy, 0.01)
        except Exception as exc:
            with pytest.raises(type(exc)):
                _run_figures.curves(back, back.config.error_policy, 0.01)
            return
        assert _run_figures.curves(back, back.config.error_policy, 0.01) == expected
    if expected is not None:  # the thinned curves are points of the exact curves
        y, s = score_arrays(run)
        assert set(expected.roc.fpr) <= set(roc_curve(y, s).fpr)
        assert set(expected.pr.precision) <= set(precision_recall_curve(y, s).precision)
