"""``run --resume`` keeps the interrupted benchmark's run settings for every pair.

It also reuses a finished pair only when its dataset hash, defense spec and
defense version still match.

Before, a resume with other flags (``--error-policy``, ``--concurrency``) ran the
remaining pairs with the new settings and the finished ones kept the old: the
benchmark mixed error policies and then failed at the report. Now the settings in
``benchmark.json`` are used, and a flag that contradicts them is refused up front.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.runio import load_run

runner = CliRunner()


@pytest.fixture
def guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A defense module that raises KeyboardInterrupt after STOP_AFTER calls."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    counter = tmp_path / "calls.txt"
    (pkg / "resume_guard.py").write_text(
        textwrap.dedent(
            f"""
            import os
            from shieldbench.types import Verdict

            COUNTER = {str(counter)!r}

            class Guard:
                name = "resume-guard"
                version = os.environ.get("GUARD_VERSION")

                def check(self, text):
                    with open(COUNTER, "a") as fh:
                        fh.write("x")
                    with open(COUNTER) as fh:
                        calls = len(fh.read())
                    stop = int(os.environ.get("STOP_AFTER", "0"))
                    if stop and calls > stop:
                        raise KeyboardInterrupt
                    return Verdict(blocked="ignore" in text.lower(), score=0.5)

            def build():
                return Guard()
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(pkg))
    yield counter
    sys.modules.pop("resume_guard", None)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    rows = [{"text": f"ignore rule {i}", "label": 1} for i in range(6)]
    rows += [{"text": f"hello there {i}", "label": 0} for i in range(6)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _interrupted(data: Path, out: Path) -> list[str]:
    """Start a two-pair benchmark that stops inside the second pair; return its args."""
    args = ["run", "-d", "pattern", "-d", "python:resume_guard:build", "-D", f"jsonl:{data}"]
    args += ["--out", str(out), "--warmup", "0"]
    first = runner.invoke(
        app,
        [*args, "--concurrency", "1", "--error-policy", "fail_open"],
        env={"STOP_AFTER": "5"},
    )
    assert first.exit_code != 0  # interrupted
    finished = [p.name for p in (out / "runs").glob("*.json")]
    assert len(finished) == 1
    assert finished[0].startswith("00-pattern--")
    return args


@pytest.mark.slow
def test_resume_without_flags_uses_the_stored_settings(
    data: Path, tmp_path: Path, guard: Path
) -> None:
    out = tmp_path / "out"
    args = _interrupted(data, out)
    resumed = runner.invoke(app, [*args, "--resume"], env={"STOP_AFTER": "0"})
    assert resumed.exit_code == 0, resumed.output
    runs = [load_run(p) for p in sorted((out / "runs").glob("*.json"))]
    assert len(runs) == 2
    for run in runs:
        assert run.config.error_policy == "fail_open"
        assert run.config.concurrency == 1
        assert len(run.outcomes) == len(run.samples) == 12
    assert (out / "report.md").is_file()


@pytest.mark.slow
def test_resume_refuses_a_changed_setting(data: Path, tmp_path: Path, guard: Path) -> None:
    out = tmp_path / "out"
    args = _interrupted(data, out)
    calls = len(guard.read_text())
    changed = runner.invoke(
        app, [*args, "--resume", "--error-policy", "exclude"], env={"STOP_AFTER": "0"}
    )
    assert changed.exit_code != 0
    message = " ".join(str(changed.exception).split())
    assert "error_policy='fail_open' (asked: 'exclude')" in message
    assert "resume without changing the run settings" in message
    assert len(guard.read_text()) == calls  # nothing was screened
    assert len(list((out / "runs").glob("*.json"))) == 1
    # The same value as stored is not a change.
    same = runner.invoke(
        app, [*args, "--resume", "--error-policy", "fail_open"], env={"STOP_AFTER": "0"}
    )
    assert same.exit_code == 0, same.output


@pytest.mark.slow
def test_resume_reuses_a_finished_pair_only_for_the_same_defense_version(
    data: Path, tmp_path: Path, guard: Path
) -> None:
    out = tmp_path / "out"
    args = ["run", "-d", "python:resume_guard:build", "-D", f"jsonl:{data}"]
    args += ["--out", str(out), "--warmup", "0"]
    first = runner.invoke(app, args, env={"STOP_AFTER": "0", "GUARD_VERSION": "1"})
    assert first.exit_code == 0, first.output
    calls = len(guard.read_text())
    again = runner.invoke(app, [*args, "--resume"], env={"STOP_AFTER": "0", "GUARD_VERSION": "1"})
    assert again.exit_code == 0, again.output
    assert "already done" in again.output
    assert len(guard.read_text()) == calls
    sys.modules.pop("resume_guard", None)  # the new version is read when the module loads
    newer = runner.invoke(app, [*args, "--resume"], env={"STOP_AFTER": "0", "GUARD_VERSION": "2"})
    assert newer.exit_code == 0, newer.output
    assert "already done" not in newer.output
    assert len(guard.read_text()) == calls + 12
    (run_file,) = (out / "runs").glob("*.json")
    assert load_run(run_file).defense.version == "2"
