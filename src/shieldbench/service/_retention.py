"""Retention: delete audit records older than an age, and keep every chain verifiable.

Per chain, the records before its first record young enough to keep are deleted (a
chain entirely older than the cut-off loses every record up to the newest one seen;
one its live writer inserts meanwhile is younger and stays). Then one ``retention``
record is chained (by the pruning writer, on its own chain) whose ``anchors`` say,
for every chain that no longer starts at sequence number 1, the first sequence
number it now starts with and the hash that one chains from; ``audit verify`` accepts
exactly those starts. Every prune re-states the anchors of all chains, so deleting
an old retention record never orphans a chain it anchored.

Replicas prune concurrently (each hourly): a chain whose boundary record another
prune deleted meanwhile is left to that prune's retention record, which anchors it.

A retention record of before replicas (``first_kept_seq``/``anchor_hash``, no
``anchors``) anchors its own chain; ``audit verify`` still reads it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

import sqlalchemy as sa

from shieldbench.service._record import utc
from shieldbench.service._tables import audit_table


class AuditStore(Protocol):
    """What retention needs of :class:`~shieldbench.service._audit.AuditStore`."""

    def session(self, *, write: bool = False) -> AbstractContextManager[Any]: ...


__all__ = ["prune_chains"]

_Anchor = dict[str, Any]


def prune_chains(
    store: AuditStore, cutoff_posix: float, chain: Callable[[dict[str, Any]], object]
) -> int:
    """Delete what is older than ``cutoff_posix`` in every chain; ``chain`` appends the
    retention record (when anything was deleted). Returns how many were deleted."""
    cutoff = utc(cutoff_posix)
    t = audit_table.c
    deleted = 0
    anchors: list[_Anchor] = []
    with store.session(write=True) as conn:
        spans = conn.execute(
            sa.select(t.chain, sa.func.min(t.seq), sa.func.max(t.seq)).group_by(t.chain)
        ).all()
        kept = dict(
            conn.execute(
                sa.select(t.chain, sa.func.min(t.seq)).where(t.created >= cutoff).group_by(t.chain)
            ).all()
        )
        for name, low, high in spans:
            first = kept.get(name)
            if first is not None:
                prev = conn.execute(
                    sa.select(t.prev_hash).where(t.chain == name, t.seq == first)
                ).scalar()
                if prev is None:  # another replica's prune took it meanwhile: it anchors
                    continue
                bound = t.seq < first
                anchor: tuple[int, str] = (int(first), str(prev))
            else:  # all of it is old: the next record (if its writer lives) chains on
                last = conn.execute(
                    sa.select(t.hash).where(t.chain == name, t.seq == high)
                ).scalar()
                if last is None:
                    continue
                bound = t.seq <= high
                anchor = (int(high) + 1, str(last))
            gone = conn.execute(audit_table.delete().where(t.chain == name, bound)).rowcount
            deleted += int(gone)
            if gone or int(low) > 1:
                anchors.append(
                    {"chain": str(name), "first_kept_seq": anchor[0], "anchor_hash": anchor[1]}
                )
    if deleted:
        chain(
            {
                "kind": "retention",
                "id": hashlib.sha256(f"retention{time.time_ns()}".encode()).hexdigest()[:32],
                "created": time.time(),
                "deleted": deleted,
                "cutoff": cutoff_posix,
                "anchors": anchors,
            }
        )
    return deleted
