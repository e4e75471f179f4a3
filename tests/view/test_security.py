"""Who may read the viewer, and that reading never changes the history.

- Off loopback the command refuses to start without a token; with a token every
  request must carry it (header or the cookie a ``?token=`` visit sets).
- Without a token only loopback ``Host`` names are answered (DNS rebinding).
- The store is opened read-only: a SQLite file keeps its bytes and its journal
  mode, no ``-wal`` / ``-shm`` file appears, writes fail; a database from a newer
  shieldbench, an empty one and a missing file are refused and left as they were.
- The sample table's filters agree with a brute-force reading of the stored run
  for any combination (property-based).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from shieldbench.alerts import Alert
from shieldbench.cli import app
from shieldbench.errors import ConfigError, StoreError
from shieldbench.store import OUTCOME_KINDS, open_store
from shieldbench.view import check_bind, is_loopback

from .conftest import SAMPLES, History, Server

TOKEN = "t0ken-for-the-tests-0123456789"


@pytest.mark.slow
def test_a_token_is_needed_on_every_request_when_set(sqlite_history: History) -> None:
    with open_store(sqlite_history.url, read_only=True) as store:
        server = Server(store, token=TOKEN)
        try:
            with server.client() as c:
                for path in (
                    "/runs",
                    "/api/runs",
                    "/static/view.css",
                    f"/runs/{sqlite_history.base}",
                ):
                    assert c.get(path).status_code == 401, path
                assert c.get("/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
                ok = c.get("/runs", headers={"Authorization": f"Bearer {TOKEN}"})
                assert ok.status_code == 200
                assert c.get("/runs?token=wrong").status_code == 401
            with server.client() as c:
                first = c.get("/runs?tag=team%3Dred&token=" + TOKEN)
                assert first.status_code == 303
                assert first.headers["location"] == "/runs?tag=team%3Dred"
                assert "httponly" in first.headers["set-cookie"].lower()
                assert c.get(first.headers["location"]).status_code == 200  # the cookie
        finally:
            server.stop()


@pytest.mark.slow
def test_without_a_token_only_loopback_host_names_are_answered(sqlite_viewer: Server) -> None:
    with sqlite_viewer.client() as c:
        for evil in ("evil.example:8765", "127.evil.example", "localhost.evil.example:80"):
            assert c.get("/runs", headers={"Host": evil}).status_code == 401, evil
        assert c.get("/runs", headers={"Host": "127.0.0.2:8765"}).status_code == 200
        assert c.get("/runs", headers={"Host": "localhost:8765"}).status_code == 200
        assert c.get("/runs", headers={"Host": "127.0.0.1"}).status_code == 200


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("example.org", False),
    ],
)
def test_binding_off_loopback_needs_a_token(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    if loopback:
        check_bind(host, None)
    else:
        with pytest.raises(ConfigError, match="--token"):
            check_bind(host, None)
    check_bind(host, TOKEN)
    with pytest.raises(ConfigError, match="16 characters"):
        check_bind(host, "short")


@pytest.mark.slow
def test_the_command_refuses_a_public_host_without_token_before_opening_anything(
    tmp_path: Path,
) -> None:
    db = tmp_path / "absent.db"
    done = subprocess.run(
        [sys.executable, "-m", "shieldbench", "view", "--host", "0.0.0.0", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--token" in done.stderr
    result = CliRunner().invoke(app, ["view", "--db", str(db), "--port", "0"])
    assert isinstance(result.exception, StoreError)
    assert "no history here" in str(result.exception)
    assert not db.exists()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_reading_changes_nothing_in_a_sqlite_file(sqlite_history: History, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    shutil.copy(sqlite_history.url, copy)
    with sqlite3.connect(copy) as conn:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    before = _digest(copy)
    with open_store(str(copy), read_only=True) as store:
        assert store.run_page().total == 3
        assert store.outcome_page(sqlite_history.base, kinds=["bypass"]).total >= 1
        assert len(store.flips(sqlite_history.base, sqlite_history.strict)) == 1
        with pytest.raises(StoreError, match="readonly"):
            store.add_alert(Alert("viewer", "must not be written", "m"))
    assert _digest(copy) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.db"]
    with sqlite3.connect(copy) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_a_database_the_viewer_cannot_read_is_refused_untouched(tmp_path: Path) -> None:
    newer = tmp_path / "newer.db"
    with sqlite3.connect(newer) as conn:
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)")
        conn.execute("INSERT INTO alembic_version VALUES ('9999_from_the_future')")
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    for path, message in ((newer, "newer shieldbench"), (empty, "not a shieldbench history")):
        before = _digest(path)
        with pytest.raises(StoreError, match=message):
            open_store(str(path), read_only=True)
        assert _digest(path) == before


KINDS = st.lists(st.sampled_from(OUTCOME_KINDS), max_size=3, unique=True)
CATEGORIES = st.sampled_from([None, *sorted({s[3] for s in SAMPLES}), "absent"])
TIERS = st.sampled_from([None, "known", "paraphrased", "novel"])
WORDS = st.sampled_from([None, "the", "IGNORE", "<script>", "zzz", "é"])
SCORES = st.one_of(st.none(), st.floats(0, 1))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kinds=KINDS,
    category=CATEGORIES,
    tier=TIERS,
    q=WORDS,
    lo=SCORES,
    hi=SCORES,
    size=st.integers(1, 4),
    page=st.integers(0, 3),
)
@pytest.mark.slow
def test_any_sample_filter_agrees_with_reading_the_whole_run(
    sqlite_history: History,
    kinds: list[str],
    category: str | None,
    tier: str | None,
    q: str | None,
    lo: float | None,
    hi: float | None,
    size: int,
    page: int,
) -> None:
    with open_store(sqlite_history.url, read_only=True) as store:
        run = store.get_run(sqlite_history.base)
        got = store.outcome_page(
            run.id,
            kinds=kinds,
            category=category,
            tier=tier,
            search=q,
            score_min=lo,
            score_max=hi,
            offset=page * size,
            limit=size,
        )

    def kind(o: object, s: object) -> str:
        if o.status != "ok":  # type: ignore[attr-defined]
            return o.status  # type: ignore[attr-defined, no-any-return]
        blocked = o.verdict.blocked  # type: ignore[attr-defined]
        if s.label == "attack":  # type: ignore[attr-defined]
            return "blocked" if blocked else "bypass"
        return "false_positive" if blocked else "allowed"

    def score_ok(o: object) -> bool:
        score = None if o.verdict is None else o.verdict.score  # type: ignore[attr-defined]
        if lo is None and hi is None:
            return True
        return score is not None and (lo is None or score >= lo) and (hi is None or score <= hi)

    want = [
        s.id
        for s, o in zip(run.samples, run.outcomes, strict=True)
        if (not kinds or kind(o, s) in kinds)
        and (category is None or s.category == category)
        and (tier is None or s.tier == tier)
        and (q is None or q.casefold() in s.text.casefold())
        and score_ok(o)
    ]
    assert got.total == len(want)
    assert [o.sample_id for o in got.items] == want[page * size : (page + 1) * size]
