"""The trend and the history table by defense identity (issue 30, defect 3).

Reproduction: the trend of ``pattern`` mixed the ``pattern(threshold=0.2)`` runs
(same display name) into its series, and the table did not show the spec. Now a
trend holds only the runs of the spec asked for, one series per spec and version,
each run tested against the run before it in its own series; tables label runs by
canonical spec, with the version where a spec repeats.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.metrics._testing import make_run
from shieldbench.store import open_store
from shieldbench.trend import trend_points, trend_series
from shieldbench.types import DefenseInfo, Run

runner = CliRunner()

GOOD = [("jb", True, True)] * 60 + [("chat", False, False)] * 60
BAD = [("jb", True, False)] * 60 + [("chat", False, True)] * 60


def _run(run_id: str, spec: str, version: str, day: int, rows: list[tuple[str, bool, bool]]) -> Run:
    base = make_run(rows, run_id=run_id)
    start = base.started + timedelta(days=day)
    name = spec.split("(")[0]
    return replace(
        base,
        defense=DefenseInfo(spec, name, version),
        started=start,
        finished=start + timedelta(seconds=1),
    )


def _history(tmp_path: Path) -> str:
    db = str(tmp_path / "h.db")
    runs = [
        _run("p1", "pattern", "1", 0, GOOD),
        _run("low1", "pattern(threshold=0.2)", "1", 1, BAD),  # same display name, other defense
        _run("p2", "pattern", "1", 2, GOOD),
        _run("low2", "pattern( threshold=0.2 )", "1", 3, BAD),  # another spelling of it
        _run("p3", "pattern", "2", 4, BAD),  # a new version: a series of its own
        _run("p4", "pattern", "2", 5, BAD),
    ]
    with open_store(db) as store:
        for r in runs:
            store.add_run(r, git=(None, None))
    return db


@pytest.mark.slow
def test_the_trend_of_a_spec_never_mixes_in_a_variant_or_another_version(
    tmp_path: Path,
) -> None:
    db = _history(tmp_path)
    page = tmp_path / "trend.html"
    args = ["history", "trend", "--defense", "pattern", "--dataset", "inline", "--db", db]
    done = runner.invoke(app, [*args, "--out", str(page)], env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    flat = " ".join(done.output.split())
    # Mixed, p1 -> low1 -> p2 ... would be a significant change at every step.
    assert "trend of 4 runs (0 with a significant change)" in flat
    assert "2 series, one per defense spec and version (never mixed)" in flat
    assert "pattern version 1; pattern version 2" in flat
    text = page.read_text(encoding="utf-8")
    assert "low1" not in text
    assert "low2" not in text
    assert "4 runs of 2 defenses" in text
    rows = text.split("<tr>")[2:]
    assert [r.split("</td><td>")[1] for r in rows] == ["p1", "p2", "p3", "p4"]
    assert [r.split("</td><td>")[2] for r in rows] == ["pattern version 1"] * 2 + [
        "pattern version 2"
    ] * 2

    variant = ["history", "trend", "--defense", "pattern(threshold=0.2)", "--dataset", "inline"]
    done = runner.invoke(app, [*variant, "--db", db, "--out", str(page)], env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    assert "trend of 2 runs" in " ".join(done.output.split())


def test_the_history_table_labels_by_spec_and_version_where_a_spec_repeats(
    tmp_path: Path,
) -> None:
    db = _history(tmp_path)
    done = runner.invoke(app, ["history", "--db", db], env={"COLUMNS": "400"})
    assert done.exit_code == 0, done.output
    lines = {line.split("│")[1].strip(): line for line in done.output.splitlines() if "│" in line}
    assert "pattern version 1 @ inline" in lines["p1"]
    assert "pattern version 2 @ inline" in lines["p4"]
    assert "pattern(threshold=0.2) @ inline" in lines["low1"]
    assert "pattern(threshold=0.2) @ inline" in lines["low2"]  # canonical, one spelling
    only = runner.invoke(app, ["history", "--db", db, "--defense", "pattern"])
    assert "4 runs" in only.output


def test_each_run_is_tested_against_the_run_before_in_its_own_series(tmp_path: Path) -> None:
    db = _history(tmp_path)
    with open_store(db) as store:
        points = trend_points(store.runs(dataset="inline"))
    assert [p.run.id for p in points if p.block_p is None] == ["p1", "low1", "p3"]
    assert list(trend_series(points).values()) == [
        "pattern version 1",
        "pattern(threshold=0.2)",
        "pattern version 2",
    ]
