"""Opening a history: URLs, the default file, migrations, refusing what is not ours."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from shieldbench.alerts import Alert, Cooldown, Delivery
from shieldbench.errors import StoreError
from shieldbench.store import DEFAULT_PATH, ENV_VAR, head_revisions, open_store, resolve_url


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_default_is_a_sqlite_file_under_the_working_directory(tmp_path: Path) -> None:
    store = open_store(cwd=tmp_path, env={})
    try:
        assert store.created
        assert store.backend == "sqlite"
        assert store.url == str(tmp_path / DEFAULT_PATH)
        assert (tmp_path / ".shieldbench" / "history.db").is_file()
    finally:
        store.close()
    again = open_store(cwd=tmp_path, env={})
    assert not again.created
    again.close()


def test_environment_variable_then_explicit_url_win(tmp_path: Path) -> None:
    env = {ENV_VAR: str(tmp_path / "env.db")}
    assert resolve_url(None, env=env, cwd=tmp_path)[0].database == str(tmp_path / "env.db")
    url, default = resolve_url("sqlite:///x.db", env=env, cwd=tmp_path)
    assert (url.database, default) == ("x.db", False)
    assert resolve_url("postgres://u:secret@h/db", env={})[0].drivername == "postgresql+psycopg"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u@h/db", "unsupported database 'mysql'"),
        ("sqlite://", "name a SQLite file"),
        ("postgresql://u:pw@127.0.0.1:1/db", "cannot open the history database"),
    ],
)
def test_bad_urls_are_one_clear_error(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message) as info:
        open_store(url, busy_timeout_s=1)
    assert "pw" not in str(info.value)
    assert "\n" not in str(info.value)


def test_migrates_to_the_newest_revision(store_url: str) -> None:
    store = open_store(store_url)
    store.close()
    engine = create_engine(store_url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as conn:
        revisions = {r for (r,) in conn.execute(text("SELECT version_num FROM alembic_version"))}
    engine.dispose()
    assert revisions == set(head_revisions())


def test_a_database_from_a_newer_shieldbench_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    open_store(str(path)).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.close()
    before = _digest(path)
    with pytest.raises(StoreError, match=r"revision 9999, written by a newer shieldbench"):
        open_store(str(path))
    assert _digest(path) == before


def test_a_database_of_something_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.close()
    with pytest.raises(StoreError, match=r"not a shieldbench history \(customers\)"):
        open_store(str(path))


def test_a_corrupt_file_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"corrupt.db: cannot open the history database"):
        open_store(str(path))
    assert path.read_bytes() == b"this is not a database" * 100


def test_alerts_are_stored_and_drive_the_cooldown(store_url: str) -> None:
    store = open_store(store_url)
    try:
        t0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
        alert = Alert("svc:fpr", "FPR up", "2% -> 9%", source="service", created=t0)
        store.add_alert(alert, {"terminal": Delivery("terminal", True)})
        store.add_alert(Alert("other", "x", "y", created=t0 + timedelta(minutes=1)))
        (stored,) = store.alerts(source="service")
        assert stored.alert == alert
        assert stored.delivered == {
            "terminal": {"ok": True, "attempts": 1, "status": None, "error": None}
        }
        assert store.last_alert_at("svc:fpr") == t0
        assert store.last_alert_at("never") is None
        cooldown = Cooldown(timedelta(hours=1), last_fired=store.last_alert_at)
        assert not cooldown.allow("svc:fpr", now=t0 + timedelta(minutes=30))
        assert cooldown.allow("svc:fpr", now=t0 + timedelta(minutes=61))
        with pytest.raises(StoreError, match="not stored"):
            store.add_alert(Alert("k", "t", "m", run_id="no-such-run"))
        assert len(store.alerts()) == 2  # the refused alert left nothing behind
    finally:
        store.close()
