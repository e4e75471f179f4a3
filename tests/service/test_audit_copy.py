"""The audit writer's PostgreSQL path: one autocommit ``COPY`` a batch on a kept
connection (``Store.statement``), its text format, and what a failure does."""

from __future__ import annotations

import string
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.errors import StoreError
from shieldbench.service import AuditStore, verify_chain
from shieldbench.service._pgcopy import copy_text
from shieldbench.service._tables import audit_table
from shieldbench.store import open_store

pytestmark = pytest.mark.filterwarnings("error")


def _record(i: int, **extra: object) -> dict[str, object]:
    return {"kind": "decision", "id": f"d{i}", "created": time.time(), "decision": "allow", **extra}


def _backend_pid(store: object) -> int:
    with store.statement() as conn:  # type: ignore[attr-defined]
        return int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())


def _terminate(url: str, pid: int) -> None:
    """The server ends a session (what a restart or a proxy does to a kept connection)."""
    killer = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    with killer.begin() as conn:
        conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    killer.dispose()


def test_statement_keeps_one_connection_and_commits_each_statement(postgres_url: str) -> None:
    store = open_store(postgres_url)
    try:
        first = _backend_pid(store)
        assert _backend_pid(store) == first  # kept: no check-out, no new session
        with store.statement() as conn:
            conn.execute(sa.text("CREATE TABLE kept (a int)"))
            conn.execute(sa.text("INSERT INTO kept VALUES (1)"))
        other = sa.create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://"))
        with other.connect() as reader:  # committed by itself: another session sees it
            assert reader.execute(sa.text("SELECT count(*) FROM kept")).scalar_one() == 1
        other.dispose()
    finally:
        store.close()


def test_a_failed_statement_closes_the_connection_and_the_next_call_opens_one(
    postgres_url: str,
) -> None:
    store = open_store(postgres_url)
    try:
        first = _backend_pid(store)
        _terminate(postgres_url, first)
        with pytest.raises(StoreError, match=r"127\.0\.0\.1"), store.statement() as conn:
            conn.execute(sa.text("SELECT 1"))
        assert _backend_pid(store) != first  # a new connection, no error
        with pytest.raises(StoreError, match="kept_missing"), store.statement() as conn:
            conn.execute(sa.text("SELECT * FROM kept_missing"))  # a refused statement
        assert _backend_pid(store) > 0
    finally:
        store.close()


def test_the_writer_survives_a_terminated_connection_and_loses_no_record(
    postgres_url: str,
) -> None:
    store = AuditStore(postgres_url)
    try:
        store.append([_record(1)])
        _terminate(postgres_url, _backend_pid(store._store))
        with pytest.raises(StoreError):
            store.append([_record(2)])  # the batch fails as a whole, nothing half-written
        store.append([_record(2)])  # re-read head, new connection: it goes in
        assert verify_chain(store).ok
        assert [r.id for r in store.rows()] == ["d1", "d2"]
    finally:
        store.close()


# Text a record may carry: COPY's escapes (backslash, tab, newline, CR), its null
# marker spelled out, quotes, non-ASCII and astral characters.
_TRICKY = st.lists(
    st.sampled_from([*string.printable, "\\N", "\\", "é", "中", "🙂", "\u2028", '"']),
    max_size=20,
).map("".join)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(_TRICKY, min_size=1, max_size=5), ref=st.none() | _TRICKY)
def test_copy_stores_every_value_exactly_and_the_chain_verifies(
    postgres_url: str, texts: list[str], ref: str | None
) -> None:
    store = AuditStore(postgres_url)
    try:
        before = sum(1 for _ in store.rows())
        bodies = [{**_record(before + i, text=t, label=t), "ref": ref} for i, t in enumerate(texts)]
        store.append(bodies)
        rows = list(store.rows())[before:]
        assert [r.ref for r in rows] == [ref] * len(texts)
        assert [r.id for r in rows] == [b["id"] for b in bodies]
        assert verify_chain(store).ok  # every column equals what the hashed body says
    finally:
        store.close()


def test_copy_text_writes_nulls_escapes_and_timestamps_in_utc() -> None:
    created = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    elsewhere = created.astimezone(timezone(timedelta(hours=5)))
    row: dict[str, object] = {c.name: None for c in audit_table.columns}
    row.update(chain="c\t1", seq=7, id="a\\N", kind="k\nx", created=elsewhere, body="b\r")
    line = copy_text([row]).decode()
    assert line.endswith("\n")
    assert line.count("\n") == 1
    fields = line[:-1].split("\t")
    by_name = dict(zip([c.name for c in audit_table.columns], fields, strict=True))
    assert by_name["chain"] == "c\\t1"
    assert by_name["id"] == "a\\\\N"  # a backslash, then N: not the null marker
    assert by_name["kind"] == "k\\nx"
    assert by_name["body"] == "b\\r"
    assert by_name["ref"] == "\\N"
    assert by_name["created"] == "2026-01-02 03:04:05.678901"  # UTC, without a zone


def test_a_value_postgresql_cannot_hold_is_refused_and_quarantined_not_retried(
    postgres_url: str,
) -> None:
    store = AuditStore(postgres_url)
    try:
        good = {"chain": "main", "kind": "decision", "ref": None, "decision": "allow"}
        created = datetime.now(UTC)
        rows = [
            {**good, "seq": 1, "id": "ok", "created": created, "body": "{}", "prev_hash": "0"},
            {**good, "seq": 2, "id": "nul", "created": created, "body": "a\x00b", "prev_hash": "1"},
        ]
        rows = [{**r, "hash": str(r["seq"])} for r in rows]
        refused = store.insert_isolating(rows)
        assert [i for i, _ in refused] == [1]  # the NUL byte: the store refuses that one
        assert [r.id for r in store.rows()] == ["ok"]
    finally:
        store.close()
