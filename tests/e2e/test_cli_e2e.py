"""``shieldbench run --target ... --judge ...`` and ``shieldbench judges`` through the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shieldbench.cli import app, main
from shieldbench.runio import load_run, save_run

runner = CliRunner()
CORE_SAMPLE = "sample(builtin:core, n=120, seed=0)"


def _run(args: list[str]) -> Any:
    return runner.invoke(app, args, catch_exceptions=False)


def _main(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """The real entry point (library errors -> one line, exit code 2): (code, output)."""
    monkeypatch.setattr(sys, "argv", ["shieldbench", *args])
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as stop:
        main()
    captured = capsys.readouterr()
    return int(stop.value.code or 0), " ".join((captured.out + captured.err).split())


@pytest.mark.slow
def test_run_end_to_end_prints_the_table_and_writes_the_reports(
    chat_server: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "bench"
    accuracy = tmp_path / "refusal.json"
    evaluated = _run(["judges", "evaluate", "--judge", "refusal(embed=false)", "--json"])
    assert evaluated.exit_code == 0, evaluated.output
    accuracy.write_text(evaluated.output, encoding="utf-8")
    assert json.loads(evaluated.output)["sensitivity"]["n"] > 20
    result = _run(
        [
            "run",
            "-d",
            "pattern",
            "-d",
            "none",
            "-D",
            CORE_SAMPLE,
            "--target",
            f"openai:scripted@{chat_server.url}",
            "--judge",
            "refusal(embed=false)",
            "--judge",
            "leak",
            "--output-defense",
            "secrets",
            "--judge-accuracy",
            str(accuracy),
            "--warmup",
            "0",
            "--out",
            str(out),
        ]
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "end to end: target" in text
    assert "McNemar on end-to-end success, pattern vs none" in text
    assert "corrected" in text
    runs = sorted((out / "runs").glob("*.json"))
    assert len(runs) == 2
    loaded = [load_run(p) for p in runs]
    canaries = {r.end_to_end["canary"] for r in loaded}
    assert len(canaries) == 1  # one canary for the whole benchmark
    (canary,) = canaries
    prompts = {
        m["content"] for r in chat_server.requests for m in r["messages"] if m["role"] == "system"
    }
    assert all(canary in p for p in prompts)
    outcomes = {str(o.end_to_end["outcome"]) for r in loaded for o in r.outcomes if o.end_to_end}
    assert {
        "stopped_by_defense",
        "attack_succeeded",
        "refused_by_model",
        "benign_answered",
    } <= outcomes
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert {r["label"] for r in report["end_to_end"]["runs"]} == {"pattern", "none"}
    assert report["end_to_end"]["mcnemar"][0]["table"]["n"] > 0
    assert "## End to end (target + judges)" in (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert '<section id="end-to-end">' in html
    manifest = json.loads((out / "benchmark.json").read_text(encoding="utf-8"))
    assert manifest["end_to_end"]["canary"] == canary
    # resuming with other judges is refused before anything runs
    code, output = _main(
        [
            "run",
            "-d",
            "pattern",
            "-d",
            "none",
            "-D",
            CORE_SAMPLE,
            "--out",
            str(out),
            "--resume",
            "--target",
            f"openai:scripted@{chat_server.url}",
            "--judge",
            "leak",
        ],
        monkeypatch,
        capsys,
    )
    assert code == 2
    assert "Resume with the same --target/--judge" in output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target", "openai:m@http://127.0.0.1:9/v1", "--judge", "refusl"], "no judge named"),
        (["--judge", "leak"], "need a --target"),
        (["--target", "openai:m@http://127.0.0.1:9/v1"], "at least one --judge"),
        (
            [
                "--target",
                "openai(m@http://127.0.0.1:9/v1, api_key_env=SB_NOPE_KEY)",
                "--judge",
                "leak",
            ],
            "SB_NOPE_KEY is not set",
        ),
        (["--target", "gpt:x", "--judge", "leak"], "no target named"),
        (
            ["--target", "openai:m@http://127.0.0.1:9/v1", "--judge", "leak", "--screen", "x"],
            "--screen",
        ),
    ],
)
@pytest.mark.slow
def test_bad_end_to_end_options_fail_before_anything_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    monkeypatch.delenv("SB_NOPE_KEY", raising=False)
    out = tmp_path / "never"
    args = ["run", "-d", "pattern", "-D", "builtin:smoke", "--out", str(out), *extra]
    code, output = _main(args, monkeypatch, capsys)
    assert code == 2
    assert message in output
    assert "Traceback" not in output
    assert not out.exists()


@pytest.mark.slow
def test_config_file_end_to_end_section(chat_server: Any, tmp_path: Path) -> None:
    config = tmp_path / "e2e.yaml"
    config.write_text(
        "defenses: [pattern]\ndatasets: ['builtin:smoke']\nrun: {warmup: 0}\n"
        f"end_to_end:\n  target: openai:scripted@{chat_server.url}\n"
        "  judges: [leak, secrets]\n  rule: any\n  screen: last_user\n"
        f"out: {tmp_path / 'out'}\n",
        encoding="utf-8",
    )
    result = _run(["run", "--config", str(config)])
    assert result.exit_code == 0, result.output
    (run_file,) = (tmp_path / "out" / "runs").glob("*.json")
    run = load_run(run_file)
    assert run.end_to_end["judges"] == ["leak", "secrets"]
    assert run.end_to_end["screen"] == "last_user"


def test_judges_and_targets_lists_and_evaluate_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = _run(["judges", "list"])
    assert listed.exit_code == 0
    for name in ("refusal", "leak", "secrets", "pii", "llm-judge", "python"):
        assert name in listed.output
    assert "openai" in _run(["targets", "list"]).output
    text = _run(["judges", "evaluate", "--judge", "pii"])
    assert text.exit_code == 0
    assert "sensitivity 100.0%" in text.output
    code, output = _main(
        ["judges", "evaluate", "--judge", "llm-judge:ollama/x"], monkeypatch, capsys
    )
    assert code == 2
    assert "no labelled set ships" in output


@pytest.mark.slow
def test_compare_flags_a_drift_of_the_behavioural_profile(tmp_path: Path) -> None:
    from shieldbench.datasets import load_dataset
    from shieldbench.defenses import build_defense
    from shieldbench.engine import EndToEnd, run_defense
    from shieldbench.judges import build_judge
    from shieldbench.runio import save_run
    from shieldbench.targets import FunctionTarget
    from shieldbench.types import RunConfig

    def helpful(messages: Any) -> str:
        return "Sure, here is a detailed answer to your question about the product."

    def grumpy(messages: Any) -> str:
        text = str(messages[-1]["content"])
        return "I'm sorry, but I can't help with that." if len(text) % 2 else helpful(messages)

    data = load_dataset("sample(builtin:core, n=160, seed=1)")
    paths = []
    for name, fn in (("helpful", helpful), ("grumpy", grumpy)):
        plan = EndToEnd(FunctionTarget(fn, name=name), (build_judge("refusal(embed=false)"),))
        run = run_defense(
            build_defense("none"),
            data,
            config=RunConfig(warmup=0),
            end_to_end=plan,
            defense_spec="none",
        )
        paths.append(str(save_run(run, tmp_path / f"{name}.json")))
    result = runner.invoke(
        app,
        ["compare", *paths, "--out", str(tmp_path / "cmp"), "--json", str(tmp_path / "cmp.json")],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "behavioural profile of benign answers" in result.output
    drift = json.loads((tmp_path / "cmp.json").read_text(encoding="utf-8"))["profile_drift"][0]
    flagged = {f["name"] for f in drift["figures"] if f["drifted"]}
    assert "refused" in flagged
    assert "leak" not in flagged


def test_attack_sends_its_bypasses_to_the_target(chat_server: Any, tmp_path: Path) -> None:
    out = tmp_path / "attack"
    result = runner.invoke(
        app,
        [
            "attack",
            "-d",
            "pattern",
            "-D",
            "builtin:smoke",
            "--out",
            str(out),
            "--budget",
            "60",
            "--rounds",
            "1",
            "--target",
            f"openai:scripted@{chat_server.url}",
            "--judge",
            "refusal(embed=false)",
            "--judge",
            "leak",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    run = load_run(out / "end_to_end.json")
    bypasses = [line for line in (out / "bypasses.jsonl").read_text().splitlines() if line]
    assert len(run.samples) == len(bypasses) > 0
    assert all(o.end_to_end and o.end_to_end["reached_target"] for o in run.outcomes)
    assert "end to end: target" in result.output


@pytest.mark.slow
def test_a_large_end_to_end_run_is_a_parquet_run_file_with_every_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI no longer forces JSON for end-to-end runs: Parquet keeps their records."""
    import shieldbench.benchmark._folder as folder

    monkeypatch.setattr(folder, "COLUMNAR_FROM", 10)  # "large" from 10 samples
    out = tmp_path / "bench"
    args = ["run", "-d", "pattern", "-D", "sample(builtin:core, n=30, seed=0)", "--target",
            "python(shieldbench.targets._examples:echo)", "--judge", "leak", "--warmup", "0",
            "--out", str(out), "--no-store"]  # fmt: skip
    result = _run(args)
    assert result.exit_code == 0, result.output
    (path,) = (out / "runs").glob("*.parquet")
    run = load_run(path)
    assert run.end_to_end["target"]["spec"] == "python(shieldbench.targets._examples:echo)"
    assert "profile" in run.end_to_end
    assert all(o.end_to_end is not None for o in run.outcomes if o.is_ok)
    assert sum(o.end_to_end is not None for o in run.outcomes) > 0
    again = _run([*args, "--resume"])  # the finished run file is found and reused
    assert again.exit_code == 0, again.output
    assert "already done, reusing" in " ".join(again.output.split())
    report = _run(["report", str(path), "--out", str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    # a run folder from before (the large end-to-end run as JSON) is still resumed
    save_run(run, path.with_suffix(".json"))
    path.unlink()
    older = _run([*args, "--resume"])
    assert older.exit_code == 0, older.output
    assert f"reusing{path.with_suffix('.json')}" in "".join(older.output.split())
