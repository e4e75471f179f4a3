"""Moving a journal's records into the store: what a dead writer left, or its own leftovers.

:func:`replay` reads a locked journal (:meth:`~shieldbench.service._journal.Journal.scan`)
and inserts every readable record the store lacks, chain by chain (a record names its
chain; a journal of before replicas holds only ``main``). The bytes that hold no
record, and readable records the store refuses (a sequence number it holds with
another hash, a duplicate id), are appended to the quarantine file first (synced),
and only then is the journal emptied. A gap they leave in a chain stays for
:func:`~shieldbench.service._verify.verify_chain` to report.

:func:`recover_journals` does that for every journal of a store on this host that no
live process holds: the ``main`` one, and each dead replica's (then deleted).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import sqlalchemy as sa

from shieldbench.errors import StoreError
from shieldbench.service._journal import (
    Journal,
    Record,
    Unreadable,
    chain_journals,
    quarantine,
    quarantine_path,
)
from shieldbench.service._record import audit_row, chain_of
from shieldbench.service._tables import audit_table


class AuditStore(Protocol):
    """What a replay needs of :class:`~shieldbench.service._audit.AuditStore`."""

    journal_path: Path
    lock: Any

    def head(self, chain: str = ...) -> tuple[int, str]: ...
    def forget_heads(self) -> None: ...
    def session(self, *, write: bool = False) -> AbstractContextManager[Any]: ...
    def insert_isolating(self, rows: Sequence[Any]) -> list[tuple[int, str]]: ...


__all__ = ["Recovery", "recover_journals", "replay"]

_log = logging.getLogger("shieldbench.service.audit")


@dataclass(frozen=True, slots=True)
class Recovery:
    """What the last replay of a journal did: records moved into the store, unreadable
    stretches quarantined, and the quarantine file (``None`` when nothing was)."""

    moved: int
    quarantined: int
    quarantine: Path | None


def recover_journals(store: AuditStore) -> tuple[int, int]:
    """Replay every journal of ``store`` on this host that nobody holds; a dead
    replica's journal is deleted once its records are in. Returns (moved, quarantined)."""
    moved = kept = 0
    paths = [store.journal_path] if store.journal_path.exists() else []
    for path in [*paths, *chain_journals(store.journal_path)]:
        journal = Journal.open(path, create=False)
        if journal is None:  # held by a live writer (its business), or gone meanwhile
            continue
        try:
            done = replay(store, journal)
            if path != store.journal_path:
                journal.remove()
        finally:
            journal.close()
        moved, kept = moved + done.moved, kept + done.quarantined
    return moved, kept


class _Chains:
    """Per chain: the store's head, and the last sequence number taken from the journal."""

    def __init__(self, store: AuditStore) -> None:
        self._store = store
        self.head: dict[str, int] = {}
        self.last: dict[str, int] = {}

    def classify(self, record: Record) -> str:
        """``pending`` (the store lacks it), ``known`` (at or below the store's head) or
        ``repeated`` (a sequence number the journal already gave)."""
        chain = chain_of(record.body)
        if chain not in self.head:
            self.head[chain] = self.last[chain] = self._store.head(chain)[0]
        seq = record.line.seq
        if seq > self.last[chain]:
            self.last[chain] = seq
            return "pending"
        return "known" if seq <= self.head[chain] else "repeated"


def replay(store: AuditStore, journal: Journal, *, batch: int = 1000) -> Recovery:
    """Move the journal's records that the store lacks into it; empty the journal (see
    the module docstring)."""
    with store.lock:
        store.forget_heads()
        chains = _Chains(store)
        pending: list[Record] = []
        known: list[Record] = []
        bad: list[Unreadable] = []
        moved = 0
        for item in journal.scan():
            if isinstance(item, Unreadable):
                bad.append(item)
                continue
            kind = chains.classify(item)
            if kind == "pending":
                pending.append(item)
            elif kind == "known":  # moved before the writer died, most likely
                known.append(item)
            else:
                bad.append(item.unreadable(f"sequence number {item.line.seq} repeated"))
            if len(pending) >= batch:
                moved += _insert_recovered(store, pending, bad)
                pending = []
            if len(known) >= batch:
                bad += _not_stored(store, known)
                known = []
        moved += _insert_recovered(store, pending, bad)
        bad += _not_stored(store, known)
        try:
            kept = quarantine(journal.path, sorted(bad, key=lambda u: u.offset))
        except OSError as exc:  # the journal stays as it is: nothing is lost
            raise StoreError(
                f"audit journal {journal.path}: cannot write its quarantine file"
                f" {quarantine_path(journal.path)} ({exc.strerror or exc}); the journal"
                " is kept: free space or fix permissions, then open the store again"
            ) from None
        journal.clear()
    recovery = Recovery(moved, kept, quarantine_path(journal.path) if kept else None)
    if moved:
        _log.warning("audit journal %s: %d record(s) moved into the store", journal.path, moved)
    if kept:
        _log.error(
            "audit journal %s: %d unreadable stretch(es) quarantined in %s",
            journal.path,
            kept,
            recovery.quarantine,
        )
    return recovery


def _insert_recovered(store: AuditStore, records: Sequence[Record], bad: list[Unreadable]) -> int:
    refused = store.insert_isolating([audit_row(r.line, r.body) for r in records])
    for index, why in refused:
        bad.append(records[index].unreadable(f"the store refused the record: {why}"))
    return len(records) - len(refused)


def _not_stored(store: AuditStore, records: Sequence[Record]) -> list[Unreadable]:
    """Of records at or below their chain's head, those the store does not hold as is."""
    if not records:
        return []
    keys = {(chain_of(r.body), r.line.seq) for r in records}
    stored: dict[tuple[str, int], str] = {}
    with store.session() as conn:
        for chain in {k[0] for k in keys}:
            seqs = [s for c, s in keys if c == chain]
            query = sa.select(audit_table.c.seq, audit_table.c.hash).where(
                audit_table.c.chain == chain, audit_table.c.seq.in_(seqs)
            )
            stored.update(((chain, int(s)), str(h)) for s, h in conn.execute(query))
    out = []
    for r in records:
        key = (chain_of(r.body), r.line.seq)
        if stored.get(key) == r.line.hash:
            continue
        where = (
            "is in the store with another hash"
            if key in stored
            else "is below the store's head, not in it"
        )
        out.append(r.unreadable(f"sequence number {r.line.seq} {where}"))
    return out
