"""A stored run's samples beside their outcomes: paged, filtered, one at a time.

Outcome columns (status, blocked, score) are filtered in SQL. A sample's own fields
(label, category, tier, source, text) live in the run's sample document (see
:mod:`shieldbench.store._samples`), not in rows: each document is read once and kept
in a small in-process cache keyed by its sha256 (content-addressed, so an entry can
never be stale) as column lists, which filter 100,000 samples in milliseconds. Only
the page's rows are then read whole.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import Session

from shieldbench.errors import StoreError
from shieldbench.store._models import OutcomeRow, SampleSetRow
from shieldbench.store._read import run_row

__all__ = [
    "OUTCOME_KINDS",
    "OutcomeKind",
    "OutcomePage",
    "SampleColumns",
    "StoredOutcome",
    "outcome_at",
    "outcome_page",
    "sample_columns",
    "sample_facets",
]

OutcomeKind = Literal["bypass", "false_positive", "blocked", "allowed", "error", "timeout"]
OUTCOME_KINDS: tuple[OutcomeKind, ...] = (
    "bypass",
    "false_positive",
    "blocked",
    "allowed",
    "error",
    "timeout",
)


@dataclass(frozen=True, slots=True)
class StoredOutcome:
    """One screened sample of a stored run: the sample's fields beside its outcome."""

    position: int
    sample_id: str
    text: str
    label: str
    category: str
    subcategory: str | None
    severity: str | None
    tier: str | None
    source: str | None
    metadata: Mapping[str, Any]
    status: str
    blocked: bool | None
    score: float | None
    latency_ms: float | None
    attempts: int
    verdict_label: str | None
    reasons: tuple[str, ...]
    details: Mapping[str, Any]
    error: str | None
    end_to_end: Mapping[str, Any] | None

    @property
    def kind(self) -> str:
        """``bypass``, ``false_positive``, ``blocked``, ``allowed``, ``error`` or ``timeout``."""
        return _kind(self.status, self.blocked, self.label)


@dataclass(frozen=True, slots=True)
class OutcomePage:
    """One page of a run's outcomes that match the filters, and how many match."""

    items: tuple[StoredOutcome, ...]
    total: int
    offset: int
    limit: int


@dataclass(frozen=True, slots=True)
class SampleColumns:
    """A sample document as columns (position order), for filtering without rows."""

    digest: str
    records: tuple[list[Any], ...]
    lowered: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.records)

    def label(self, i: int) -> str:
        return str(self.records[i][2])


_CACHE_SIZE = 8
_cache: OrderedDict[str, SampleColumns] = OrderedDict()
_cache_lock = threading.Lock()


def sample_columns(session: Session, digest: str) -> SampleColumns:
    """The sample document ``digest`` as columns (cached: documents never change)."""
    with _cache_lock:
        hit = _cache.get(digest)
        if hit is not None:
            _cache.move_to_end(digest)
            return hit
    data = session.scalar(select(SampleSetRow.data).where(SampleSetRow.digest == digest))
    if data is None:
        raise StoreError(f"the sample document {digest} is missing from the history")
    records = tuple(json.loads(bytes(data).decode("utf-8", "surrogatepass")))
    columns = SampleColumns(digest, records, tuple(str(r[1]).casefold() for r in records))
    with _cache_lock:
        _cache[digest] = columns
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return columns


def _kind_condition(kind: OutcomeKind) -> ColumnElement[bool]:
    if kind in ("error", "timeout"):
        return OutcomeRow.status == kind
    blocked = kind in ("false_positive", "blocked")
    return and_(OutcomeRow.status == "ok", OutcomeRow.blocked.is_(blocked))


def outcome_page(
    session: Session,
    run_id: str,
    *,
    kinds: Sequence[OutcomeKind] = (),
    search: str | None = None,
    category: str | None = None,
    tier: str | None = None,
    source: str | None = None,
    label: str | None = None,
    score_min: float | None = None,
    score_max: float | None = None,
    positions: Sequence[int] | None = None,
    offset: int = 0,
    limit: int = 50,
) -> OutcomePage:
    """A page of run ``run_id``'s outcomes matching every filter, in position order.

    ``kinds`` (any of :data:`OUTCOME_KINDS`) and the score range are SQL conditions;
    the sample's fields (``search``: case-insensitive substring of the text;
    ``category``, ``tier``, ``source``, ``label``: exact) filter the cached sample
    columns; ``positions`` restricts to those positions (a comparison's flips).
    """
    if offset < 0 or not 1 <= limit <= 1000:
        raise StoreError(f"offset {offset} / limit {limit}: offset >= 0, limit 1..1000")
    unknown = [k for k in kinds if k not in OUTCOME_KINDS]
    if unknown:
        raise StoreError(f"outcome kind {unknown[0]!r}: choose from {', '.join(OUTCOME_KINDS)}")
    row = run_row(session, run_id)
    columns = sample_columns(session, row.sample_set)
    conditions: list[ColumnElement[bool]] = [OutcomeRow.run_pk == row.pk]
    if kinds:
        conditions.append(or_(*(_kind_condition(k) for k in kinds)))
    if score_min is not None:
        conditions.append(OutcomeRow.score >= score_min)
    if score_max is not None:
        conditions.append(OutcomeRow.score <= score_max)
    keep = _sample_filter(columns, search, category, tier, source, label)
    wanted = set(kinds)
    allowed = None if positions is None else set(positions)
    query = select(OutcomeRow.position, OutcomeRow.status, OutcomeRow.blocked).where(*conditions)
    matching = [
        p
        for p, status, blocked in session.execute(query.order_by(OutcomeRow.position))
        if (allowed is None or p in allowed)
        and (keep is None or keep(p))
        and (not wanted or _kind(status, blocked, columns.label(p)) in wanted)
    ]
    page = matching[offset : offset + limit]
    return OutcomePage(_outcomes(session, row.pk, columns, page), len(matching), offset, limit)


def _kind(status: str, blocked: bool | None, label: str) -> str:
    if status != "ok":
        return status
    if label == "attack":
        return "blocked" if blocked else "bypass"
    return "false_positive" if blocked else "allowed"


def _sample_filter(
    columns: SampleColumns,
    search: str | None,
    category: str | None,
    tier: str | None,
    source: str | None,
    label: str | None,
) -> Any:
    needle = search.casefold() if search else None
    checks: list[tuple[int, str]] = [
        (i, v) for i, v in ((3, category), (6, tier), (7, source), (2, label)) if v
    ]
    if needle is None and not checks:
        return None
    records, lowered = columns.records, columns.lowered

    def keep(p: int) -> bool:
        if p >= len(records):
            return False
        r = records[p]
        if any(r[i] != v for i, v in checks):
            return False
        return needle is None or needle in lowered[p]

    return keep


def _outcomes(
    session: Session, run_pk: int, columns: SampleColumns, positions: Sequence[int]
) -> tuple[StoredOutcome, ...]:
    if not positions:
        return ()
    query = (
        select(OutcomeRow)
        .where(OutcomeRow.run_pk == run_pk, OutcomeRow.position.in_(list(positions)))
        .order_by(OutcomeRow.position)
    )
    return tuple(_stored(o, columns.records[o.position]) for o in session.scalars(query))


def _stored(o: OutcomeRow, r: list[Any]) -> StoredOutcome:
    return StoredOutcome(
        position=o.position,
        sample_id=str(r[0]),
        text=str(r[1]),
        label=str(r[2]),
        category=str(r[3]),
        subcategory=r[4],
        severity=r[5],
        tier=r[6],
        source=r[7],
        metadata=r[8] or {},
        status=o.status,
        blocked=o.blocked,
        score=o.score,
        latency_ms=o.latency_ms,
        attempts=o.attempts,
        verdict_label=o.verdict_label,
        reasons=tuple(o.reasons or ()),
        details=o.details or {},
        error=o.error,
        end_to_end=o.end_to_end,
    )


def outcome_at(session: Session, run_id: str, position: int) -> StoredOutcome:
    """Run ``run_id``'s outcome at ``position`` with its sample; :class:`StoreError`."""
    row = run_row(session, run_id)
    columns = sample_columns(session, row.sample_set)
    found = _outcomes(session, row.pk, columns, [position]) if position < len(columns) else ()
    if not found:
        raise StoreError(f"run {run_id!r} has no sample at position {position}")
    return found[0]


def sample_facets(session: Session, run_id: str) -> dict[str, list[str]]:
    """The distinct categories, tiers and sources of run ``run_id``'s samples."""
    columns = sample_columns(session, run_row(session, run_id).sample_set)
    facets: dict[str, set[str]] = {"category": set(), "tier": set(), "source": set()}
    for r in columns.records:
        for name, i in (("category", 3), ("tier", 6), ("source", 7)):
            if r[i]:
                facets[name].add(str(r[i]))
    return {k: sorted(v) for k, v in facets.items()}
