"""``shieldbench plan`` and ``shieldbench compare`` through the real typer app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.cli import app, main
from shieldbench.cli._stats import format_rate
from shieldbench.metrics import compare_runs, rate, required_sample_size
from shieldbench.metrics._testing import make_run
from shieldbench.runio import load_run, save_run

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_plan_prints_samples_per_category_and_a_table() -> None:
    result = runner.invoke(app, ["plan", "--margin", "0.05", "--rate", "0.1", "--categories", "16"])
    assert result.exit_code == 0, result.output
    out = _flat(result.output)
    n = required_sample_size(margin=0.05, rate=0.1)
    assert f"each category needs {n} samples" in out
    assert f"16 categories x {n} = {16 * n} samples" in out
    # The table holds the worst case at ±5 points: 50% -> required_sample_size(0.05, 0.5).
    assert str(required_sample_size(margin=0.05, rate=0.5)) in out
    assert str(required_sample_size(margin=0.01, rate=0.01)) in out


def test_plan_wald_and_bad_options() -> None:
    wald = runner.invoke(app, ["plan", "--margin", "0.05", "--rate", "0.5", "--method", "wald"])
    assert wald.exit_code == 0
    assert "needs 385 samples" in _flat(wald.output)
    bad = runner.invoke(app, ["plan", "--margin", "0.05", "--method", "exact"])
    assert bad.exit_code != 0


@pytest.fixture
def run_files(tmp_path: Path) -> list[Path]:
    n = 120
    strong = [("inj", True, True, 0.9)] * n + [("chat", False, False, 0.1)] * n
    weak = [("inj", True, i % 3 == 0, 0.6 if i % 3 == 0 else 0.3) for i in range(n)]
    weak += [("chat", False, False, 0.2)] * n
    paths = []
    for name, rows in (("strong", strong), ("[red]weak[/red]", weak)):
        path = tmp_path / f"{len(paths)}.json"
        save_run(make_run(rows, run_id=f"r{len(paths)}", spec=name), path)
        paths.append(path)
    return paths


@pytest.mark.slow
def test_compare_prints_leaderboard_and_verdicts(run_files: list[Path], tmp_path: Path) -> None:
    out_json = tmp_path / "cmp" / "comparison.json"
    reports = tmp_path / "reports"
    result = runner.invoke(
        app,
        [
            "compare",
            *map(str, run_files),
            "--margin",
            "0.02",
            "--json",
            str(out_json),
            "--out",
            str(reports),
        ],
        env={"COLUMNS": "250"},
    )
    # 'weak' is not non-inferior to 'strong': the gate fails, after writing everything.
    assert result.exit_code == 1, result.output
    out = _flat(result.output)
    assert "gate failed: 2 of 2 non-inferiority tests" in out
    assert "Leaderboard" in out
    assert "Pairwise" in out
    assert "Non-inferiority" in out
    assert "[red]weak[/red]" in out  # labels are data, printed literally
    assert "a is" in out  # the verdict column, "better" / "worse" / "n.s." in the terminal
    assert " better " in out
    assert format_rate(rate(120, 120)) in out  # 100.0% [96.9–100.0] n=120
    assert format_rate(rate(40, 120)) in out
    saved = json.loads(out_json.read_text())
    assert saved.pop("flips")[0]["a"] == "strong"  # tests/cli/test_compare_flips.py
    expected = compare_runs([load_run(p) for p in run_files], margin=0.02).to_dict()
    assert saved == json.loads(json.dumps(expected))
    assert saved["pairs"][0]["verdicts"][0]["verdict"] == "significantly better"
    # The reports hold the same comparison (non-inferiority included) in all three formats.
    assert sorted(p.name for p in reports.iterdir()) == ["report.html", "report.json", "report.md"]
    assert str(reports / "report.html") in out
    report = json.loads((reports / "report.json").read_text())
    assert report["groups"][0]["comparison"] == saved


def test_compare_refuses_different_datasets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a = save_run(make_run([("c", True, True)], dataset_hash="sha256:aa"), tmp_path / "a.json")
    b = save_run(make_run([("c", True, True)], dataset_hash="sha256:bb"), tmp_path / "b.json")
    monkeypatch.setattr("sys.argv", ["shieldbench", "compare", str(a), str(b)])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    assert "content hash" in _flat(capsys.readouterr().err)


@pytest.mark.slow
def test_compare_takes_folders_of_run_files(run_files: list[Path], tmp_path: Path) -> None:
    # A `run --out` folder (its runs/*.json) or a plain folder of run files; a folder used
    # to reach load_run and end in a traceback (IsADirectoryError).
    out = tmp_path / "bench"
    (out / "runs").mkdir(parents=True)
    for p in run_files:
        p.rename(out / "runs" / p.name)
    (out / "report.json").write_text("{}")  # beside runs/, not a run file: ignored
    for folder in (out, out / "runs"):
        result = runner.invoke(
            app, ["compare", str(folder), "--out", str(tmp_path / "r")], env={"COLUMNS": "250"}
        )
        assert result.exit_code == 0, result.output
        assert "Leaderboard" in result.output
        assert "[red]weak[/red]" in _flat(result.output)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["compare", str(empty), str(out)])
    assert result.exit_code != 0
    assert "without run files" in str(result.exception)  # main() prints it as one line


def test_compare_needs_two_runs_and_valid_options(run_files: list[Path]) -> None:
    one = runner.invoke(app, ["compare", str(run_files[0])])
    assert one.exit_code != 0
    bad = runner.invoke(app, ["compare", *map(str, run_files), "--rank-by", "speed"])
    assert bad.exit_code != 0
