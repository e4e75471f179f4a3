"""Read-side queries for browsing a large history: paged runs, flips, attacks.

Everything that lives in columns is filtered, sorted, counted and paged in SQL, so
a page of a 10,000-run history reads one page of rows (and one count). A run's
samples and outcomes are read by :mod:`shieldbench.store._outcomes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session, aliased, defer

from shieldbench.errors import StoreError
from shieldbench.store._models import AttackRow, OutcomeRow, RunRow, RunTagRow
from shieldbench.store._runs import RunInfo, aware, info_of, newest

__all__ = [
    "RUN_SORTS",
    "AttackInfo",
    "DatasetVersion",
    "Flip",
    "RunFilter",
    "RunPage",
    "attack_infos",
    "dataset_versions",
    "flips",
    "run_page",
    "run_row",
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


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a page holds: every field given must match (``None``: any run).

    ``defense`` and ``dataset`` match a substring of the spec (or the name / content
    hash exactly), ``commit`` a prefix of the git commit, ``tags`` every KEY=VALUE,
    ``source`` exactly; ``since`` / ``until`` bound the start time (inclusive)."""

    defense: str | None = None
    dataset: str | None = None
    tags: Mapping[str, str] | None = None
    commit: str | None = None
    source: str | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of matching runs (``items`` in the requested order) and how many match."""

    items: tuple[RunInfo, ...]
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


# -- runs ---------------------------------------------------------------------------


def run_page(
    session: Session,
    where: RunFilter | None = None,
    *,
    sort: str = "started",
    descending: bool = True,
    offset: int = 0,
    limit: int = 50,
) -> RunPage:
    """The runs matching ``where`` (:class:`RunFilter`; ``None``: all), sorted by
    ``sort`` (one of :data:`RUN_SORTS`) and paged in SQL. Runs without the sort figure
    (``None``) come last either way; ties break on start time then insertion.
    """
    if sort not in RUN_SORTS:
        raise StoreError(f"sort {sort!r}: choose one of {', '.join(RUN_SORTS)}")
    if offset < 0 or not 1 <= limit <= 1000:
        raise StoreError(f"offset {offset} / limit {limit}: offset >= 0, limit 1..1000")
    conditions = _run_conditions(where or RunFilter())
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


def _run_conditions(f: RunFilter) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    if f.defense:
        where.append(
            or_(
                RunRow.defense_spec.like(_like(f.defense), escape="\\"),
                RunRow.defense_name == f.defense,
            )
        )
    if f.dataset:
        where.append(
            or_(
                RunRow.dataset_spec.like(_like(f.dataset), escape="\\"),
                RunRow.dataset_hash == f.dataset,
            )
        )
    for key, value in (f.tags or {}).items():
        tagged = select(RunTagRow.run_pk).where(RunTagRow.key == key, RunTagRow.value == value)
        where.append(RunRow.pk.in_(tagged))
    if f.commit:
        where.append(RunRow.git_commit.like(_like(f.commit)[1:], escape="\\"))
    if f.source:
        where.append(RunRow.source == f.source)
    if f.since is not None:
        where.append(RunRow.started >= aware(f.since))
    if f.until is not None:
        where.append(RunRow.started <= aware(f.until))
    return where


def run_row(session: Session, run_id: str) -> RunRow:
    """The newest stored row of ``run_id``; :class:`StoreError` when absent."""
    row = session.scalar(newest(run_id))
    if row is None:
        raise StoreError(f"no stored run with id {run_id!r}")
    return row


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


# -- attacks ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AttackInfo:
    """A stored adaptive attack's description and headline figures (no document).

    ``kind`` says which record the document is: ``shieldbench.attack`` (the mutator
    search) or ``shieldbench.llm_attack`` (PAIR, TAP, Crescendo). ``strategy`` is the
    record's ``meta.strategy`` (``beam``, ``pair``...), ``budget`` its query budget
    (``settings.budget``: a number for the mutator search, ``{"queries": ...}`` for
    an LLM attack) and ``figures`` its ``static_asr`` / ``adaptive_asr`` /
    ``preserving_asr`` as stored (``Rate.to_dict()`` forms: k, n, value, interval),
    read from the document in SQL; each is ``None`` / absent when the document does
    not hold it (an unknown or malformed record), for the reader to say so."""

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
    kind: str = "shieldbench.attack"
    strategy: str | None = None
    budget: Any = None
    figures: Mapping[str, Any] = field(default_factory=dict)


_FIGURES = ("static_asr", "adaptive_asr", "preserving_asr")


def attack_infos(session: Session, *, limit: int = 200) -> tuple[AttackInfo, ...]:
    """The newest ``limit`` stored attacks, newest first.

    The documents themselves (transcripts and all) are not read: only the columns
    and the few small JSON paths the list shows."""
    doc = AttackRow.document
    paths = (("meta", "strategy"), ("settings", "budget"), *(("figures", f) for f in _FIGURES))
    query = (
        select(AttackRow, *(doc[path] for path in paths))
        .options(defer(AttackRow.document))
        .order_by(AttackRow.started.desc(), AttackRow.pk.desc())
        .limit(limit)
    )
    out = []
    for a, strategy, budget, *figures in session.execute(query):
        out.append(
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
                a.kind,
                strategy if isinstance(strategy, str) else None,
                budget,
                {k: v for k, v in zip(_FIGURES, figures, strict=True) if isinstance(v, dict)},
            )
        )
    return tuple(out)


# -- dataset versions -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DatasetVersion:
    """One dataset version (content hash) in the history: its newest spec, how many
    runs and defense identities (spec and version) measured it, and when last."""

    content_hash: str
    spec: str
    n_runs: int
    n_defenses: int
    last: datetime


def dataset_versions(session: Session, *, limit: int = 500) -> tuple[DatasetVersion, ...]:
    """Every dataset version measured, most recently measured first (one SQL group)."""
    identity = RunRow.defense_spec + "@" + func.coalesce(RunRow.defense_version, "")
    query = (
        select(
            RunRow.dataset_hash,
            func.max(RunRow.dataset_spec),
            func.count(RunRow.pk),
            func.count(func.distinct(identity)),
            func.max(RunRow.started),
        )
        .group_by(RunRow.dataset_hash)
        .order_by(func.max(RunRow.started).desc())
        .limit(limit)
    )
    return tuple(
        DatasetVersion(h, spec, int(n), int(d), aware(last))
        for h, spec, n, d, last in session.execute(query)
    )
