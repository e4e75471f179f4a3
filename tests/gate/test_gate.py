"""``shieldbench gate``: a worse candidate fails (exit 1, JUnit names the check), an
equivalent one passes, bad input exits 2; the statistics match scipy / statsmodels."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from scipy import stats
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense
from shieldbench.gate import GateSettings, mid_p_mcnemar, run_gate
from shieldbench.metrics import PairedTable
from shieldbench.runio import save_run
from shieldbench.types import Outcome, Run, Verdict

runner = CliRunner()


@pytest.fixture(scope="module")
def runs() -> tuple[Run, Run]:
    data = load_dataset("builtin:core")
    defense = build_defense("pattern")
    base = run_defense(defense, data, run_id="base")
    same = run_defense(defense, data, run_id="same")
    return base, same


def _worse(run: Run, *, every: int = 4) -> Run:
    """Let every ``every``-th blocked attack through: a genuinely worse defense."""
    outcomes = []
    flipped = 0
    for s, o in run.pairs():
        if s.label == "attack" and o.verdict is not None and o.verdict.blocked:
            flipped += 1
            if flipped % every == 0:
                o = replace(o, verdict=Verdict(False, 0.0))
        outcomes.append(o)
    return replace(run, id="worse", outcomes=tuple(outcomes))


def _write(tmp_path: Path, *runs: Run) -> list[str]:
    return [str(save_run(r, tmp_path / f"{r.id}.json")) for r in runs]


def test_an_equivalent_candidate_passes(runs: tuple[Run, Run], tmp_path: Path) -> None:
    base, same = runs
    cand, baseline = _write(tmp_path, same, base)
    junit = tmp_path / "junit.xml"
    result = runner.invoke(
        app,
        ["gate", cand, "--baseline", baseline, "--max-fpr", "0.1", "--junit", str(junit)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "gate passed: 3 checks" in result.output
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("failures") == "0"
    assert [c.get("name") for c in suite.iter("testcase")] == [
        "non_inferiority.block_rate",
        "non_inferiority.false_positive_rate",
        "limit.max_fpr",
    ]


def test_a_worse_candidate_fails_and_junit_says_which_check(
    runs: tuple[Run, Run], tmp_path: Path
) -> None:
    base, _ = runs
    cand, baseline = _write(tmp_path, _worse(base), base)
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    result = runner.invoke(
        app,
        ["gate", cand, "--baseline", baseline, "--junit", str(junit), "--summary", str(summary)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 1, result.output
    assert "FAIL non_inferiority.block_rate" in " ".join(result.output.split())
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["non_inferiority.block_rate"].find("failure") is not None
    assert cases["non_inferiority.false_positive_rate"].find("failure") is None
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("### shieldbench gate: ❌ failed (1 of 2 checks)")
    assert "| block rate not lower than the baseline's by 2 points or more |" in text


def test_history_references_name_the_baseline(runs: tuple[Run, Run], tmp_path: Path) -> None:
    from shieldbench.store import open_store

    base, same = runs
    db = f"sqlite:///{tmp_path / 'h.db'}"
    store = open_store(db)
    store.add_run(base, tags={"release": "1.0"}, git=(None, None))
    store.add_run(_worse(base), git=(None, None))
    store.close()
    (cand,) = _write(tmp_path, same)
    ok = runner.invoke(app, ["gate", cand, "--baseline", "tag:release=1.0", "--db", db])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["gate", "worse", "--baseline", "base", "--db", db, "--margin", "0"])
    assert bad.exit_code == 1, bad.output
    assert "no_regression.block_rate" in bad.output


@pytest.mark.slow
def test_bad_input_exits_2_with_one_line(runs: tuple[Run, Run], tmp_path: Path) -> None:
    base, _ = runs
    other = run_defense(build_defense("pattern"), load_dataset("builtin:smoke"), run_id="o")
    cand, baseline = _write(tmp_path, other, base)
    env = {**os.environ, "COLUMNS": "500"}
    for args, message in (
        ([cand, "--baseline", baseline], "the gate compares runs on the same data"),
        ([cand, "--baseline", str(tmp_path / "nope.json")], "nope.json: run file not found"),
        ([baseline, "--baseline", baseline, "--margin", "1.5"], "--margin must be in [0, 1)"),
        (
            [baseline, "--baseline", "tag:x=y", "--db", str(tmp_path / "none.db")],
            "no history here yet",
        ),
    ):
        done = subprocess.run(
            [sys.executable, "-c", "from shieldbench.cli import main; main()", "gate", *args],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_mid_p_matches_its_definition_and_is_below_the_exact_p() -> None:
    for table in (PairedTable(40, 1, 9, 50), PairedTable(40, 3, 3, 50), PairedTable(1, 0, 0, 1)):
        d, x = table.discordant, table.only_a
        if d == 0:
            assert mid_p_mcnemar(table, worse_is_more_a=False) == 1.0
            continue
        exact = stats.binomtest(x, d, 0.5, alternative="less").pvalue
        expected = exact - 0.5 * stats.binom.pmf(x, d, 0.5)
        assert mid_p_mcnemar(table, worse_is_more_a=False) == pytest.approx(expected)
        assert mid_p_mcnemar(table, worse_is_more_a=False) < exact
        upper = stats.binomtest(x, d, 0.5, alternative="greater").pvalue
        assert mid_p_mcnemar(table, worse_is_more_a=True) == pytest.approx(
            upper - 0.5 * stats.binom.pmf(x, d, 0.5)
        )


def test_limits_use_the_interval_bound_unless_point(runs: tuple[Run, Run]) -> None:
    base, same = runs
    rate = sum(
        o.verdict is not None and o.verdict.blocked for s, o in base.pairs() if s.is_attack
    ) / sum(s.is_attack for s in base.samples)
    at_point = GateSettings(min_tpr=rate - 0.001)
    (check,) = [c for c in run_gate(same, base, at_point).checks if c.name == "limit.min_tpr"]
    assert not check.passed  # the lower bound is below the point
    point = replace(at_point, point=True)
    (check,) = [c for c in run_gate(same, base, point).checks if c.name == "limit.min_tpr"]
    assert check.passed


def test_latency_ratio_flags_a_slower_candidate(runs: tuple[Run, Run]) -> None:
    base, _ = runs
    slow = replace(
        base,
        id="slow",
        outcomes=tuple(
            o if o.latency_ms is None else replace(o, latency_ms=o.latency_ms * 3)
            for o in base.outcomes
        ),
    )
    settings = GateSettings(max_latency_ratio=1.5)
    (check,) = [c for c in run_gate(slow, base, settings).checks if c.name == "latency.ratio"]
    assert not check.passed
    assert check.value == pytest.approx(3.0)
    copy = replace(base, id="copy")  # the same figures; the run itself is refused
    (check,) = [c for c in run_gate(copy, base, settings).checks if c.name == "latency.ratio"]
    assert check.passed
    assert check.value == pytest.approx(1.0)


def test_errors_count_against_the_error_rate_limit(runs: tuple[Run, Run]) -> None:
    base, _ = runs
    broken = replace(
        base,
        id="broken",
        outcomes=tuple(
            Outcome(o.sample_id, None, "error", error="boom") if i % 10 == 0 else o
            for i, o in enumerate(base.outcomes)
        ),
    )
    result = run_gate(broken, base, GateSettings(max_error_rate=0.05))
    (check,) = [c for c in result.checks if c.name == "limit.max_error_rate"]
    assert not check.passed
    assert check.value == pytest.approx(
        sum(i % 10 == 0 for i in range(len(base.outcomes))) / len(base.outcomes)
    )
