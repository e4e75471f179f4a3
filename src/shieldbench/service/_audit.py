"""The audit log: append-only, hash-chained records of every decision, in the store.

:class:`AuditStore` is the database side (append a batch in one transaction, read the
chain, feedback, retention; opening it first moves in what a dead server left in its
journal). The service writes through :class:`~shieldbench.service._writer.AuditWriter`
(records are chained and made durable in the local journal before the answer, then
moved here in batches). ``verify_chain`` (:mod:`~shieldbench.service._verify`)
recomputes every hash, checks every column against the hashed body, and names each
broken record.

Each writer keeps its own chain (``chain`` column and body field; ``main`` for the
single SQLite server and for every record of before replicas); sequence numbers and
heads are per chain. Retention deletes records older than an age and appends a
``retention`` record whose body anchors each chain's new start (the first kept
sequence number and the hash it chains from), so a verify after retention still
proves nothing else was removed (:mod:`~shieldbench.service._retention`).

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
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from shieldbench.alerts import Alert, Delivery
from shieldbench.errors import StoreError
from shieldbench.service._journal import (
    Journal,
    JournalLine,
    chain_hash,
    chain_hash_bytes,
    journal_path,
    quarantine_files,
    quarantine_path,
    quarantined_count,
)
from shieldbench.service._pgcopy import copy_rows
from shieldbench.service._record import (
    GENESIS,
    MAIN_CHAIN,
    audit_row,
    canonical,
    canonical_bytes,
    scrub_record,
    utc,
)
from shieldbench.service._replay import Recovery, recover_journals, replay
from shieldbench.service._retention import prune_chains
from shieldbench.service._tables import audit_table, feedback_table
from shieldbench.store import open_store

__all__ = [
    "GENESIS",
    "MAIN_CHAIN",
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
        self._heads: dict[str, tuple[int, str]] = {}
        self.lock = threading.RLock()  # one appender at a time: a chain is a sequence
        self._lock = self.lock
        self.recovery = Recovery(0, 0, None)
        if recover:
            self.recover()

    def recover(self) -> Recovery:
        """Move in what dead servers left in this store's journals on this host (a
        journal a live server holds is its own business: it is skipped)."""
        moved, kept = recover_journals(self)
        where = quarantine_path(self.journal_path) if kept else None
        self.recovery = Recovery(moved, kept, where)
        return self.recovery

    @property
    def backend(self) -> str:
        """The store's backend (``sqlite``, ``postgresql``)."""
        return self._store.backend

    def session(self, *, write: bool = False) -> AbstractContextManager[Any]:
        """A session on the store (what the audit modules query through)."""
        return self._store.session(write=write)

    def forget_heads(self) -> None:
        """Re-read every chain's head from the store on next use."""
        self._heads.clear()

    def quarantined(self) -> int:
        """How many unreadable stretches of the store's journals sit in their quarantine
        files (``0``: none; a file is kept until an operator moves it away)."""
        files = quarantine_files(self.journal_path)
        journals = [p.with_name(p.name.removesuffix(".quarantine")) for p in files]
        return sum(quarantined_count(journal) for journal in journals)

    def quarantine_files(self) -> list[Path]:
        """The quarantine files of the store's journals on this host."""
        return quarantine_files(self.journal_path)

    def journal_held(self) -> bool:
        """Whether a running server holds this store's ``main`` journal (it writes the
        ``main`` chain: the single SQLite server)."""
        journal = Journal.open(self.journal_path)
        if journal is None:
            return True
        journal.close()
        return False

    def head(self, chain: str = MAIN_CHAIN) -> tuple[int, str]:
        """A chain's last sequence number and hash (``0`` and the genesis hash when empty)."""
        found = self._heads.get(chain)
        if found is None:
            with self._store.session() as conn:
                row = conn.execute(
                    sa.select(audit_table.c.seq, audit_table.c.hash)
                    .where(audit_table.c.chain == chain)
                    .order_by(audit_table.c.seq.desc())
                    .limit(1)
                ).first()
            found = (0, GENESIS) if row is None else (int(row[0]), str(row[1]))
            self._heads[chain] = found
        return found

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
        """Insert rows chained elsewhere (the journal), in order, all or none."""
        if not rows:
            return
        with self._lock:
            try:
                if self._store.backend == "postgresql":
                    # One COPY statement, committed by itself (all or none) on a kept
                    # connection: one round trip a batch, not four (Store.statement).
                    with self._store.statement() as conn:
                        copy_rows(conn, rows)
                else:
                    with self._store.connection(write=True) as conn:
                        conn.execute(audit_table.insert(), rows)
            except BaseException:
                self._heads.clear()  # re-read: the transaction may or may not be there
                raise
            for row in rows:
                self._heads[str(row["chain"])] = (int(row["seq"]), str(row["hash"]))

    def replay(self, journal: Journal, *, batch: int = 1000) -> Recovery:
        """Move the journal's records that the store lacks into it; empty the journal
        (:func:`~shieldbench.service._replay.replay`)."""
        self.recovery = replay(self, journal, batch=batch)
        return self.recovery

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

    def rows(
        self, *, since: float | None = None, kind: str | None = None
    ) -> Generator[Any, None, None]:
        """Audit rows in ``(chain, seq)`` order (optionally newer than ``since`` / of one kind)."""
        query = sa.select(audit_table).order_by(audit_table.c.chain, audit_table.c.seq)
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

    def decision_counts(self, *, since: float) -> dict[str, dict[str, int]]:
        """Chain -> decision -> how many decisions since ``since`` (every replica's)."""
        t = audit_table.c
        query = (
            sa.select(t.chain, t.decision, sa.func.count())
            .where(t.kind == "decision", t.created >= utc(since))
            .group_by(t.chain, t.decision)
        )
        out: dict[str, dict[str, int]] = {}
        with self._store.session() as conn:
            for chain, decision, n in conn.execute(query):
                out.setdefault(str(chain), {})[str(decision)] = int(n)
        return out

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
        """Delete records older than the age in every chain; chain a ``retention`` record
        (:mod:`~shieldbench.service._retention`). Returns the count.

        ``chain`` appends the retention record instead of this store (the service's
        writer, which owns the chain while it runs)."""
        cutoff = (time.time() if now is None else now) - older_than_s
        with self._lock:
            return prune_chains(self, cutoff, chain or (lambda body: self._append([body])))

    def add_alert_delivered(self, alert: Alert, delivered: Mapping[str, Delivery]) -> int:
        """Store a fired alert and its deliveries in the history's ``alerts`` table."""
        return self._store.add_alert(alert, delivered)

    @contextmanager
    def alert_lock(self, key: str) -> Iterator[None]:
        """Hold alert ``key`` against every other replica while the block runs (test
        the cool-down, deliver, record): on PostgreSQL a transaction-scoped advisory
        lock on the key, released when the block ends; on SQLite nothing (one process)."""
        if self.backend != "postgresql":
            yield
            return
        number = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)
        with self._store.connection(write=True) as conn:
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": number})
            yield

    def last_alert_at(self, key: str) -> datetime | None:
        """When the service's alert ``key`` last fired (for the cool-down)."""
        return self._store.last_alert_at(key, source="service")

    def close(self) -> None:
        """Release the connection pool."""
        self._store.close()
