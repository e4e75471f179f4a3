"""The audit log: append-only, hash-chained records of every decision, in the store.

:class:`AuditStore` is the database side (append a batch in one transaction, read the
chain, feedback, retention). :class:`AuditWriter` is the service side: requests hand
it a record and await its commit (group commit: one transaction per batch of
whatever arrived meanwhile), so a client never gets an answer whose decision is not
durable. :func:`verify_chain` recomputes every hash and names the first broken record.

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

import asyncio
import contextlib
import hashlib
import json
import logging
import queue
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from shieldbench.alerts import Alert, Delivery
from shieldbench.service._tables import audit_table, feedback_table
from shieldbench.store import open_store

__all__ = ["AuditStore", "AuditWriter", "ChainReport", "verify_chain"]

_log = logging.getLogger("shieldbench.service.audit")
GENESIS = "0" * 64


def canonical(body: Mapping[str, Any]) -> str:
    """The JSON a record is hashed over: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def chain_hash(prev_hash: str, body: str) -> str:
    """``sha256(prev_hash + body)`` as hex."""
    return hashlib.sha256((prev_hash + body).encode("utf-8", "surrogatepass")).hexdigest()


def _utc(posix: float) -> datetime:
    return datetime.fromtimestamp(posix, UTC)


class AuditStore:
    """The audit and feedback tables of one history store (opened and migrated here)."""

    def __init__(self, db: str | None = None) -> None:
        self._store = open_store(db)
        self.url = self._store.url
        self._head: tuple[int, str] | None = None
        self._lock = threading.RLock()  # one appender at a time: the chain is a sequence

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
            rows.append(
                {
                    "seq": seq,
                    "id": str(body["id"]),
                    "kind": str(body["kind"]),
                    "ref": body.get("ref"),
                    "created": _utc(float(body["created"])),
                    "decision": body.get("decision"),
                    "body": text,
                    "prev_hash": prev,
                    "hash": digest,
                }
            )
            prev = digest
        if not rows:
            return
        try:
            with self._store.connection(write=True) as conn:
                conn.execute(audit_table.insert(), rows)
        except BaseException:
            self._head = None  # re-read the head: the transaction may or may not be there
            raise
        self._head = (seq, prev)

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

    def prune(self, older_than_s: float, *, now: float | None = None) -> int:
        """Delete records older than the age; chain a ``retention`` record. Returns the count."""
        cutoff = (time.time() if now is None else now) - older_than_s
        with self._lock:
            return self._prune(cutoff)

    def _prune(self, cutoff_posix: float) -> int:
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
            anchor = {"first_kept_seq": seq, "anchor_hash": prev}
            self._append(
                [
                    {
                        "kind": "retention",
                        "id": hashlib.sha256(f"retention{time.time_ns()}".encode()).hexdigest()[
                            :32
                        ],
                        "created": time.time(),
                        "deleted": int(deleted),
                        "cutoff": cutoff_posix,
                        **anchor,
                    }
                ]
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


class AuditWriter:
    """Group-commits records from the event loop on one writer thread, in order."""

    def __init__(self, store: AuditStore, *, max_batch: int = 512, defer_s: float = 0.2) -> None:
        self.store = store
        self.max_batch = max_batch
        self.defer_s = defer_s
        self._queue: queue.SimpleQueue[
            tuple[dict[str, Any], asyncio.Future[None] | None] | None
        ] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="shieldbench-audit", daemon=True)
        self.written = 0
        self.failed = 0
        self._thread.start()

    def submit(self, body: dict[str, Any]) -> asyncio.Future[None]:
        """Queue one record; the future completes once it is committed (or failed)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put((body, future))
        return future

    def submit_nowait(self, body: dict[str, Any]) -> None:
        """Queue a record nobody waits for (warn results after the response)."""
        self._queue.put((body, None))

    def _run(self) -> None:
        # Records nobody waits for (warn results, alerts) are held up to
        # ``defer_s`` and committed with the next awaited batch, so they do not cost a
        # transaction of their own in front of a request that is waiting.
        held: list[tuple[dict[str, Any], asyncio.Future[None] | None]] = []
        deadline = 0.0
        while True:
            timeout = max(0.0, deadline - time.monotonic()) if held else None
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                self._commit(held)
                held = []
                continue
            batch = held
            held = []
            stop = False
            while True:
                if item is None:
                    stop = True
                    break
                batch.append(item)
                if len(batch) >= self.max_batch:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if stop or any(future is not None for _, future in batch):
                self._commit(batch)
            else:
                held = batch
                deadline = time.monotonic() + self.defer_s
            if stop:
                return

    def _commit(self, batch: list[tuple[dict[str, Any], asyncio.Future[None] | None]]) -> None:
        if not batch:
            return
        error: BaseException | None = None
        try:
            self.store.append([body for body, _ in batch])
            self.written += len(batch)
        except Exception as exc:
            error = exc
            self.failed += len(batch)
            _log.error("audit write of %d record(s) failed: %s", len(batch), exc)
        for _, future in batch:
            if future is not None:
                future.get_loop().call_soon_threadsafe(_settle, future, error)

    def close(self, timeout_s: float = 30.0) -> None:
        """Flush what is queued and stop the thread."""
        self._queue.put(None)
        self._thread.join(timeout_s)


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
