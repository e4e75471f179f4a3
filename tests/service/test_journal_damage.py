"""A damaged audit journal: every readable record reaches the store, the rest is kept.

The promise attacked here: recovery never discards a record it could read; the bytes
it cannot read are moved to the quarantine file beside the journal, which is kept and
named, and makes ``audit verify`` exit non-zero; a bad line stops neither the records
after it nor the server's start; a gap it leaves in the chain is reported.

- a property-based fault test tears, corrupts and truncates a journal at points
  hypothesis chooses (with a prefix already moved to the store, as a live writer
  leaves it) and checks every byte: read into the store or quarantined;
- issue 31 item 2 (b): one corrupted byte on line 300 of a 600-line journal;
- issue 31 item 2 (a): a real server whose store is locked and whose file-size limit
  is lowered (``prlimit`` on the server process this test starts), raised again, then
  ``kill -9``: every answered decision is in the store; and the file such an episode
  left before the fix (a torn line followed by good ones): the server starts.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import shutil
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from guardtest import Server, cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.service import AuditStore, verify_chain
from shieldbench.service._audit import GENESIS, audit_row, canonical
from shieldbench.service._journal import JournalLine, chain_hash, encode_line, journal_path
from shieldbench.service._tables import audit_table


def _chain(count: int) -> list[JournalLine]:
    """``count`` chained records from the genesis, as the writer journals them."""
    lines, prev = [], GENESIS
    for seq in range(1, count + 1):
        body = {"kind": "decision", "id": f"r{seq}", "created": 1.7e9 + seq, "decision": "allow"}
        text = canonical({**body, "seq": seq, "preview": "x" * (seq % 7)})
        digest = chain_hash(prev, text)
        lines.append(JournalLine(seq, prev, digest, text))
        prev = digest
    return lines


def _stored(store: AuditStore) -> dict[int, str]:
    return {int(row.seq): str(row.hash) for row in store.rows()}


def _seed(db_path: Path, lines: list[JournalLine]) -> None:
    """What a live writer had already moved into the store before it died."""
    store = AuditStore(f"sqlite:///{db_path}", recover=False)
    try:
        store.insert_chained([audit_row(line, json.loads(line.body)) for line in lines])
    finally:
        store.close()


def _quarantined(store: AuditStore) -> list[dict[str, object]]:
    if not store.quarantine_path.exists():
        return []
    return [json.loads(x) for x in store.quarantine_path.read_text().splitlines()]


_N = 30
_LINES = _chain(_N)
_ORIGINAL = [encode_line(line) for line in _LINES]


def _apply(data: bytearray, fault: tuple[str, int, int]) -> bytearray:
    """One fault at a chosen point: ``tear`` cuts a line at a point and drops the rest
    of it (a write the disk took part of; the next write follows it), ``corrupt``
    changes one byte, ``truncate`` ends the file."""
    kind, at, value = fault
    if not data:
        return data
    at %= len(data)
    if kind == "corrupt":
        data[at] = (data[at] + 1 + value % 255) % 256
        return data
    if kind == "truncate":
        return data[:at]
    end = data.find(b"\n", at)
    return data[:at] + (data[end + 1 :] if end >= 0 else b"")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty, migrated store to copy (migrating one per example would be slow)."""
    path = tmp_path_factory.mktemp("template") / "t.db"
    AuditStore(f"sqlite:///{path}").close()
    return path


_FAULTS = st.lists(
    st.tuples(
        st.sampled_from(["tear", "corrupt", "truncate"]),
        st.integers(0, 10**6),
        st.integers(0, 254),
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(faults=_FAULTS, moved=st.integers(0, _N))
def test_every_readable_record_reaches_the_store_and_every_other_byte_is_quarantined(
    template: Path, tmp_path_factory: pytest.TempPathFactory, faults: list, moved: int
) -> None:
    where = tmp_path_factory.mktemp("fault")
    db_path = where / "h.db"
    shutil.copy(template, db_path)
    _seed(db_path, _LINES[:moved])
    data = bytearray(b"".join(_ORIGINAL))
    for fault in faults:
        data = _apply(data, fault)
    damaged = bytes(data)
    journal = journal_path("sqlite", str(db_path))
    journal.write_bytes(damaged)
    readable = {line.seq for line, raw in zip(_LINES, _ORIGINAL, strict=True) if raw in damaged}

    store = AuditStore(f"sqlite:///{db_path}")  # the next opener recovers the journal
    try:
        stored = _stored(store)
        kept = _quarantined(store)
        report = verify_chain(store)
        count = store.quarantined()
    finally:
        store.close()
    # every readable record is in the store, exactly as written; nothing else is
    assert set(stored) == set(range(1, moved + 1)) | readable
    assert all(stored[seq] == _LINES[seq - 1].hash for seq in stored)
    assert journal.read_bytes() == b""
    # every byte of the damaged file was read or quarantined, where it was
    for item in kept:
        raw = base64.b64decode(str(item["base64"]))
        assert damaged[int(item["offset"]) :][: len(raw)] == raw, item
    read = sum(len(_ORIGINAL[seq - 1]) for seq in readable)
    assert read + sum(int(item["length"]) for item in kept) == len(damaged)  # type: ignore[call-overload]
    assert count == len(kept)
    # a gap the damage left in the chain is reported at the first record after it
    contiguous = sorted(stored) == list(range(1, len(stored) + 1))
    assert report.ok == contiguous
    if not contiguous and 1 not in stored:  # the damage took the first record(s)
        assert report.first_broken_seq == min(stored)
        assert "records before it were removed" in (report.problem or "")
    elif not contiguous:
        gap = next(s for s in sorted(stored) if s - 1 not in stored and s != 1)
        assert report.first_broken_seq == gap
        assert "sequence gap" in (report.problem or "")


@pytest.mark.slow
def test_one_corrupted_byte_on_line_300_of_600_loses_one_record_and_verify_fails(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    AuditStore(db).close()
    lines = _chain(600)
    raw = [encode_line(line) for line in lines]
    middle = len(raw[299]) // 2
    raw[299] = raw[299][:middle] + b"\xff" + raw[299][middle + 1 :]
    journal = journal_path("sqlite", str(tmp_path / "h.db"))
    journal.write_bytes(b"".join(raw))

    first = cli("audit", "verify", "--db", db)
    output = first.stdout + first.stderr
    assert first.returncode == 1, output
    assert "Traceback" not in output
    quarantine = f"{journal}.quarantine"
    assert quarantine in output.replace("\n", "")
    assert "moved 599 record(s)" in output
    assert "seq=301" in output
    assert "sequence gap: expected 300, found 301" in output
    entries = [json.loads(x) for x in Path(quarantine).read_text().splitlines()]
    assert [(e["line"], e["length"]) for e in entries] == [(300, len(raw[299]))]
    assert base64.b64decode(entries[0]["base64"]) == raw[299]

    again = cli("audit", "verify", "--db", db)  # the quarantine is kept: still failing
    assert again.returncode == 1
    assert quarantine in again.stderr.replace("\n", "")
    store = AuditStore(db)
    try:
        assert sorted(_stored(store)) == [s for s in range(1, 601) if s != 300]
    finally:
        store.close()
    Path(quarantine).rename(tmp_path / "inspected")  # the operator acknowledges it
    last = cli("audit", "verify", "--db", db)
    assert last.returncode == 1  # the chain's gap at 300 stays reported: never hidden
    assert "quarantine" not in last.stderr
    assert "seq=301" in last.stderr


@pytest.mark.slow
def test_a_torn_line_followed_by_good_ones_neither_stops_them_nor_the_server(
    tmp_path: Path, start_server: Callable[..., Server]
) -> None:
    db = f"sqlite:///{tmp_path / 'g.db'}"
    AuditStore(db).close()
    lines = _chain(50)
    raw = [encode_line(line) for line in lines]
    # what the journal held before the fix: record 21's write torn by the file-size
    # limit, then (the limit raised) record 21 written again, and more after it
    journal = journal_path("sqlite", str(tmp_path / "g.db"))
    journal.write_bytes(b"".join(raw[:20]) + raw[20][:57] + b"".join(raw[20:]))
    server = start_server("--defense", "pattern", db=db)
    with server.client() as c:
        assert c.post("/v1/check", json={"text": "after the damage"}).status_code == 200
    server.stop()
    log = server.log.read_text()
    assert "Traceback" not in log
    assert "JSONDecodeError" not in log
    assert f"{journal}.quarantine" in log.replace("\n", "")
    verify = cli("audit", "verify", "--db", db)
    assert verify.returncode == 1, verify.stdout + verify.stderr  # the quarantine
    assert "chain intact" in verify.stdout  # no record is missing: 21 was written again
    store = AuditStore(db)
    try:
        assert sorted(_stored(store)) == list(range(1, 52))
    finally:
        store.close()


def _hold_write_lock(db_file: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_file, isolation_level=None, timeout=5)
    conn.execute("BEGIN IMMEDIATE")  # the server's writer cannot commit meanwhile
    return conn


def _fire(server: Server, count: int, tag: str) -> tuple[list[str], int]:
    answered, refused = [], 0
    with httpx.Client(base_url=server.url, timeout=10) as c:
        for i in range(count):
            r = c.post("/v1/check", json={"text": f"{tag} message {i} " + "padding " * 8})
            if r.status_code == 200:
                answered.append(r.json()["id"])
            else:
                assert r.status_code == 503, r.text
                refused += 1
    return answered, refused


@pytest.mark.slow
def test_a_file_size_limit_episode_then_kill_9_loses_no_answered_decision(
    tmp_path: Path, start_server: Callable[..., Server]
) -> None:
    db_file = tmp_path / "limit.db"
    server = start_server("--defense", "pattern", db=f"sqlite:///{db_file}")
    journal = journal_path("sqlite", str(db_file))
    lock = _hold_write_lock(db_file)
    try:
        before, _ = _fire(server, 50, "before")
        size = journal.stat().st_size
        assert size > 0  # the store is locked: the records wait in the journal
        hard = resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE)[1]
        resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (size + 20_000, hard))
        during, refused = _fire(server, 400, "limited")
        assert during
        assert refused
        resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (hard, hard))
        after, _ = _fire(server, 100, "raised")
        assert len(after) == 100
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    answered = before + during + after
    verify = cli("audit", "verify", "--db", server.db)
    output = verify.stdout + verify.stderr
    assert "Traceback" not in output
    assert verify.returncode == 0, output  # failed writes were cut back: nothing torn
    engine = sa.create_engine(server.db)
    with engine.connect() as conn:
        ids = set(conn.scalars(sa.select(audit_table.c.id)))
    engine.dispose()
    assert set(answered) <= ids
    assert len(ids) == len(answered)  # a refused decision was never journalled


def test_a_readable_record_the_store_refuses_is_quarantined_not_dropped(tmp_path: Path) -> None:
    db_path = tmp_path / "c.db"
    lines = _chain(10)
    _seed(db_path, lines[:5])
    # a record with a stored sequence number but another hash (another chain), and
    # one that repeats a sequence number within the journal
    other = JournalLine(3, GENESIS, chain_hash(GENESIS, lines[2].body), lines[2].body)
    raw = [encode_line(line) for line in lines]
    # and one whose id the store holds (its unique constraint refuses it), then one more
    body = canonical({"kind": "decision", "id": "r2", "created": 1.0, "seq": 11})
    dup = JournalLine(11, lines[-1].hash, chain_hash(lines[-1].hash, body), body)
    body = canonical({"kind": "decision", "id": "r12", "created": 1.0, "seq": 12})
    last = JournalLine(12, dup.hash, chain_hash(dup.hash, body), body)
    journal = journal_path("sqlite", str(db_path))
    journal.write_bytes(
        b"".join(raw[:6])
        + encode_line(other)
        + raw[5]
        + b"".join(raw[6:])
        + encode_line(dup)
        + encode_line(last)
    )
    store = AuditStore(f"sqlite:///{db_path}")
    try:
        assert sorted(_stored(store)) == [*range(1, 11), 12]
        reasons = [str(e["reason"]) for e in _quarantined(store)]
        assert reasons == [
            "sequence number 3 is in the store with another hash",
            "sequence number 6 repeated",
            "the store refused the record: UNIQUE constraint failed: guard_audit.id",
        ]
        assert verify_chain(store).first_broken_seq == 12  # the gap the refusal left
        assert store.recovery.quarantined == 3
        assert store.recovery.moved == 6
    finally:
        store.close()


_PARTIAL_WRITE = """
import resource, sys
from pathlib import Path
from shieldbench.service._journal import Journal
path, first, second = Path(sys.argv[1]), bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
journal = Journal.open(path)
journal.write(first)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (len(first) + len(second) // 2, hard))
try:
    journal.write(second)  # the kernel takes half of it, then refuses the rest (EFBIG)
except OSError as exc:
    print("refused", exc.errno, path.stat().st_size)
resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
journal.write(second)
"""


@pytest.mark.slow
def test_a_write_the_file_size_limit_cuts_leaves_no_torn_bytes(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "j"
    first, second = encode_line(_LINES[0]), encode_line(_LINES[1])
    done = subprocess.run(
        [sys.executable, "-c", _PARTIAL_WRITE, str(path), first.hex(), second.hex()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["refused", "27", str(len(first))]  # EFBIG, cut back
    assert path.read_bytes() == first + second


def test_a_record_the_store_refuses_live_is_quarantined_and_the_rest_flows(
    tmp_path: Path,
) -> None:
    import asyncio

    from shieldbench.service._writer import AuditWriter

    store = AuditStore(f"sqlite:///{tmp_path / 'live.db'}", recover=False)
    writer = AuditWriter(store, period_s=0.01)

    def body(ident: str) -> dict[str, object]:
        return {"kind": "decision", "id": ident, "created": 1.7e9, "decision": "allow"}

    async def submit() -> None:
        writer.submit(body("first"))
        await writer.flushed()
        writer.submit(body("first"))  # a duplicate id: the store will never take it
        for i in range(5):
            writer.submit(body(f"after{i}"))
        await asyncio.wait_for(writer.flushed(), 10)

    try:
        asyncio.run(submit())
    finally:
        writer.close()
    try:
        ids = [str(row.id) for row in store.rows()]
        assert ids == ["first"] + [f"after{i}" for i in range(5)]
        (kept,) = _quarantined(store)
        assert str(kept["reason"]).startswith("the store refused the record: UNIQUE")
        report = verify_chain(store)
        assert report.first_broken_seq == 3  # the refused record's gap, reported
        assert store.journal_path.read_bytes() == b""
    finally:
        store.close()
