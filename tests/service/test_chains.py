"""One audit chain per writer: the migration that brought chains (an existing database
upgrades and its old chain still verifies), retention over several chains, and a
verify that names the chain (the replica) and the record of a break."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from guardtest import cli
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.service import AuditStore, verify_chain
from shieldbench.service._journal import chain_hash, chain_journal_path, new_chain_id
from shieldbench.service._record import GENESIS, canonical
from shieldbench.service._writer import AuditWriter
from shieldbench.store import resolve_url
from shieldbench.store._migrate import _config


@contextlib.contextmanager
def _begin(url: str) -> Iterator[sa.Connection]:
    engine = sa.create_engine(resolve_url(url)[0])
    try:
        with engine.begin() as conn:
            yield conn
    finally:
        engine.dispose()


def _old_rows(count: int) -> list[dict[str, object]]:
    """Records as a shieldbench of before chains wrote them (no ``chain`` field)."""
    rows, prev = [], GENESIS
    for seq in range(1, count + 1):
        body = {"kind": "decision", "id": f"old{seq}", "created": time.time(), "seq": seq}
        body["decision"] = "allow"
        text = canonical(body)
        digest = chain_hash(prev, text)
        rows.append(
            {
                "seq": seq,
                "id": body["id"],
                "kind": "decision",
                "ref": None,
                "created": None,  # set from the body at insert
                "decision": "allow",
                "body": text,
                "prev_hash": prev,
                "hash": digest,
            }
        )
        prev = digest
    return rows


def test_a_database_at_0002_upgrades_and_its_old_chain_still_verifies(store_url: str) -> None:
    with _begin(store_url) as conn:
        cfg = _config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002")
    old = _old_rows(5)
    with _begin(store_url) as conn:
        table = sa.Table("guard_audit", sa.MetaData(), autoload_with=conn)
        for row in old:  # created from the body, as audit_row would have written it
            body = json.loads(str(row["body"]))
            conn.execute(table.insert().values({**row, "created": _utc(body["created"])}))
    store = AuditStore(store_url)  # migrates to the newest revision
    try:
        report = verify_chain(store)
        assert report.ok, report.problems
        assert (report.records, report.chains) == (5, 1)
        assert {str(r.chain) for r in store.rows()} == {"main"}
        store.append([{"kind": "decision", "id": "new1", "created": time.time()}])
        assert store.head() == (6, store.head()[1])  # the old chain continues
        assert verify_chain(store).ok
    finally:
        store.close()
    with _begin(store_url) as conn:
        conn.execute(sa.text("UPDATE guard_audit SET decision = 'block' WHERE seq = 3"))
    store = AuditStore(store_url)
    try:
        report = verify_chain(store)
    finally:
        store.close()
    assert not report.ok
    assert (report.first_broken_chain, report.first_broken_seq) == ("main", 3)


def _utc(posix: float) -> object:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(posix, UTC)


def _write(store: AuditStore, chain: str, bodies: list[dict[str, object]]) -> None:
    writer = AuditWriter(store, chain=chain, period_s=0.005)
    try:
        for body in bodies:
            writer.submit(body)
        asyncio.run(writer.flushed())
    finally:
        writer.close()
    path = chain_journal_path(store.journal_path, chain)
    if chain == "main":  # the main journal stays, empty; a replica's is deleted
        assert path.read_bytes() == b""
    else:
        assert not path.exists()


def _bodies(prefix: str, ages_days: list[float]) -> list[dict[str, object]]:
    now = time.time()
    return [
        {
            "kind": "decision",
            "id": f"{prefix}{i}",
            "created": now - age * 86400,
            "decision": "allow",
        }
        for i, age in enumerate(ages_days)
    ]


@pytest.mark.slow
def test_retention_keeps_every_chain_verifiable_and_verify_names_the_replica(
    store_url: str, tmp_path: Path
) -> None:
    store = AuditStore(store_url)
    one, two, gone = new_chain_id("one"), new_chain_id("two"), new_chain_id("idle")
    try:
        _write(store, one, _bodies("a", [20, 19, 18, 1, 0]))
        _write(store, two, _bodies("b", [30, 0.5, 0]))
        _write(store, gone, _bodies("c", [40, 39]))  # entirely older than the cut-off
        _write(store, "main", _bodies("m", [50, 0]))
        assert verify_chain(store).chains == 4
        assert store.prune(10 * 86400) == 3 + 1 + 2 + 1
        report = verify_chain(store)
        assert report.ok, report.problems
        assert report.chains == 3  # the idle chain is gone, anchored past its end
        assert store.prune(0.75 * 86400) == 1  # again: chain one loses one more
        report = verify_chain(store)
        assert report.ok, report.problems
    finally:
        store.close()
    with _begin(store_url) as conn:  # remove the start of chain two
        first = conn.execute(
            sa.text("SELECT min(seq) FROM guard_audit WHERE chain = :c"), {"c": two}
        ).scalar_one()
        conn.execute(
            sa.text("DELETE FROM guard_audit WHERE chain = :c AND seq = :s"), {"c": two, "s": first}
        )
    store = AuditStore(store_url)
    try:
        report = verify_chain(store)
    finally:
        store.close()
    assert not report.ok
    assert [p.chain for p in report.problems] == [two]
    assert report.problems[0].problem == "records before it were removed"
    assert report.first_broken_chain == two
    assert two.startswith("two.")  # the chain id names the replica
    done = cli("audit", "verify", "--db", store_url)
    assert done.returncode == 1
    assert f"chain={two} seq=" in done.stderr


def _chained_rows(chain: str, count: int) -> list[dict[str, object]]:
    from shieldbench.service._journal import JournalLine
    from shieldbench.service._record import audit_row

    rows, prev = [], GENESIS
    for seq in range(1, count + 1):
        body = {"kind": "decision", "id": f"{chain}-{seq}", "created": 1.0e9, "seq": seq}
        body["chain"] = chain
        text = canonical(body)
        digest = chain_hash(prev, text)
        rows.append(audit_row(JournalLine(seq, prev, digest, text), body))
        prev = digest
    return rows


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    pick=st.integers(0, 10_000),
    edit=st.sampled_from(["delete", "body"]),
)
@pytest.mark.slow
def test_verify_names_the_chain_and_record_of_any_single_break(
    lengths: list[int], pick: int, edit: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/h.db"
        store = AuditStore(url)
        chains = [f"r{i}.{i:08x}" for i in range(len(lengths))]
        try:
            for chain, length in zip(chains, lengths, strict=True):
                store.insert_chained(_chained_rows(chain, length))
            assert verify_chain(store).chains == len(chains)
        finally:
            store.close()
        victim = chains[pick % len(chains)]
        length = lengths[pick % len(chains)]
        seq = 1 + pick % length
        with _begin(url) as conn:
            if edit == "delete":
                statement = "DELETE FROM guard_audit WHERE chain = :c AND seq = :s"
            else:
                statement = (
                    "UPDATE guard_audit SET body = body || ' ' WHERE chain = :c AND seq = :s"
                )
            conn.execute(sa.text(statement), {"c": victim, "s": seq})
        store = AuditStore(url)
        try:
            report = verify_chain(store)
        finally:
            store.close()
        if edit == "delete" and seq == length:  # the newest record: not visible (the README says)
            assert report.ok
            return
        assert not report.ok
        assert {p.chain for p in report.problems} == {victim}
        expected = seq + 1 if edit == "delete" else seq
        assert report.first_broken_seq == expected
