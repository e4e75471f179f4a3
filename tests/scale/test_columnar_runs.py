"""Parquet run files: the same Run back, readable by report/compare, refused when foreign."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from shieldbench.benchmark._folder import COLUMNAR_FROM, run_format
from shieldbench.cli import app
from shieldbench.errors import RunError
from shieldbench.metrics import summarize
from shieldbench.runio import load_run, save_run
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, Run, RunConfig, Sample, Verdict

runner = CliRunner()


def _run(n: int, run_id: str = "r1") -> Run:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    samples, outcomes = [], []
    for i in range(n):
        meta = {"note": "é", "k": i} if i % 4 == 0 else {}
        samples.append(
            Sample(f"s{i}", f"text {i} ✓", "attack" if i % 2 else "benign", category=f"c{i % 3}",
                   subcategory="sub" if i % 5 == 0 else None, severity="high", tier="known",
                   source="gen", metadata=meta)
        )  # fmt: skip
        if i % 7 == 3:
            outcomes.append(Outcome(f"s{i}", None, "error", "ValueError: x", 1.5, 3))
        elif i % 11 == 5:
            outcomes.append(Outcome(f"s{i}", None, "timeout", "check returned no verdict", None))
        else:
            verdict = Verdict(i % 3 == 0, None if i % 13 == 0 else i / n, "INJ", ("r1", "r2"),
                              {"path": "fast"} if i % 6 == 0 else {})  # fmt: skip
            outcomes.append(Outcome(f"s{i}", verdict, "ok", None, 0.25 * i, 1))
    return Run(run_id, DefenseInfo("pattern", "pattern", "1"), DatasetInfo("inline", "sha256:0", n),
               RunConfig(timeout_s=2.0), tuple(samples), tuple(outcomes), now, now,
               environment={"python": "x"})  # fmt: skip


@pytest.mark.parametrize("n", [0, 1, 150])
def test_a_parquet_run_file_reads_back_as_the_same_run(tmp_path: Path, n: int) -> None:
    run = _run(n)
    path = save_run(run, tmp_path / "run.parquet")
    back = load_run(path)
    assert back.samples == run.samples  # read lazily, equal record by record
    assert back.outcomes == run.outcomes
    assert (back.id, back.defense, back.dataset, back.config) == (
        run.id, run.defense, run.dataset, run.config
    )  # fmt: skip
    assert list(back.pairs()) == list(run.pairs())
    if n:
        assert back.samples[-1] == run.samples[-1]
        assert back.outcomes[1:3] == run.outcomes[1:3]
    assert back.environment == run.environment
    assert [o.verdict.details if o.verdict else None for o in back.outcomes] == [
        o.verdict.details if o.verdict else None for o in run.outcomes
    ]
    assert pq.read_table(path).num_rows == n  # plain Parquet for any reader


def test_rows_are_written_in_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shieldbench.runfiles._parquet as columnar

    monkeypatch.setattr(columnar, "ROW_GROUP", 40)
    run = _run(150)
    path = save_run(run, tmp_path / "run.parquet")
    assert pq.ParquetFile(path).num_row_groups == 4
    assert summarize(load_run(path)).rates == summarize(run).rates


def test_foreign_or_damaged_parquet_is_a_clear_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [1]}), plain)
    with pytest.raises(RunError, match="not a shieldbench run"):
        load_run(plain)
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet at all")
    with pytest.raises(RunError, match="not a Parquet file"):
        load_run(junk)
    with pytest.raises(RunError, match="no such run file"):
        load_run(tmp_path / "missing.parquet")


@pytest.mark.slow
def test_report_and_compare_read_parquet_runs(tmp_path: Path) -> None:
    a = save_run(_run(60), tmp_path / "runs" / "a.parquet")
    save_run(_run(60, "r2"), tmp_path / "runs" / "b.json")
    result = runner.invoke(app, ["report", str(a), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rep" / "report.json").exists()
    result = runner.invoke(app, ["compare", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output


def test_large_runs_are_stored_columnar() -> None:
    assert run_format(COLUMNAR_FROM - 1) == "json"
    assert run_format(COLUMNAR_FROM) == "parquet"


def test_chained_views_read_as_one_sequence(tmp_path: Path) -> None:
    from shieldbench._views import ChainView

    run = _run(30)
    view = load_run(save_run(run, tmp_path / "run.parquet")).samples
    chain = ChainView([run.samples[:10], view[10:20], run.samples[20:]])
    assert len(chain) == 30
    assert list(chain) == list(run.samples)
    assert chain[0] == run.samples[0]
    assert chain[15] == run.samples[15]
    assert chain[-1] == run.samples[-1]
    assert chain[5:25:5] == run.samples[5:25:5]
    with pytest.raises(IndexError):
        chain[30]


def test_score_metrics_of_a_parquet_run_with_every_score_present(tmp_path: Path) -> None:
    """Arrow hands a null-free score column over as a read-only array: it is copied."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    samples = tuple(Sample(f"s{i}", f"t{i}", "attack" if i % 2 else "benign") for i in range(40))
    outcomes = tuple(
        Outcome(s.id, Verdict(i % 3 == 0, i / 40), "ok", latency_ms=1.0)
        for i, s in enumerate(samples)
    )
    run = Run("r", DefenseInfo("p", "p"), DatasetInfo("d", "sha256:0", 40), RunConfig(),
              samples, outcomes, now, now)  # fmt: skip
    back = load_run(save_run(run, tmp_path / "r.parquet"))
    assert summarize(back).scores == summarize(run).scores
