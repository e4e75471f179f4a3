"""``shieldbench calibrate`` and ``compare --by`` through the real typer app."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.cli._stats import format_rate
from shieldbench.datasets import load_dataset
from shieldbench.datasets._dataset import Dataset, content_hash
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense
from shieldbench.errors import ConfigError
from shieldbench.metrics import (
    calibrate_threshold,
    compare_groups,
    operating_point,
    score_arrays,
    security_utility_tradeoff,
)
from shieldbench.metrics._testing import make_run
from shieldbench.runio import load_run, save_run
from shieldbench.types import DefenseInfo, Run, RunConfig

runner = CliRunner()
WIDE = {"COLUMNS": "250"}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), env=WIDE)


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``pattern`` on the two halves of builtin:smoke: calibrate on one, check on the other."""
    folder = tmp_path_factory.mktemp("smoke")
    samples = load_dataset("builtin:smoke").samples
    paths = []
    for name, part in (("smoke-even", samples[0::2]), ("smoke-odd", samples[1::2])):
        data = Dataset(name, tuple(part), content_hash(part))
        run = run_defense(
            build_defense("pattern"), data, config=RunConfig(warmup=0), defense_spec="pattern"
        )
        paths.append(save_run(run, folder / f"{name}.json"))
    return paths[0], paths[1]


def test_calibrate_on_one_half_and_check_on_the_other(
    smoke_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    cal, chk = smoke_runs
    out_json = tmp_path / "c" / "calibration.json"
    result = _invoke(
        "calibrate", str(cal), "--target-fpr", "0.1", "--check", str(chk), "--json", str(out_json)
    )
    assert result.exit_code == 0, result.output
    expected = calibrate_threshold(load_run(cal), load_run(chk), target_fpr=0.1)
    assert expected.check is not None
    out = _flat(result.output)
    assert f"Threshold {expected.threshold:.6g} for FPR <= 0.1" in out
    for point in (expected.calibration, expected.check):
        assert format_rate(point.block_rate) in out
        assert format_rate(point.false_positive_rate) in out
    saved = json.loads(out_json.read_text())
    assert saved["kind"] == "shieldbench.calibration"
    assert saved["threshold"] == expected.threshold
    assert saved["calibration"] == expected.calibration.to_dict()
    [check] = saved["checks"]
    assert check["point"] == expected.check.to_dict()
    assert check["within_target"] == expected.check_within_target
    assert check["dataset"]["spec"] == "smoke-odd"
    assert saved["policy"] is None
    assert saved["warnings"] == []


def _scored(n_attacks: int, n_benign: int, **kw: Any) -> Run:
    """Attacks scored 0.5..1.0, benign 0.0..0.6: overlapping, so thresholds trade off."""
    rows = [("inj", True, True, 0.5 + 0.5 * i / n_attacks) for i in range(n_attacks)]
    rows += [("chat", False, False, 0.6 * i / n_benign) for i in range(n_benign)]
    return make_run(rows, **kw)


def test_policy_says_which_threshold_meets_it(tmp_path: Path) -> None:
    cal = save_run(_scored(100, 200, run_id="a"), tmp_path / "a.json")
    chk = save_run(_scored(50, 80, run_id="b", dataset_hash="sha256:other"), tmp_path / "b.json")
    for option, value, kw in (
        ("--max-fpr", "0.05", "max_fpr"),
        ("--min-tpr", "0.9", "min_block_rate"),
    ):
        out_json = tmp_path / f"{kw}.json"
        result = _invoke(
            "calibrate", str(cal), "--check", str(chk), option, value, "--json", str(out_json)
        )
        assert result.exit_code == 0, result.output
        trade = (
            security_utility_tradeoff(load_run(cal), max_fpr=float(value))
            if kw == "max_fpr"
            else security_utility_tradeoff(load_run(cal), min_block_rate=float(value))
        )
        assert trade.chosen is not None
        out = _flat(result.output)
        assert f"threshold {trade.chosen.threshold:.6g} meets it" in out
        assert format_rate(trade.chosen.block_rate) in out
        on_check = operating_point(*score_arrays(load_run(chk)), trade.chosen.threshold)
        assert format_rate(on_check.false_positive_rate) in out
        policy = json.loads(out_json.read_text())["policy"]
        assert policy["met"] is True
        assert policy["chosen"] == trade.chosen.to_dict()
        assert policy["checks"][0]["point"] == on_check.to_dict()


def test_policy_no_threshold_meets_says_how_close(tmp_path: Path) -> None:
    # 10 of 100 benign samples errored; fail_closed counts them blocked at every threshold,
    # so no threshold has FPR <= 5%: the best reaches 10%.
    rows: list[tuple[Any, ...]] = [("inj", True, True, 0.9)] * 50
    rows += [("chat", False, False, 0.1)] * 90 + [("chat", False, None)] * 10
    cal = save_run(make_run(rows), tmp_path / "closed.json")
    out_json = tmp_path / "p.json"
    result = _invoke(
        "calibrate", str(cal), "--target-fpr", "0.2", "--max-fpr", "0.05", "--json", str(out_json)
    )
    assert result.exit_code == 0, result.output
    out = _flat(result.output)
    assert "No threshold meets the policy" in out
    assert "lowest FPR any threshold reaches is 10.0%" in out
    assert "5.0 points above the limit" in out
    assert json.loads(out_json.read_text())["policy"]["met"] is False
    # Attacks that errored under fail_open are never blocked: at most 80% block rate.
    rows = [("inj", True, True, 0.9)] * 40 + [("inj", True, None)] * 10
    rows += [("chat", False, False, 0.1)] * 50
    cal = save_run(make_run(rows, policy="fail_open"), tmp_path / "open.json")
    result = _invoke("calibrate", str(cal), "--min-tpr", "0.95")
    assert result.exit_code == 0, result.output
    out = _flat(result.output)
    assert "No threshold meets the policy" in out
    assert "highest block rate any threshold reaches is 80.0%" in out


def _error(result: Any) -> str:
    assert result.exit_code != 0
    assert isinstance(result.exception, ConfigError), result.output
    return _flat(str(result.exception))


@pytest.mark.slow
def test_clear_errors(tmp_path: Path) -> None:
    good = save_run(_scored(10, 10), tmp_path / "good.json")
    unscored = save_run(make_run([("c", True, True), ("d", False, False)]), tmp_path / "u.json")
    attacks_only = save_run(make_run([("c", True, True, 0.9)] * 5), tmp_path / "att.json")
    other = save_run(_scored(10, 10, spec="another-defense"), tmp_path / "other.json")
    assert "2 of 2 verdicts without a score" in _error(_invoke("calibrate", str(unscored)))
    assert "without a score" in _error(_invoke("calibrate", str(good), "--check", str(unscored)))
    assert "no benign samples" in _error(_invoke("calibrate", str(attacks_only)))
    msg = _error(_invoke("calibrate", str(good), "--check", str(other)))
    assert "'another-defense'" in msg
    assert "refused" in msg
    assert "did you mean 0.05" in _error(_invoke("calibrate", str(good), "--target-fpr", "5"))
    assert "[0, 1]" in _error(_invoke("calibrate", str(good), "--target-fpr", "-0.1"))
    assert "[0, 1]" in _error(_invoke("calibrate", str(good), "--min-tpr", "nan"))
    both = _invoke("calibrate", str(good), "--max-fpr", "0.1", "--min-tpr", "0.9")
    assert "not both" in _error(both)
    assert "--policy" in _error(_invoke("calibrate", str(good), "--policy", "ignore"))
    # An attack-only check run is fine: its FPR is undefined (n=0), its block rate is not.
    ok = _invoke("calibrate", str(good), "--check", str(attacks_only))
    assert ok.exit_code == 0, ok.output
    assert "– n=0" in ok.output


def test_other_version_or_same_data_is_accepted_with_a_warning(tmp_path: Path) -> None:
    base = _scored(20, 20)
    cal = save_run(base, tmp_path / "a.json")
    newer = replace(base, id="newer", defense=DefenseInfo("test-defense", "test-defense", "2.0"))
    chk = save_run(newer, tmp_path / "b.json")
    out_json = tmp_path / "w.json"
    result = _invoke("calibrate", str(cal), "--check", str(chk), "--json", str(out_json))
    assert result.exit_code == 0, result.output
    warnings = json.loads(out_json.read_text())["warnings"]
    assert len(warnings) == 2
    assert "version 2.0 differs" in warnings[0]
    assert "not an independent check" in warnings[1]
    assert "warning:" in result.output


# --- compare --by ----------------------------------------------------------------------


def _three_runs(tmp_path: Path) -> list[Path]:
    n = 40
    rows_by_spec = {
        "strong": [("jb", True, True)] * n
        + [("leak", True, True)] * n
        + [("chat", False, False)] * n,
        "weak": [("jb", True, i % 4 == 0) for i in range(n)]
        + [("leak", True, True)] * n
        + [("chat", False, i % 8 == 0) for i in range(n)],
        "mid": [("jb", True, i % 2 == 0) for i in range(n)]
        + [("leak", True, i % 5 != 0) for i in range(n)]
        + [("chat", False, False)] * n,
    }
    return [
        save_run(make_run(rows, run_id=spec, spec=spec), tmp_path / f"{spec}.json")
        for spec, rows in rows_by_spec.items()
    ]


@pytest.mark.slow
def test_compare_by_category_holm_across_groups_and_pairs(tmp_path: Path) -> None:
    paths = _three_runs(tmp_path)
    out_json = tmp_path / "cmp.json"
    result = _invoke(
        "compare",
        *map(str, paths),
        "--by",
        "category",
        "--json",
        str(out_json),
        "--out",
        str(tmp_path / "reports"),
    )
    assert result.exit_code == 0, result.output
    out = _flat(result.output)
    assert "Pairwise by category" in out
    by_group = json.loads(out_json.read_text())["by_group"]
    assert by_group["by"] == "category"
    runs = [load_run(p) for p in paths]
    # Reference: the raw per-group McNemar p-values of every pair, Holm-corrected as one
    # family by statsmodels.
    raw = []
    for i in range(3):
        for j in range(i + 1, 3):
            for g in compare_groups(runs[i], runs[j], correction="none"):
                raw += [(runs[i].id, runs[j].id, g.group, m) for m in (g.attacks, g.benign)]
    tested = [r for r in raw if r[3].table.n]
    assert by_group["tests_in_family"] == len(tested) == 9  # 3 pairs x (jb, leak, chat)
    reference = multipletests([r[3].test.p_value for r in tested], method="holm")[1]
    got = {
        (c["a"], c["b"], c["group"], v["metric"]): v
        for c in by_group["comparisons"]
        for v in c["verdicts"]
    }
    for (a, b, group, metric), p_ref in zip(
        [(r[0], r[1], r[2], r[3].metric) for r in tested], reference, strict=True
    ):
        v = got[(a, b, group, metric)]
        assert v["p_adjusted"] == pytest.approx(p_ref, abs=1e-12)
        assert (v["verdict"] != "no significant difference") == (p_ref < 0.05)
    assert got[("strong", "weak", "jb", "block_rate")]["verdict"] == "significantly better"
    # One family over all pairs is stricter than each pair's own correction.
    own = compare_groups(runs[0], runs[1])
    own_p = {(g.group, v.metric): v.p_adjusted for g in own for v in g.verdicts}
    for (group, metric), p in own_p.items():
        assert got[("strong", "weak", group, metric)]["p_adjusted"] >= p - 1e-12
    # Rows without data (the FPR of an attack-only category) are not printed as tests.
    assert "(9 tests)" in out
    assert "9 rows without samples" in out
    rows = re.findall(r"│ (\w+)\s+│ (\w+)\s+│ (\w+)\s+│ (TPR|FPR)\s+│", result.output)
    assert sorted(rows) == sorted(
        (group, a, b, "FPR" if group == "chat" else "TPR")
        for group in ("chat", "jb", "leak")
        for a, b in (("strong", "weak"), ("strong", "mid"), ("weak", "mid"))
    )


def test_compare_by_refuses_an_unknown_dimension(tmp_path: Path) -> None:
    paths = _three_runs(tmp_path)
    result = _invoke("compare", *map(str, paths[:2]), "--by", "colour")
    assert "choose one of category, subcategory, tier, severity, source" in _error(result)
