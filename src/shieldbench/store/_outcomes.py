"""A stored run's samples beside their outcomes: filtered, paged, one at a time.

A sample's own fields (label, category, tier, source, text) live in the run's sample
document (see :mod:`shieldbench.store._samples`), not in rows; the outcome columns
that decide a verdict (status, blocked, score) are rows. Filtering 100,000 outcomes
per request by reading them from SQL costs about a second on a loaded 2-core machine,
so both are read once and kept as compact column arrays in small in-process caches:
a sample document by its sha256 (content-addressed), a run's verdict columns by its
row key and the time it was recorded (a stored run is never modified: a re-run under
the same id is a new row). A filter is then a few vectorised comparisons, and only
the rows of the requested page are read whole from SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session

from shieldbench._lru import LruCache
from shieldbench.errors import StoreError
from shieldbench.store._models import OutcomeRow, RunRow
from shieldbench.store._read import run_row
from shieldbench.store._samples import load_records

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

T = TypeVar("T")

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
        if self.status != "ok":
            return self.status
        if self.label == "attack":
            return "blocked" if self.blocked else "bypass"
        return "false_positive" if self.blocked else "allowed"


@dataclass(frozen=True, slots=True)
class OutcomePage:
    """One page of a run's outcomes that match the filters, and how many match."""

    items: tuple[StoredOutcome, ...]
    total: int
    offset: int
    limit: int


@dataclass(frozen=True, slots=True, eq=False)
class SampleColumns:
    """A sample document as columns, in position order: the records themselves, the
    case-folded texts (search), whether each is an attack, and each of category /
    tier / source as integer codes into its sorted distinct values."""

    digest: str
    records: tuple[list[Any], ...]
    lowered: tuple[str, ...]
    attack: NDArray[np.bool_]
    codes: Mapping[str, NDArray[np.int32]]
    values: Mapping[str, tuple[str, ...]]

    def __len__(self) -> int:
        return len(self.records)


@dataclass(frozen=True, slots=True, eq=False)
class _Verdicts:
    """A run's verdict columns by position: status (0 ok, 1 error, 2 timeout),
    blocked, score (NaN: none)."""

    status: NDArray[np.int8]
    blocked: NDArray[np.bool_]
    score: NDArray[np.float64]


_FACETS = {"category": 3, "tier": 6, "source": 7}
_STATUS = {"ok": 0, "error": 1, "timeout": 2}


_documents = LruCache(8)
_verdicts = LruCache(16)


def _columns(digest: str, stored: list[list[Any]]) -> SampleColumns:
    records = tuple(stored)
    codes, values = {}, {}
    for name, i in _FACETS.items():
        distinct = sorted({str(r[i]) for r in records if r[i]})
        index = {v: k for k, v in enumerate(distinct)}
        codes[name] = np.fromiter(
            (index[str(r[i])] if r[i] else -1 for r in records), np.int32, len(records)
        )
        values[name] = tuple(distinct)
    attack = np.fromiter((r[2] == "attack" for r in records), np.bool_, len(records))
    lowered = tuple(str(r[1]).casefold() for r in records)
    return SampleColumns(digest, records, lowered, attack, codes, values)


def sample_columns(session: Session, digest: str) -> SampleColumns:
    """The sample document ``digest`` as columns (cached: documents never change)."""

    def read() -> SampleColumns:
        records = load_records(session, digest)
        if records is None:
            raise StoreError(f"the sample set {digest} is missing from the history")
        return _columns(digest, records)

    return _documents.get(digest, read)


def _verdict_columns(session: Session, row: RunRow, n: int) -> _Verdicts:
    """Run ``row``'s verdict columns over its ``n`` samples (cached)."""

    def read() -> _Verdicts:
        status = np.full(n, 1, np.int8)
        blocked = np.zeros(n, np.bool_)
        score = np.full(n, np.nan)
        query = select(
            OutcomeRow.position, OutcomeRow.status, OutcomeRow.blocked, OutcomeRow.score
        ).where(OutcomeRow.run_pk == row.pk)
        for p, st, b, sc in session.execute(query):
            status[p] = _STATUS.get(st, 1)
            blocked[p] = bool(b)
            if sc is not None:
                score[p] = sc
        return _Verdicts(status, blocked, score)

    where = str(session.get_bind().engine.url)
    return _verdicts.get((where, row.pk, row.recorded.isoformat()), read)


def _kind_mask(kinds: Sequence[str], v: _Verdicts, attack: NDArray[np.bool_]) -> Any:
    ok = v.status == 0
    masks = {
        "bypass": ok & attack & ~v.blocked,
        "blocked": ok & attack & v.blocked,
        "false_positive": ok & ~attack & v.blocked,
        "allowed": ok & ~attack & ~v.blocked,
        "error": v.status == 1,
        "timeout": v.status == 2,
    }
    return np.logical_or.reduce([masks[k] for k in kinds])


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
    """A page of run ``run_id``'s samples matching every filter, in position order.

    ``kinds``: any of :data:`OUTCOME_KINDS` (a bypass is an attack let through, a
    false positive a benign sample blocked); ``search``: a case-insensitive
    substring of the text; ``category`` / ``tier`` / ``source`` / ``label``: exact;
    a score range keeps only scored outcomes inside it (bounds included);
    ``positions``: only those (a comparison's flips).
    """
    if offset < 0 or not 1 <= limit <= 1000:
        raise StoreError(f"offset {offset} / limit {limit}: offset >= 0, limit 1..1000")
    unknown = [k for k in kinds if k not in OUTCOME_KINDS]
    if unknown:
        raise StoreError(f"outcome kind {unknown[0]!r}: choose from {', '.join(OUTCOME_KINDS)}")
    row = run_row(session, run_id)
    columns = sample_columns(session, row.sample_set)
    n = len(columns)
    mask = np.ones(n, np.bool_)
    if kinds or score_min is not None or score_max is not None:
        v = _verdict_columns(session, row, n)
        if kinds:
            mask &= _kind_mask(kinds, v, columns.attack)
        if score_min is not None:
            mask &= v.score >= score_min  # NaN (no score) compares False: left out
        if score_max is not None:
            mask &= v.score <= score_max
    for name, value in (("category", category), ("tier", tier), ("source", source)):
        if value:
            known = columns.values[name]
            code = known.index(value) if value in known else -2
            mask &= columns.codes[name] == code
    if label:
        mask &= columns.attack if label == "attack" else ~columns.attack
    if positions is not None:
        wanted = np.zeros(n, np.bool_)
        inside = [p for p in positions if 0 <= p < n]
        wanted[inside] = True
        mask &= wanted
    if search:
        needle = search.casefold()
        candidates = np.flatnonzero(mask)
        hits = [p for p in candidates.tolist() if needle in columns.lowered[p]]
        mask = np.zeros(n, np.bool_)
        mask[hits] = True
    matching = np.flatnonzero(mask)
    page = matching[offset : offset + limit].tolist()
    return OutcomePage(_outcomes(session, row.pk, columns, page), len(matching), offset, limit)


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
    return {name: list(values) for name, values in columns.values.items()}
