"""``shieldbench report`` and write_reports: files, places, formats, bad input."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.attacks import AttackResult, save_attack
from shieldbench.cli import app
from shieldbench.cli._report import output_id, parse_formats
from shieldbench.errors import ConfigError, ShieldbenchError
from shieldbench.reports import build_report, write_reports
from shieldbench.runio import save_run
from shieldbench.types import Run

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def run_files(tmp_path: Path, run_a: Run, run_b: Run) -> list[Path]:
    runs = tmp_path / "bench" / "runs"
    return [save_run(run_a, runs / "00-a.json"), save_run(run_b, runs / "01-b.json")]


def test_one_run_renders_beside_it(run_files: list[Path]) -> None:
    result = runner.invoke(app, ["report", str(run_files[0])], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    folder = run_files[0].with_name("00-a-report")
    assert sorted(p.name for p in folder.iterdir()) == ["report.html", "report.json", "report.md"]
    out = _flat(result.output)
    assert f"open the HTML report: {folder / 'report.html'}" in out
    data = json.loads((folder / "report.json").read_text())
    assert data["scope"] == "run"
    assert data["runs"][0]["run_id"] == "r-a"
    # A runs/*.json glob still finds only the runs.
    assert sorted(p.name for p in run_files[0].parent.glob("*.json")) == ["00-a.json", "01-b.json"]


def test_several_runs_compare_into_a_stable_folder(
    run_files: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["report", *map(str, run_files), "--format", "json", "--format", "md"]
    first = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert first.exit_code == 0, first.output
    folder = tmp_path / "reports" / f"report-{output_id(['r-a', 'r-b'])}"
    assert sorted(p.name for p in folder.iterdir()) == ["report.json", "report.md"]
    data = json.loads((folder / "report.json").read_text())
    assert data["scope"] == "benchmark"
    assert data["groups"][0]["comparison"]["runs"] == ["keyword", "<i>weak</i>|spec"]
    assert "open the HTML report" not in first.output  # no HTML asked for


def test_options_reach_the_report(run_files: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "custom"
    result = runner.invoke(
        app,
        [
            "report",
            *map(str, run_files),
            "--out",
            str(out),
            "-f",
            "json",
            "--title",
            "Nightly <b>",
            "--margin",
            "0.05",
            "--examples",
            "1",
            "--policy",
            "exclude",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "report.json").read_text())
    assert data["title"] == "Nightly <b>"
    assert data["settings"]["margin"] == 0.05
    assert data["settings"]["examples_per_category"] == 1
    assert data["runs"][0]["errors"]["counted_as"] == "excluded"


def test_attack_json_renders_too(attack_result: AttackResult, tmp_path: Path) -> None:
    path = save_attack(attack_result, tmp_path / "attack.json")
    result = runner.invoke(app, ["report", str(path), "--format", "html,md"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "attack-report"
    assert sorted(p.name for p in folder.iterdir()) == ["report.html", "report.md"]
    assert "## Adaptive attack on keyword" in (folder / "report.md").read_text()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a run or attack file"),
        ('{"kind": "shieldbench.report", "schema_version": 1}', "is not a run or an attack"),
        ('{"kind": "shieldbench.run", "schema_version": 7}', "schema_version 7"),
    ],
)
def test_bad_inputs_say_what_is_wrong(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = runner.invoke(app, ["report", str(bad)])
    assert result.exit_code != 0
    assert isinstance(result.exception, ShieldbenchError)
    assert message in str(result.exception)
    assert str(bad) in str(result.exception)  # names the file
    assert not (tmp_path / "bad-report").exists()


def test_bad_formats_and_missing_files(run_files: list[Path], tmp_path: Path) -> None:
    bad = runner.invoke(app, ["report", str(run_files[0]), "--format", "pdf"])
    assert bad.exit_code != 0
    assert isinstance(bad.exception, ConfigError)
    assert "choose from json, md, html" in str(bad.exception)
    missing = runner.invoke(app, ["report", str(tmp_path / "nope.json")])
    assert missing.exit_code != 0
    assert "no such file" in str(missing.exception)
    assert parse_formats(None) == ("json", "md", "html")
    assert parse_formats(["markdown", "HTML,md"]) == ("md", "html")


def test_write_reports_files_and_validation(run_a: Run, tmp_path: Path) -> None:
    report = build_report([run_a])
    paths = write_reports(report, tmp_path / "new" / "dir", formats=("md",), stem="nightly")
    assert list(paths) == ["md"]
    assert paths["md"].name == "nightly.md"
    mode = stat.S_IMODE(paths["md"].stat().st_mode)
    assert mode & 0o044 == 0o044  # readable by others: reports are meant to be shared
    assert not [p for p in paths["md"].parent.iterdir() if p.name.startswith(".")]
    with pytest.raises(ConfigError, match="unknown"):
        write_reports(report, tmp_path, formats=("pdf",))
    with pytest.raises(ConfigError, match="unknown"):
        write_reports(report, tmp_path, formats=())
    for stem in ("", "../x", ".hidden", "a/b"):
        with pytest.raises(ConfigError, match="plain file name"):
            write_reports(report, tmp_path, stem=stem)


@pytest.mark.slow
def test_attack_command_writes_the_three_reports(tmp_path: Path) -> None:
    out = tmp_path / "attack"
    args = ["attack", "--defense", "pattern", "--dataset", "builtin:smoke", "--budget", "30"]
    result = runner.invoke(app, [*args, "--rounds", "2", "--out", str(out)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    for name in ("report.json", "report.md", "report.html", "attack.json"):
        assert (out / name).is_file(), name
    assert f"open the HTML report: {out / 'report.html'}" in _flat(result.output)
    data = json.loads((out / "report.json").read_text())
    assert data["scope"] == "attack"
    assert data["attack"] == json.loads((out / "attack.json").read_text())


def test_write_reports_into_a_file_path_says_so(run_a: Run, tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("a file, not a folder")
    with pytest.raises(ConfigError, match="cannot write the reports to"):
        write_reports(build_report([run_a]), blocker, formats=("md",))
