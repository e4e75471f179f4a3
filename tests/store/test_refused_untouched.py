"""A history that is refused is not changed, and a damaged one is refused before work.

- a foreign database, or one from a newer shieldbench, keeps its journal mode (no WAL
  switch), its bytes and no ``-wal``/``-shm`` files appear;
- an accepted one is in WAL mode;
- a damaged file (pages overwritten) is refused by ``open_store(check=True)`` and by
  ``shieldbench run`` before the benchmark runs (exit 2, no run written), unchanged.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.errors import StoreError
from shieldbench.store import open_store

SRC = Path(__file__).resolve().parents[2] / "src"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _journal_mode(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


def _foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    conn.executemany("INSERT INTO customers VALUES (?, ?)", [(i, f"c{i}") for i in range(50)])
    conn.commit()
    conn.close()


def _newer(path: Path) -> None:
    open_store(str(path)).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("make", [_foreign, _newer], ids=["foreign", "newer"])
@pytest.mark.parametrize("check", [False, True])
def test_a_refused_database_keeps_its_journal_mode_and_bytes(
    tmp_path: Path, make: object, check: bool
) -> None:
    path = tmp_path / "other.db"
    make(path)  # type: ignore[operator]
    assert _journal_mode(path) == "delete"
    before = _digest(path)
    with pytest.raises(StoreError, match=r"The database was not changed"):
        open_store(str(path), check=check)
    assert _journal_mode(path) == "delete"
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_an_accepted_database_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    open_store(str(path)).close()  # created
    assert _journal_mode(path) == "wal"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    open_store(str(path), check=True).close()  # an existing history, accepted
    assert _journal_mode(path) == "wal"


def _history_with_data(path: Path) -> int:
    """A real history (a recorded run) in DELETE mode; its page count."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    code = "from shieldbench.cli import main; main()"
    args = ["run", "-d", "pattern", "-D", "builtin:smoke", "--db", f"sqlite:///{path}"]
    args += ["--out", str(path.parent / "first")]
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    conn.close()
    return pages


class _History(tuple[bytes, int]):
    """The history file's bytes and page count, with a short repr: hypothesis prints the
    test's arguments on failure, and half a megabyte of bytes would hide the example."""

    def __repr__(self) -> str:
        return f"<history: {len(self[0])} bytes, {self[1]} pages>"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, int]:
    path = tmp_path_factory.mktemp("hist") / "h.db"
    pages = _history_with_data(path)
    return _History((path.read_bytes(), pages))


def _damage(data: bytes, page: int, size: int = 4096) -> bytes:
    start = (page - 1) * size
    garbage = bytes((i * 37 + page) % 251 for i in range(size))
    return data[:start] + garbage + data[start + size :]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(page=st.integers(min_value=2, max_value=64))
@pytest.mark.slow
def test_a_damaged_page_anywhere_is_refused_before_work_and_kept(
    tmp_path: Path, history: tuple[bytes, int], page: int
) -> None:
    data, pages = history
    page = min(page, pages)
    path = tmp_path / f"damaged-{page}.db"
    path.write_bytes(_damage(data, page))
    before = _digest(path)
    with pytest.raises(StoreError, match=r"damaged|cannot open the history database") as caught:
        open_store(str(path), check=True)
    assert "\n" not in str(caught.value)
    assert _digest(path) == before
    path.unlink()


@pytest.mark.slow
def test_run_on_a_damaged_history_exits_2_before_the_benchmark(
    tmp_path: Path, history: tuple[bytes, int]
) -> None:
    data, pages = history
    path = tmp_path / "h.db"
    path.write_bytes(_damage(data, pages // 2 + 1))
    before = _digest(path)
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    code = "from shieldbench.cli import main; main()"
    out = tmp_path / "out"
    args = ["run", "-d", "pattern", "-D", "builtin:smoke", "--db", f"sqlite:///{path}"]
    done = subprocess.run(
        [sys.executable, "-c", code, *args, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "damaged" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (out / "runs").exists()  # nothing was benchmarked
    assert "report" not in done.stdout
    assert _digest(path) == before
