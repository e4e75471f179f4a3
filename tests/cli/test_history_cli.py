"""``run`` records into the history; ``history`` lists, shows, exports (byte-identical)
and imports (idempotent); bad input exits 2 with nothing written; ``run --out`` is
locked against a second process, and a killed run's lock is taken over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.locking import LOCK_NAME, FolderLock
from shieldbench.store import open_store

runner = CliRunner()


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from shieldbench.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "300"},
    )


@pytest.mark.slow
def test_run_records_and_history_shows_exports_and_imports(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    out = tmp_path / "out"
    done = runner.invoke(
        app,
        [
            "run",
            "-d",
            "pattern",
            "-D",
            "builtin:smoke",
            "--out",
            str(out),
            "--db",
            db,
            "--tag",
            "release=1.2",
        ],
        env={"COLUMNS": "300"},
    )
    assert done.exit_code == 0, done.output
    assert "history: created" in done.output
    assert "history: 1 new of 1 recorded" in done.output
    listed = runner.invoke(app, ["history", "--db", db, "--tag", "release=1.2", "--json"])
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.output)
    assert row["defense"]["spec"] == "pattern"
    assert row["tags"] == {"release": "1.2"}
    assert row["source"] == "run"
    shown = runner.invoke(app, ["history", "show", "latest:pattern@builtin:smoke", "--db", db])
    assert json.loads(shown.output)["id"] == row["id"]
    exported = tmp_path / "exported.json"
    result = runner.invoke(
        app, ["history", "export", row["id"], "--out", str(exported), "--db", db]
    )
    assert result.exit_code == 0, result.output
    (original,) = (out / "runs").glob("*.json")
    assert exported.read_bytes() == original.read_bytes()
    again = runner.invoke(app, ["history", "import", str(out), "--db", db])
    assert again.exit_code == 0, again.output
    assert "imported 0 new of 1" in again.output
    other = tmp_path / "other.db"
    first = runner.invoke(app, ["history", "import", str(out), "--db", str(other)])
    assert "imported 1 new of 1" in first.output
    table = runner.invoke(app, ["history", "--db", str(other)], env={"COLUMNS": "300"})
    assert row["id"] in table.output
    assert "1 runs in" in table.output


@pytest.mark.slow
def test_no_store_records_nothing(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    done = runner.invoke(
        app,
        [
            "run",
            "-d",
            "pattern",
            "-D",
            "builtin:smoke",
            "--out",
            str(tmp_path / "o"),
            "--db",
            str(db),
            "--no-store",
        ],
    )
    assert done.exit_code == 0, done.output
    assert not db.exists()


@pytest.mark.slow
def test_the_default_history_is_under_the_working_directory(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SHIELDBENCH_DB"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from shieldbench.cli import main; main()",
            "run",
            "-d",
            "pattern",
            "-D",
            "builtin:smoke",
            "--out",
            "o",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={**env, "COLUMNS": "300"},
    )
    assert done.returncode == 0, done.stderr
    default = tmp_path / ".shieldbench" / "history.db"
    assert f"history: created {default}" in done.stderr
    with open_store(str(default)) as store:
        assert len(store.runs()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["history", "import", "{bad}"], "run schema_version 99 is not supported"),
        (["history", "export", "nope", "--out", "{tmp}/x.json"], "no stored run with id 'nope'"),
        (["history", "--since", "yesterday"], "--since 'yesterday': write a date"),
        (
            [
                "run",
                "-d",
                "pattern",
                "-D",
                "builtin:smoke",
                "--db",
                "postgresql://u@127.0.0.1:1/x",
                "--out",
                "{tmp}/o",
            ],
            "cannot open the history database",
        ),
        (
            ["run", "-d", "pattern", "-D", "builtin:smoke", "--tag", "oops", "--out", "{tmp}/o"],
            "--tag 'oops': write KEY=VALUE",
        ),
    ],
)
@pytest.mark.slow
def test_bad_input_exits_2_and_writes_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    db = tmp_path / "h.db"
    open_store(str(db)).close()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "shieldbench.run", "schema_version": 99}), "utf-8")
    before = db.read_bytes()
    filled = [a.replace("{bad}", str(bad)).replace("{tmp}", str(tmp_path)) for a in args]
    if "--db" not in filled:
        filled += ["--db", str(db)]
    done = _cli(*filled)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert db.read_bytes() == before
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "x.json").exists()


@pytest.mark.slow
def test_a_second_run_on_the_same_out_fails_fast(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FolderLock(out):
        start = time.monotonic()
        done = _cli("run", "-d", "pattern", "-D", "builtin:smoke", "--out", str(out), "--no-store")
        assert time.monotonic() - start < 60
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{out} is in use by another shieldbench run (pid {os.getpid()}" in done.stderr
    assert not (out / "benchmark.json").exists()


@pytest.mark.slow
def test_the_lock_of_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path;"
            " from shieldbench.locking import FolderLock;"
            " FolderLock(Path(sys.argv[1])).acquire(); print('locked', flush=True);"
            " time.sleep(600)",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "locked"
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=30)
    assert (out / LOCK_NAME).exists()  # left behind by the killed process
    done = _cli("run", "-d", "pattern", "-D", "builtin:smoke", "--out", str(out), "--no-store")
    assert done.returncode == 0, done.stderr
    assert f"took over the lock left by a run that is no longer running (pid {holder.pid}" in (
        " ".join(done.stderr.split())
    )
    assert not (out / LOCK_NAME).exists()  # released at the end


@pytest.mark.slow
def test_trend_marks_the_significant_change(tmp_path: Path) -> None:
    from dataclasses import replace
    from datetime import timedelta

    from shieldbench.datasets import load_dataset
    from shieldbench.defenses import build_defense
    from shieldbench.engine import run_defense
    from shieldbench.types import Verdict

    base = run_defense(build_defense("pattern"), load_dataset("builtin:core"), run_id="t0")
    worse = tuple(
        replace(o, verdict=Verdict(False, 0.0))
        if s.is_attack and o.verdict is not None and o.verdict.blocked and i % 2
        else o
        for i, (s, o) in enumerate(base.pairs())
    )
    db = str(tmp_path / "h.db")
    with open_store(db) as store:
        for k, outcomes in enumerate((base.outcomes, base.outcomes, worse)):
            later = base.started + timedelta(days=k)
            run = replace(base, id=f"t{k}", outcomes=outcomes, started=later, finished=later)
            store.add_run(run, tags={"build": str(k)}, git=(None, None))
    page = tmp_path / "trend.html"
    done = runner.invoke(
        app,
        [
            "history",
            "trend",
            "--defense",
            "pattern",
            "--dataset",
            "builtin:core",
            "--out",
            str(page),
            "--db",
            db,
        ],
    )
    assert done.exit_code == 0, done.output
    assert "trend of 3 runs (1 with a significant change)" in " ".join(done.output.split())
    text = page.read_text(encoding="utf-8")
    assert text.count("<svg") == 3
    assert "<script" not in text
    rows = text.split("<tr>")[2:]
    assert ["<td>block rate</td></tr>" in r for r in rows] == [False, False, True]
    missing = runner.invoke(
        app, ["history", "trend", "--defense", "x", "--dataset", "y", "--db", db]
    )
    assert missing.exit_code != 0


@pytest.mark.slow
def test_attack_records_its_result_and_import_takes_attack_files(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    out = tmp_path / "attack"
    done = runner.invoke(
        app,
        [
            "attack",
            "-d",
            "pattern",
            "-D",
            "builtin:smoke",
            "--budget",
            "20",
            "--rounds",
            "1",
            "--out",
            str(out),
            "--db",
            db,
        ],
    )
    assert done.exit_code == 0, done.output
    attack_id = json.loads((out / "attack.json").read_text(encoding="utf-8"))["meta"]["id"]
    with open_store(db) as store:
        assert store.attack_ids() == [attack_id]
        assert store.get_attack(attack_id)["kind"] == "shieldbench.attack"
    other = str(tmp_path / "other.db")
    imported = runner.invoke(app, ["history", "import", str(out / "attack.json"), "--db", other])
    assert "imported 1 new of 1" in imported.output


def test_import_refuses_an_attack_file_with_a_nan_naming_the_file_and_field(
    tmp_path: Path,
) -> None:
    out = tmp_path / "attack"
    args = ["attack", "-d", "pattern", "-D", "builtin:smoke", "--budget", "20"]
    first = str(tmp_path / "first.db")
    done = runner.invoke(app, [*args, "--rounds", "1", "--out", str(out), "--db", first])
    assert done.exit_code == 0, done.output
    doc = json.loads((out / "attack.json").read_text(encoding="utf-8"))
    doc["figures"]["static_asr"]["ci_low"] = float("nan")
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")  # NaN, as a hand edit may leave it
    db = str(tmp_path / "h.db")
    done = _cli("history", "import", str(bad), "--db", db)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "edited.json" in done.stderr
    assert "document.figures.static_asr.ci_low is nan" in done.stderr
    with open_store(db) as store:
        assert store.attack_ids() == []
