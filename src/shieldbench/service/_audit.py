"""The audit log: append-only, hash-chained records of every decision, in the store.

:class:`AuditStore` is the database side (append a batch in one transaction, read the
chain, feedback, retention; opening it first moves in what a dead server left in its
journal). The service writes through :class:`~shieldbench.service._writer.AuditWriter`
(records are chained and made durable in the local journal before the answer, then
moved here in batches). :func:`verify_chain` recomputes every hash and names the first
broken record.

Retention deletes records older than an age and appends a ``retention`` record whose
body holds the first kept sequence number and the hash it chains from, so a verify
after retention still proves nothing else was removed.

Example:
    >>> import tempfile
    >>> store = AuditStore(tempfile.mkdtemp() + "/history.db")
    >>> store.append([{"kind": "decision", "id": "d1", "created": 1.0, "decision": "allow"}])
    >>> verify_chain(store).ok
    True
    >>> store.close()
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
import sqlalchemy as sa

from shieldbench.alerts import Alert, Delivery
from shieldbench.service._journal import Journal, JournalLine, journal_path
from shieldbench.service._tables import audit_table, feedback_table
from shieldbench.store import open_store

__all__ = [
    "AuditStore",
    "ChainReport",
    "audit_row",
    "canonical",
    "canonical_bytes",
    "chain_hash",
    "chain_hash_bytes",
    "verify_chain",
]

_log = logging.getLogger("shieldbench.service.audit")
GENESIS = "0" * 64


def canonical(body: Mapping[str, Any]) -> str:
    """The JSON a record is hashed over: sorted keys, no spaces, UTF-8 kept.

    orjson writes it (~10x faster); what orjson refuses (a lone surrogate, an integer
    over 64 bits) the json module writes, in ASCII (``\\ud800`` escapes: a database
    stores that, not a raw surrogate). The hash covers the stored text, which is never
    re-serialised, so the two need not agree on formatting."""
    return canonical_bytes(body).decode()


def canonical_bytes(body: Mapping[str, Any]) -> bytes:
    """:func:`canonical` as the UTF-8 bytes the journal writes and the chain hashes."""
    try:
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def chain_hash(prev_hash: str, body: str) -> str:
    """``sha256(prev_hash + body)`` as hex."""
    return chain_hash_bytes(prev_hash, body.encode("utf-8", "surrogatepass"))


def chain_hash_bytes(prev_hash: str, body: bytes) -> str:
    """:func:`chain_hash` of a body already encoded (what the writer journals)."""
    return hashlib.sha256(prev_hash.encode() + body).hexdigest()


def _utc(posix: float) -> datetime:
    return datetime.fromtimestamp(posix, UTC)


def audit_row(line: JournalLine, body: Mapping[str, Any]) -> dict[str, Any]:
    """The ``guard_audit`` row of a chained record (``body`` is ``line.body`` parsed)."""
    return {
        "seq": line.seq,
        "id": str(body["id"]),
        "kind": str(body["kind"]),
        "ref": body.get("ref"),
        "created": _utc(float(body["created"])),
        "decision": body.get("decision"),
        "body": line.body,
        "prev_hash": line.prev_hash,
        "hash": line.hash,
    }


class AuditStore:
    """The audit and feedback tables of one history store (opened and migrated here)."""

    def __init__(self, db: str | None = None, *, recover: bool = True) -> None:
        self._store = open_store(db)
        self.url = self._store.url
        self.journal_path = journal_path(self._store.backend, self.url)
        self._head: tuple[int, str] | None = None
        self._lock = threading.RLock()  # one appender at a time: the chain is a sequence
        if recover and self.journal_path.exists():
            # A server that died left records in its journal: move them in first (a
            # journal a live server holds is its own business: it is skipped).
            journal = Journal.open(self.journal_path)
            if journal is not None:
                try:
                    self.replay(journal)
                finally:
                    journal.close()

    def journal_held(self) -> bool:
        """Whether a running server holds this store's audit journal (it writes the chain)."""
        journal = Journal.open(self.journal_path)
        if journal is None:
            return True
        journal.close()
        return False

    def head(self) -> tuple[int, str]:
        """The last sequence number and hash (``0`` and the genesis hash when empty)."""
        if self._head is None:
            with self._store.session() as conn:
                row = conn.execute(
                    sa.select(audit_table.c.seq, audit_table.c.hash)
                    .order_by(audit_table.c.seq.desc())
                    .limit(1)
                ).first()
            self._head = (0, GENESIS) if row is None else (int(row[0]), str(row[1]))
        return self._head

    def append(self, bodies: Sequence[Mapping[str, Any]]) -> None:
        """Chain and insert the records in one transaction (all or none)."""
        with self._lock:
            self._append(bodies)

    def _append(self, bodies: Sequence[Mapping[str, Any]]) -> None:
        seq, prev = self.head()
        rows = []
        for body in bodies:
            seq += 1
            text = canonical({**body, "seq": seq})
            digest = chain_hash(prev, text)
            rows.append(audit_row(JournalLine(seq, prev, digest, text), body))
            prev = digest
        self.insert_chained(rows)

    def insert_chained(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert rows chained elsewhere (the journal), in order, in one transaction."""
        if not rows:
            return
        with self._lock:
            try:
                with self._store.connection(write=True) as conn:
                    conn.execute(audit_table.insert(), rows)
            except BaseException:
                self._head = None  # re-read the head: the transaction may or may not be there
                raise
            self._head = (int(rows[-1]["seq"]), str(rows[-1]["hash"]))

    def replay(self, journal: Journal, *, batch: int = 1000) -> int:
        """Move the journal's records that the store lacks into it; empty the journal."""
        with self._lock:
            self._head = None
            head = self.head()[0]
            rows: list[dict[str, Any]] = []
            moved = 0
            for line in journal.lines():
                if line.seq <= head:
                    continue
                rows.append(audit_row(line, json.loads(line.body)))
                if len(rows) >= batch:
                    self.insert_chained(rows)
                    moved, rows = moved + len(rows), []
            self.insert_chained(rows)
            moved += len(rows)
            journal.clear()
        if moved:
            _log.warning("audit journal %s: %d record(s) moved into the store", journal.path, moved)
        return moved

    def rows(
        self, *, since: float | None = None, kind: str | None = None
    ) -> Generator[Any, None, None]:
        """Audit rows in chain order (optionally newer than ``since`` / of one kind)."""
        query = sa.select(audit_table).order_by(audit_table.c.seq)
        if since is not None:
            query = query.where(audit_table.c.created >= _utc(since))
        if kind is not None:
            query = query.where(audit_table.c.kind == kind)
        with self._store.session() as conn:
            result = conn.execute(query.execution_options(yield_per=2000))
            try:
                yield from result
            finally:
                result.close()

    def decision(self, decision_id: str) -> dict[str, Any] | None:
        """The body of one record by id, or ``None``."""
        with self._store.session() as conn:
            row = conn.execute(
                sa.select(audit_table.c.body).where(audit_table.c.id == decision_id)
            ).first()
        return None if row is None else dict(json.loads(row[0]))

    def add_feedback(
        self, decision_id: str, label: str, *, reviewer: str | None, note: str | None
    ) -> None:
        """Attach a ground-truth label to a decision (the latest label wins)."""
        with self._store.session(write=True) as conn:
            conn.execute(
                feedback_table.insert(),
                {
                    "decision_id": decision_id,
                    "label": label,
                    "reviewer": reviewer,
                    "note": note,
                    "created": _utc(time.time()),
                },
            )

    def labelled(self, *, since: float | None = None) -> dict[str, tuple[str, str]]:
        """Decision id -> (decision, latest feedback label), for decisions since ``since``."""
        query = (
            sa.select(feedback_table.c.decision_id, audit_table.c.decision, feedback_table.c.label)
            .join(audit_table, audit_table.c.id == feedback_table.c.decision_id)
            .order_by(feedback_table.c.seq)
        )
        if since is not None:
            query = query.where(audit_table.c.created >= _utc(since))
        with self._store.session() as conn:
            return {str(r[0]): (str(r[1]), str(r[2])) for r in conn.execute(query)}

    def prune(
        self,
        older_than_s: float,
        *,
        now: float | None = None,
        chain: Callable[[dict[str, Any]], object] | None = None,
    ) -> int:
        """Delete records older than the age; chain a ``retention`` record. Returns the count.

        ``chain`` appends the retention record instead of this store (the service's
        writer, which owns the chain while it runs)."""
        cutoff = (time.time() if now is None else now) - older_than_s
        with self._lock:
            return self._prune(cutoff, chain or (lambda body: self._append([body])))

    def _prune(self, cutoff_posix: float, chain: Callable[[dict[str, Any]], object]) -> int:
        cutoff = _utc(cutoff_posix)
        with self._store.session(write=True) as conn:
            first_kept = conn.execute(
                sa.select(audit_table.c.seq, audit_table.c.prev_hash)
                .where(audit_table.c.created >= cutoff)
                .order_by(audit_table.c.seq)
                .limit(1)
            ).first()
            bound = audit_table.c.created < cutoff
            if first_kept is not None:
                bound = audit_table.c.seq < first_kept[0]
            deleted = conn.execute(audit_table.delete().where(bound)).rowcount  # type: ignore[attr-defined]
        if deleted:
            if first_kept is None:  # everything went: the retention record is the anchor
                seq, prev = self.head()[0] + 1, self.head()[1]
            else:
                seq, prev = int(first_kept[0]), str(first_kept[1])
            chain(
                {
                    "kind": "retention",
                    "id": hashlib.sha256(f"retention{time.time_ns()}".encode()).hexdigest()[:32],
                    "created": time.time(),
                    "deleted": int(deleted),
                    "cutoff": cutoff_posix,
                    "first_kept_seq": seq,
                    "anchor_hash": prev,
                }
            )
        return int(deleted)

    def add_alert_delivered(self, alert: Alert, delivered: Mapping[str, Delivery]) -> int:
        """Store a fired alert and its deliveries in the history's ``alerts`` table."""
        return self._store.add_alert(alert, delivered)

    def last_alert_at(self, key: str) -> datetime | None:
        """When the service's alert ``key`` last fired (for the cool-down)."""
        return self._store.last_alert_at(key, source="service")

    def close(self) -> None:
        """Release the connection pool."""
        self._store.close()


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What :func:`verify_chain` found: ``ok``, how many records, the first broken one."""

    ok: bool
    records: int
    first_broken_seq: int | None = None
    first_broken_id: str | None = None
    problem: str | None = None


def verify_chain(store: AuditStore) -> ChainReport:
    """Recompute every hash in order; the first mismatch (or gap) is named."""
    with contextlib.closing(store.rows()) as rows:
        return _verify(rows)


def _check_row(row: Any, prev: str | None, expected_seq: int | None) -> str | None:
    """What is wrong with one row given the previous one, or ``None``."""
    seq, body = int(row.seq), str(row.body)
    if expected_seq is not None and seq != expected_seq:
        return f"sequence gap: expected {expected_seq}, found {seq}"
    if prev is not None and row.prev_hash != prev:
        return "prev_hash does not match the previous record's hash"
    if chain_hash(str(row.prev_hash), body) != row.hash:
        return "hash does not match the record's contents"
    try:
        data = json.loads(body)
    except ValueError:
        return "body is not JSON"
    if data.get("seq") != seq or data.get("id") != row.id:
        return "body's seq/id differ from the row's"
    return None


def _verify(rows: Iterator[Any]) -> ChainReport:
    prev: str | None = None
    expected_seq: int | None = None
    count = 0
    anchors: dict[int, str] = {}
    first: tuple[int, str, str] | None = None
    problem: ChainReport | None = None
    for row in rows:
        count += 1
        if first is None:
            first = (int(row.seq), str(row.id), str(row.prev_hash))
        issue = _check_row(row, prev, expected_seq)
        if issue is not None:
            problem = ChainReport(False, count, int(row.seq), str(row.id), issue)
            break
        data = json.loads(row.body)
        if data.get("kind") == "retention":
            anchors[int(data["first_kept_seq"])] = str(data["anchor_hash"])
        prev, expected_seq = str(row.hash), int(row.seq) + 1
    if first is not None and first[0] != 1:  # a missing prefix is the earliest problem
        seq0, rid0, prev0 = first
        if anchors.get(seq0) != prev0 and prev0 != GENESIS:
            return ChainReport(False, count, seq0, rid0, "records before it were removed")
    return problem or ChainReport(True, count)
