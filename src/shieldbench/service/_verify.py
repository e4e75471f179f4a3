"""``audit verify``: recompute the chain and check every stored column against it.

The hash of a record covers its canonical JSON ``body`` and the previous record's
hash (``sha256(prev_hash + body)``). Every other column of ``guard_audit`` (``seq``,
``id``, ``kind``, ``ref``, ``created``, ``decision``) is a copy of a body field kept for
queries, and the readers query them (``/v1/stats`` joins on ``decision`` and filters
on ``created``, ``audit export`` on ``kind``): so each row's columns are rebuilt from
its hashed body (:func:`~shieldbench.service._audit.audit_row`, the function that
wrote them) and compared, column by column, over the table's columns as the schema
declares them. A column that ``audit_row`` does not derive is itself reported ("not
covered by the chain"), so a new column cannot slip past the check.

The hash itself did not change for this (it never covered the columns, and still
covers the body, which holds them): records written before the column check verify
as they did, and an edit of their columns is now reported too.

Chains: every writer keeps its own chain (the ``chain`` column; ``main`` for the single
SQLite server and every record of before replicas), and each chain is verified on its
own (rows in ``(chain, seq)`` order); a problem names its chain, which names the
replica (``<replica>.<8 hex>``). A chain that does not start at 1 must start where a
retention record (on any chain) anchored it.

Verification does not stop at the first break: each broken record is named by its
sequence number (the first :data:`MAX_LISTED` of them listed, the rest counted), and
the chain is picked up again after it, so one gap (a record quarantined from a
damaged journal, say) does not hide a later edit.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from shieldbench.service._audit import GENESIS, MAIN_CHAIN, AuditStore, audit_row
from shieldbench.service._journal import JournalLine, chain_hash
from shieldbench.service._tables import audit_table

__all__ = ["MAX_LISTED", "ChainProblem", "ChainReport", "verify_chain"]

MAX_LISTED = 100


@dataclass(frozen=True, slots=True)
class ChainProblem:
    """One broken record: its sequence number, id, what is wrong, and its chain."""

    seq: int
    id: str
    problem: str
    chain: str = MAIN_CHAIN


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What :func:`verify_chain` found: ``ok``, how many records, the broken ones.

    ``first_broken_*`` and ``problem`` describe the first broken record (chains in
    name order); ``problems`` lists up to :data:`MAX_LISTED` of them in chain order,
    ``unlisted`` counts the others; ``chains`` counts the chains read."""

    ok: bool
    records: int
    first_broken_seq: int | None = None
    first_broken_id: str | None = None
    problem: str | None = None
    problems: tuple[ChainProblem, ...] = ()
    unlisted: int = 0
    chains: int = 0
    first_broken_chain: str | None = None


def verify_chain(store: AuditStore) -> ChainReport:
    """Recompute every hash in order and check every column; name each broken record."""
    with contextlib.closing(store.rows()) as rows:  # in (chain, seq) order
        return _verify(rows)


def _body_issues(row: Any) -> list[str]:
    """What is wrong between a row's hashed body and its columns."""
    try:
        data = json.loads(str(row.body))
    except (ValueError, RecursionError):
        return ["body is not JSON"]
    if not isinstance(data, dict):
        return ["body is not a JSON object"]
    if data.get("seq") != row.seq:
        return ["body's seq differs from the row's"]
    line = JournalLine(int(row.seq), str(row.prev_hash), str(row.hash), str(row.body))
    try:
        expected = audit_row(line, data)
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        return ["body lacks the fields of an audit record (id, kind, created)"]
    issues = []
    mapping = row._mapping
    for column in audit_table.columns:
        if column.name not in expected:
            issues.append(f"column {column.name} is not covered by the chain")
        elif mapping[column.name] != expected[column.name]:
            issues.append(f"column {column.name} differs from the hashed body")
    return issues


def _row_issues(row: Any, prev: str | None, expected_seq: int | None) -> list[str]:
    """Everything wrong with one row given the previous one (empty: nothing)."""
    issues = []
    seq = int(row.seq)
    if expected_seq is not None and seq != expected_seq:
        issues.append(f"sequence gap: expected {expected_seq}, found {seq}")
    elif prev is not None and row.prev_hash != prev:
        issues.append("prev_hash does not match the previous record's hash")
    if chain_hash(str(row.prev_hash), str(row.body)) != row.hash:
        issues.append("hash does not match the record's contents")
    return issues + _body_issues(row)


def _anchors(row: Any) -> list[tuple[str, int, str]]:
    """The chain starts a retention record anchors: (chain, first kept seq, hash it
    chains from); a record of before replicas anchors its own chain."""
    try:
        data = json.loads(str(row.body))
        if not (isinstance(data, dict) and data.get("kind") == "retention"):
            return []
        if "anchors" in data:
            return [
                (str(a["chain"]), int(a["first_kept_seq"]), str(a["anchor_hash"]))
                for a in data["anchors"]
            ]
        return [(str(row.chain), int(data["first_kept_seq"]), str(data["anchor_hash"]))]
    except (ValueError, KeyError, TypeError, RecursionError):
        return []


def _verify(rows: Iterator[Any]) -> ChainReport:
    prev: str | None = None
    expected_seq: int | None = None
    chain = ""  # no chain id is empty
    count = 0
    anchors: set[tuple[str, int, str]] = set()
    firsts: list[tuple[int, str, str, str]] = []  # per chain: seq, id, prev_hash, chain
    found: list[ChainProblem] = []
    for row in rows:
        count += 1
        if row.chain != chain:  # a new chain starts
            chain, prev, expected_seq = str(row.chain), None, None
            firsts.append((int(row.seq), str(row.id), str(row.prev_hash), chain))
        issues = _row_issues(row, prev, expected_seq)
        if issues:
            found.append(ChainProblem(int(row.seq), str(row.id), "; ".join(issues), chain))
        anchors.update(_anchors(row))
        prev, expected_seq = str(row.hash), int(row.seq) + 1  # picked up again after a break
    for seq0, rid0, prev0, chain0 in firsts:  # a missing prefix is a chain's earliest problem
        if seq0 != 1 and prev0 != GENESIS and (chain0, seq0, prev0) not in anchors:
            found.append(ChainProblem(seq0, rid0, "records before it were removed", chain0))
    if not found:
        return ChainReport(True, count, chains=len(firsts))
    found.sort(key=lambda p: (p.chain, p.seq))
    head = found[0]
    listed = tuple(found[:MAX_LISTED])
    return ChainReport(
        False,
        count,
        head.seq,
        head.id,
        head.problem,
        listed,
        len(found) - len(listed),
        chains=len(firsts),
        first_broken_chain=head.chain,
    )
