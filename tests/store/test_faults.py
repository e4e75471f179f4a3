"""Faults, on SQLite and on a real PostgreSQL: a writer killed with SIGKILL while it
stores leaves whole runs or none; concurrent writers lose nothing; a locked SQLite
file is a clear error."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from shieldbench.alerts import Alert
from shieldbench.errors import StoreError
from shieldbench.store import open_store
from shieldbench.store._models import OutcomeRow, RunRow

# A writer process: stores synthetic runs of N outcomes, saying when each starts.
WRITER = textwrap.dedent(
    """
    import sys
    from datetime import datetime, timezone
    from shieldbench.store import open_store
    from shieldbench.types import *

    url, prefix, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def make(run_id, salt):
        samples = tuple(
            Sample(f"s{i}", f"text {salt} {i}", "attack" if i % 2 else "benign", "c")
            for i in range(size)
        )
        outcomes = tuple(
            Outcome(s.id, Verdict(i % 3 == 0, i / size), "ok", latency_ms=0.1 + i)
            for i, s in enumerate(samples)
        )
        return Run(run_id, DefenseInfo("pattern", "pattern"),
                   DatasetInfo("inline", f"sha256:{salt}", size), RunConfig(),
                   samples, outcomes, t0, t0)

    store = open_store(url)
    shared = make("shared", "shared")
    for k in range(count):
        run = make(f"{prefix}-{k}", f"{prefix}-{k}")
        print("storing", k, flush=True)
        store.add_run(run, git=(None, None))
        store.add_run(shared, git=(None, None))
    print("done", flush=True)
    store.close()
    """
)


def _writer(url: str, prefix: str, count: int, size: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, url, prefix, str(count), str(size)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _check_whole(url: str) -> list[str]:
    """Every stored run has all its outcomes and nothing else is there; the ids."""
    store = open_store(url)
    try:
        with store.session() as s:
            rows = list(s.scalars(select(RunRow)))
            runs = {r.run_id: (r.pk, r.n_samples) for r in rows}
            assert len(runs) == len(rows), "a run stored twice"
            counts = dict(
                s.execute(select(OutcomeRow.run_pk, func.count()).group_by(OutcomeRow.run_pk)).all()
            )
        for run_id, (pk, n) in runs.items():
            assert counts.get(pk) == n, f"run {run_id}: {counts.get(pk)} of {n} outcomes"
        assert set(counts) <= {pk for pk, _ in runs.values()}, "outcomes without a run"
        for run_id in runs:
            run = store.get_run(run_id)
            assert len(run.outcomes) == len(run.samples)
        return sorted(runs)
    finally:
        store.close()


@pytest.mark.slow
def test_sigkill_while_storing_leaves_whole_runs_or_none(store_url: str) -> None:
    open_store(store_url).close()  # migrate first: the kill is about storing runs
    for delay in (0.0, 0.15, 0.4):
        proc = _writer(store_url, f"k{delay}", 50, 20_000)
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("storing"), proc.stderr.read()  # type: ignore[union-attr]
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)  # reaps it and closes the pipes
        assert proc.returncode == -signal.SIGKILL
    ids = _check_whole(store_url)
    assert len(ids) < 1 + 3 * 50  # the kills did interrupt the writers


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(store_url: str) -> None:
    open_store(store_url).close()
    procs = [_writer(store_url, f"w{i}", 4, 1_000) for i in range(3)]
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert out.strip().endswith("done")
    ids = _check_whole(store_url)
    assert ids == sorted(["shared", *(f"w{i}-{k}" for i in range(3) for k in range(4))])


def test_a_locked_sqlite_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    open_store(str(path)).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store = open_store(str(path), busy_timeout_s=0.3)
        with pytest.raises(StoreError, match=r"h.db: database is locked"):
            store.add_alert(Alert("k", "t", "m"))
        store.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert os.path.exists(path)
