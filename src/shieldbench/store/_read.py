"""Read-side queries for browsing a large history: paged runs, paged outcomes, flips.

Everything that lives in columns is filtered, sorted, counted and paged in SQL, so
a page of a 10,000-run history or of a 100,000-outcome run reads one page of rows.
A sample's own fields (label, category, tier, source, text) live in the run's sample
document (see :mod:`shieldbench.store._samples`), not in rows: they are read once per
distinct document and kept in a small in-process cache keyed by the document's
sha256 (content-addressed, so an entry can never be stale), as column lists that
filter 100,000 samples in milliseconds.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session, aliased

from shieldbench.errors import StoreError
from shieldbench.store._models import AttackRow, OutcomeRow, RunRow, RunTagRow, SampleSetRow
from shieldbench.store._runs import RunInfo, aware, info_of, newest

__all__ = [
    "OUTCOME_KINDS",
    "RUN_SORTS",
    "AttackInfo",
    "Flip",
    "OutcomeKind",
    "OutcomePage",
    "RunPage",
    "SampleColumns",
    "StoredOutcome",
    "attack_infos",
    "flips",
    "info_for",
    "outcome_at",
    "outcome_page",
    "run_page",
    "run_row",
    "sample_columns",
    "sample_facets",
]

RUN_SORTS: Mapping[str, Any] = {
    "started": RunRow.started,
    "block_rate": RunRow.block_rate,
    "fpr": RunRow.fpr,
    "p95_ms": RunRow.p95_ms,
    "n_samples": RunRow.n_samples,
    "defense": RunRow.defense_spec,
    "errors": RunRow.n_errors,
}

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
class RunPage:
    """One page of matching runs (``items`` in the requested order) and how many match."""

    items: tuple[RunInfo, ...]
    total: int
    offset: int
    limit: int


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
class Flip:
    """A sample whose verdict differs between run ``a`` and run ``b`` (same position)."""

    position: int
    status_a: str
    blocked_a: bool | None
    score_a: float | None
    status_b: str
    blocked_b: bool | None
    score_b: float | None

    @property
    def direction(self) -> str:
        """``now_blocked`` (a let it through, b blocks), ``now_allowed``, or
        ``status`` (one of them failed: error or timeout)."""
        if self.status_a == "ok" and self.status_b == "ok":
            return "now_blocked" if self.blocked_b else "now_allowed"
        return "status"


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


# -- runs ---------------------------------------------------------------------------


def run_page(
    session: Session,
    *,
    defense: str | None = None,
    dataset: str | None = None,
    tags: Mapping[str, str] | None = None,
    commit: str | None = None,
    source: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    sort: str = "started",
    descending: bool = True,
    offset: int = 0,
    limit: int = 50,
) -> RunPage:
    """The runs matching every filter, sorted and paged in SQL.

    ``defense`` and ``dataset`` match a substring of the spec (or the name / content
    hash exactly), ``commit`` a prefix of the git commit. Runs without the sort
    figure (``None``) come last either way; ties break on start time then insertion.
    """
    if sort not in RUN_SORTS:
        raise StoreError(f"sort {sort!r}: choose one of {', '.join(RUN_SORTS)}")
    if offset < 0 or not 1 <= limit <= 1000:
        raise StoreError(f"offset {offset} / limit {limit}: offset >= 0, limit 1..1000")
    conditions = _run_conditions(defense, dataset, tags, commit, source, since, until)
    total = int(session.scalar(select(func.count(RunRow.pk)).where(*conditions)) or 0)
    column = RUN_SORTS[sort]
    order = column.desc() if descending else column.asc()
    query = (
        select(RunRow)
        .where(*conditions)
        .order_by(column.is_(None), order, RunRow.started.desc(), RunRow.pk.desc())
        .offset(offset)
        .limit(limit)
    )
    rows = list(session.scalars(query))
    found: dict[int, dict[str, str]] = {}
    if rows:
        tag_query = select(RunTagRow).where(RunTagRow.run_pk.in_([r.pk for r in rows]))
        for t in session.scalars(tag_query):
            found.setdefault(t.run_pk, {})[t.key] = t.value
    items = tuple(info_of(r, found.get(r.pk, {})) for r in rows)
    return RunPage(items, total, offset, limit)


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _run_conditions(
    defense: str | None,
    dataset: str | None,
    tags: Mapping[str, str] | None,
    commit: str | None,
    source: str | None,
    since: datetime | None,
    until: datetime | None,
) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    if defense:
        where.append(
            or_(
                RunRow.defense_spec.like(_like(defense), escape="\\"),
                RunRow.defense_name == defense,
            )
        )
    if dataset:
        where.append(
            or_(
                RunRow.dataset_spec.like(_like(dataset), escape="\\"),
                RunRow.dataset_hash == dataset,
            )
        )
    for key, value in (tags or {}).items():
        tagged = select(RunTagRow.run_pk).where(RunTagRow.key == key, RunTagRow.value == value)
        where.append(RunRow.pk.in_(tagged))
    if commit:
        where.append(RunRow.git_commit.like(_like(commit)[1:], escape="\\"))
    if source:
        where.append(RunRow.source == source)
    if since is not None:
        where.append(RunRow.started >= aware(since))
    if until is not None:
        where.append(RunRow.started <= aware(until))
    return where


def run_row(session: Session, run_id: str) -> RunRow:
    """The newest stored row of ``run_id``; :class:`StoreError` when absent."""
    row = session.scalar(newest(run_id))
    if row is None:
        raise StoreError(f"no stored run with id {run_id!r}")
    return row


# -- samples and outcomes -----------------------------------------------------------

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


# -- flips --------------------------------------------------------------------------


def flips(session: Session, run_a: str, run_b: str) -> tuple[Flip, ...]:
    """The positions whose verdict differs between two runs of the same samples.

    A verdict differs when the status differs (ok / error / timeout) or both are ok
    and one blocks and the other does not. :class:`StoreError` when the runs did not
    screen the same samples (then positions do not line up).
    """
    a, b = run_row(session, run_a), run_row(session, run_b)
    if a.sample_set != b.sample_set:
        raise StoreError(
            f"runs {run_a!r} and {run_b!r} screened different samples"
            f" ({a.dataset_spec} {a.dataset_hash[:12]} vs {b.dataset_spec} {b.dataset_hash[:12]});"
            " compare runs of the same data"
        )
    oa, ob = aliased(OutcomeRow), aliased(OutcomeRow)
    query = (
        select(oa.position, oa.status, oa.blocked, oa.score, ob.status, ob.blocked, ob.score)
        .join(ob, and_(ob.position == oa.position, ob.run_pk == b.pk))
        .where(
            oa.run_pk == a.pk,
            or_(oa.status != ob.status, and_(oa.status == "ok", oa.blocked != ob.blocked)),
        )
        .order_by(oa.position)
    )
    return tuple(Flip(*r) for r in session.execute(query))


def info_for(session: Session, run_id: str) -> RunInfo:
    """The listed record of ``run_id`` (newest row of that id)."""
    row = run_row(session, run_id)
    tags = {
        t.key: t.value for t in session.scalars(select(RunTagRow).where(RunTagRow.run_pk == row.pk))
    }
    return info_of(row, tags)


# -- attacks ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AttackInfo:
    """A stored adaptive attack's description and headline figures (no document)."""

    id: str
    defense_spec: str
    defense_name: str
    dataset_spec: str
    dataset_hash: str
    started: datetime
    finished: datetime
    static_asr: float | None
    adaptive_asr: float | None
    queries: int | None
    git_commit: str | None
    tags: Mapping[str, Any]


def attack_infos(session: Session, *, limit: int = 200) -> tuple[AttackInfo, ...]:
    """The newest ``limit`` stored attacks, newest first."""
    query = select(AttackRow).order_by(AttackRow.started.desc(), AttackRow.pk.desc()).limit(limit)
    return tuple(
        AttackInfo(
            a.attack_id,
            a.defense_spec,
            a.defense_name,
            a.dataset_spec,
            a.dataset_hash,
            a.started,
            a.finished,
            a.static_asr,
            a.adaptive_asr,
            a.queries,
            a.git_commit,
            dict(a.tags),
        )
        for a in session.scalars(query)
    )
