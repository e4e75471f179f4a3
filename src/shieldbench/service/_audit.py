"""The audit log: append-only, hash-chained records of every decision, in the store.

:class:`AuditStore` is the database side (append a batch in one transaction, read the
chain, feedback, retention; opening it first moves in what a dead server left in its
journal). The service writes through :class:`~shieldbench.service._writer.AuditWriter`
(records are chained and made durable in the local journal before the answer, then
moved here in batches). ``verify_chain`` (:mod:`~shieldbench.service._verify`)
recomputes every hash, checks every column against the hashed body, and names each
broken record.

Retention deletes records older than an age and appends a ``retention`` record whose
body holds the first kept sequence number and the hash it chains from, so a verify
after retention still proves nothing else was removed.

Example:
    >>> import tempfile
    >>> store = AuditStore(tempfile.mkdtemp() + "/history.db")
    >>> store.append([{"kind": "decision", "id": "d1", "created": 1.0, "decision": "allow"}])
    >>> store.head()[0]
    1
    >>> store.close()
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from shieldbench.alerts import Alert, Delivery
from shieldbench.errors import StoreError
from shieldbench.service._journal import (
    Journal,
    JournalLine,
    Record,
    Unreadable,
    chain_hash,
    chain_hash_bytes,
    journal_path,
    quarantine,
    quarantine_path,
    quarantined_count,
)
from shieldbench.service._record import (
    GENESIS,
    audit_row,
    canonical,
    canonical_bytes,
    scrub_record,
    utc,
)
from shieldbench.service._tables import audit_table, feedback_table
from shieldbench.store import open_store

__all__ = [
    "GENESIS",
    "AuditStore",
    "Recovery",
    "audit_row",
    "canonical",
    "canonical_bytes",
    "chain_hash",
    "chain_hash_bytes",
    "scrub_record",
]

_log = logging.getLogger("shieldbench.service.audit")


@dataclass(frozen=True, slots=True)
class Recovery:
    """What the last replay of a journal did: records moved into the store, unreadable
    stretches quarantined, and the quarantine file (``None`` when nothing was)."""

    moved: int
    quarantined: int
    quarantine: Path | None


#: What the store answers to a record it will never take (retrying cannot help).
_REFUSED = (sa.exc.IntegrityError, sa.exc.DataError)


def _refusal(exc: BaseException) -> str | None:
    """Why the store refused a record for what is in it (``None``: another failure)."""
    cause = exc if isinstance(exc, _REFUSED) else exc.__cause__
    if isinstance(cause, _REFUSED):
        return str(getattr(cause, "orig", cause)).splitlines()[0]
    return None


class AuditStore:
    """The audit and feedback tables of one history store (opened and migrated here)."""

    def __init__(self, db: str | None = None, *, recover: bool = True) -> None:
        self._store = open_store(db)
        self.url = self._store.url
        self.journal_path = journal_path(self._store.backend, self.url)
        self.quarantine_path = quarantine_path(self.journal_path)
        self._head: tuple[int, str] | None = None
        self._lock = threading.RLock()  # one appender at a time: the chain is a sequence
        self.recovery = Recovery(0, 0, None)
        if recover and self.journal_path.exists():
            # A server that died left records in its journal: move them in first (a
            # journal a live server holds is its own business: it is skipped).
            journal = Journal.open(self.journal_path)
            if journal is not None:
                try:
                    self.replay(journal)
                finally:
                    journal.close()

    def quarantined(self) -> int:
        """How many unreadable stretches of the journal sit in :attr:`quarantine_path`
        (``0``: none; the file is kept until an operator moves it away)."""
        return quarantined_count(self.journal_path)

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
            text = canonical(scrub_record({**body, "seq": seq}))
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

    def replay(self, journal: Journal, *, batch: int = 1000) -> Recovery:
        """Move the journal's records that the store lacks into it; empty the journal.

        Every readable record goes in, whatever damage comes before or after it; the
        bytes that hold no record, and readable records the store refuses (a sequence
        number it holds with another hash, a duplicate id), are appended to the
        quarantine file first (synced), and only then is the journal emptied. A gap
        they leave in the chain stays for :func:`verify_chain` to report."""
        with self._lock:
            self._head = None
            head = last = self.head()[0]
            pending: list[Record] = []
            known: list[Record] = []
            bad: list[Unreadable] = []
            moved = 0
            for item in journal.scan():
                if isinstance(item, Unreadable):
                    bad.append(item)
                elif item.line.seq > last:
                    pending.append(item)
                    last = item.line.seq
                elif item.line.seq <= head:  # moved before the server died, most likely
                    known.append(item)
                else:
                    bad.append(item.unreadable(f"sequence number {item.line.seq} repeated"))
                if len(pending) >= batch:
                    moved += self._insert_recovered(pending, bad)
                    pending = []
                if len(known) >= batch:
                    bad += self._not_stored(known)
                    known = []
            moved += self._insert_recovered(pending, bad)
            bad += self._not_stored(known)
            try:
                kept = quarantine(journal.path, sorted(bad, key=lambda u: u.offset))
            except OSError as exc:  # the journal stays as it is: nothing is lost
                raise StoreError(
                    f"audit journal {journal.path}: cannot write its quarantine file"
                    f" {quarantine_path(journal.path)} ({exc.strerror or exc}); the journal"
                    " is kept: free space or fix permissions, then open the store again"
                ) from None
            journal.clear()
        self.recovery = Recovery(moved, kept, quarantine_path(journal.path) if kept else None)
        if moved:
            _log.warning("audit journal %s: %d record(s) moved into the store", journal.path, moved)
        if kept:
            _log.error(
                "audit journal %s: %d unreadable stretch(es) quarantined in %s",
                journal.path,
                kept,
                self.recovery.quarantine,
            )
        return self.recovery

    def _insert_recovered(self, records: Sequence[Record], bad: list[Unreadable]) -> int:
        refused = self.insert_isolating([audit_row(r.line, r.body) for r in records])
        for index, why in refused:
            bad.append(records[index].unreadable(f"the store refused the record: {why}"))
        return len(records) - len(refused)

    def insert_isolating(self, rows: Sequence[Mapping[str, Any]]) -> list[tuple[int, str]]:
        """:meth:`insert_chained`; if the store refuses the batch for what is in it (a
        constraint, a value too long; not for being down, which raises), insert the
        rows one by one. Returns the refused rows' indexes and why."""
        try:
            self.insert_chained(rows)
            return []
        except (StoreError, *_REFUSED) as exc:
            if _refusal(exc) is None:
                raise
        refused = []
        for index, row in enumerate(rows):
            try:
                self.insert_chained([row])
            except (StoreError, *_REFUSED) as exc:
                why = _refusal(exc)
                if why is None:
                    raise
                refused.append((index, why))
        return refused

    def _not_stored(self, records: Sequence[Record]) -> list[Unreadable]:
        """Of records at or below the store's head, those the store does not hold as is."""
        if not records:
            return []
        seqs = [r.line.seq for r in records]
        with self._store.session() as conn:
            stored = dict(
                conn.execute(
                    sa.select(audit_table.c.seq, audit_table.c.hash).where(
                        audit_table.c.seq.in_(seqs)
                    )
                ).all()
            )
        return [
            r.unreadable(f"sequence number {r.line.seq} is in the store with another hash")
            if r.line.seq in stored
            else r.unreadable(f"sequence number {r.line.seq} is below the store's head, not in it")
            for r in records
            if stored.get(r.line.seq) != r.line.hash
        ]

    def rows(
        self, *, since: float | None = None, kind: str | None = None
    ) -> Generator[Any, None, None]:
        """Audit rows in chain order (optionally newer than ``since`` / of one kind)."""
        query = sa.select(audit_table).order_by(audit_table.c.seq)
        if since is not None:
            query = query.where(audit_table.c.created >= utc(since))
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
                    "created": utc(time.time()),
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
            query = query.where(audit_table.c.created >= utc(since))
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
        cutoff = utc(cutoff_posix)
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
