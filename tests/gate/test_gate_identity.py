"""The gate compares the runs it says it compares (issue 30, defect 3).

Reproductions: ``--baseline tag:branch=main`` picked the newest tagged run, another
defense; ``latest:pattern@...`` matched the candidate itself (``pattern(threshold=0.2)``
is also named "pattern") and the gate failed on 0 discordant pairs without a word.
Now a tag baseline is a run of the candidate's defense on its data (or a refusal
saying why), ``latest:`` matches by canonical spec, and a baseline that is the
candidate is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense
from shieldbench.errors import RunError
from shieldbench.gate import GateSettings, markdown_summary, run_gate
from shieldbench.runio import save_run
from shieldbench.store import open_store
from shieldbench.types import DefenseInfo, Run, RunConfig, Verdict

runner = CliRunner()
ENV = {"COLUMNS": "300"}


def _later(run: Run, run_id: str, days: int) -> Run:
    start = run.started + timedelta(days=days)
    return replace(run, id=run_id, started=start, finished=start + timedelta(seconds=1))


@pytest.fixture(scope="module")
def smoke_runs() -> tuple[Run, Run]:
    """``pattern`` and ``pattern(threshold=0.2)`` on the smoke set: both named "pattern"."""
    data = load_dataset("builtin:smoke")
    config = RunConfig(warmup=0)
    plain = run_defense(build_defense("pattern"), data, run_id="plain", config=config)
    low = run_defense(
        build_defense("pattern(threshold=0.2)"),
        data,
        run_id="t02",
        config=config,
        defense_spec="pattern(threshold=0.2)",
    )
    assert plain.defense.name == low.defense.name == "pattern"
    return plain, _later(low, "t02", 1)


def _gate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from shieldbench.cli import main; main()", "gate", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "500"},
    )


@pytest.mark.slow
def test_a_tag_baseline_is_a_run_of_the_candidates_defense(
    smoke_runs: tuple[Run, Run], tmp_path: Path
) -> None:
    plain, _ = smoke_runs
    db = str(tmp_path / "h.db")
    everything_allowed = tuple(
        o if o.verdict is None else replace(o, verdict=Verdict(False, 0.0)) for o in plain.outcomes
    )
    other = replace(
        _later(plain, "main-recommended", 2),
        defense=DefenseInfo("recommended", "recommended", "9"),
        outcomes=everything_allowed,
    )
    with open_store(db) as store:
        store.add_run(_later(plain, "main-pattern", 0), tags={"branch": "main"}, git=(None, None))
        store.add_run(other, tags={"branch": "main"}, git=(None, None))  # the newest so tagged
    cand = save_run(_later(plain, "cand", 3), tmp_path / "cand.json")
    out = tmp_path / "gate.json"
    args = ["gate", str(cand), "--baseline", "tag:branch=main", "--db", db, "--margin", "0"]
    done = runner.invoke(app, [*args, "--json", str(out)], env=ENV)
    assert done.exit_code == 0, done.output
    assert "vs baseline main-pattern (pattern)" in " ".join(done.output.split())
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["baseline"] == "main-pattern"
    assert result["baseline_defense"] == {"spec": "pattern", "version": plain.defense.version}
    assert result["candidate_defense"] == result["baseline_defense"]

    # no tagged run of this defense on this data: refused, saying why
    core = run_defense(build_defense("pattern"), load_dataset("builtin:core"), run_id="core")
    on_core = save_run(core, tmp_path / "core.json")
    refused = _gate(str(on_core), "--baseline", "tag:branch=main", "--db", db)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "the runs of pattern so tagged are on other data" in refused.stderr
    low = save_run(smoke_runs[1], tmp_path / "t02.json")
    refused = _gate(str(low), "--baseline", "tag:branch=main", "--db", db)
    assert refused.returncode == 2
    assert "names no run of the candidate's defense pattern(threshold=0.2)" in refused.stderr
    assert "recommended version 9" in refused.stderr


def test_latest_by_spec_is_not_the_threshold_variant_named_alike(
    smoke_runs: tuple[Run, Run], tmp_path: Path
) -> None:
    plain, low = smoke_runs
    db = str(tmp_path / "h.db")
    with open_store(db) as store:
        store.add_run(plain, git=(None, None))
        store.add_run(low, git=(None, None))  # newest, and named "pattern" too
    out = tmp_path / "gate.json"
    done = runner.invoke(
        app,
        ["gate", "t02", "--baseline", "latest:pattern@builtin:smoke", "--db", db],
        env=ENV,
    )
    assert done.exit_code in (0, 1), done.output
    flat = " ".join(done.output.split())
    assert "gate: candidate t02 (pattern(threshold=0.2)) vs baseline plain (pattern)" in flat
    done = runner.invoke(
        app,
        ["gate", "t02", "--baseline", "plain", "--db", db, "--summary", str(out)],
        env=ENV,
    )
    summary = out.read_text(encoding="utf-8")
    assert "Candidate `t02` (`pattern(threshold=0.2)`) vs baseline `plain` (`pattern`)" in summary


@pytest.mark.slow
def test_a_baseline_that_is_the_candidate_is_refused(
    smoke_runs: tuple[Run, Run], tmp_path: Path
) -> None:
    plain, low = smoke_runs
    db = str(tmp_path / "h.db")
    with open_store(db) as store:
        store.add_run(plain, git=(None, None))
        store.add_run(low, git=(None, None))
    for ref in ("t02", "latest:pattern(threshold=0.2)@builtin:smoke"):
        refused = _gate("t02", "--baseline", ref, "--db", db)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert f"--baseline {ref!r} names the candidate run itself ('t02'" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    same = save_run(plain, tmp_path / "plain.json")
    refused = _gate(str(same), "--baseline", str(same))
    assert refused.returncode == 2
    assert "names the candidate run itself ('plain', pattern)" in refused.stderr
    with pytest.raises(RunError, match="no discordant pair and shows nothing"):
        run_gate(plain, plain)
    # a copy under another id is another run: gated normally
    assert run_gate(replace(plain, id="copy"), plain, GateSettings(margin=0.0)).passed


def test_the_summary_shows_versions_where_the_specs_are_the_same(
    smoke_runs: tuple[Run, Run],
) -> None:
    plain, _ = smoke_runs
    new = replace(plain, id="new", defense=replace(plain.defense, version="2.0"))
    text = markdown_summary(run_gate(new, plain))
    old = plain.defense.version
    assert f"(`pattern version 2.0`) vs baseline `plain` (`pattern version {old}`)" in text
