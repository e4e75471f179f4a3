"""Runs in and out of the history: store one whole, rebuild it exactly, list them.

A run id is not unique in the history: ``run --resume`` re-runs a benchmark pair
under its id when the defense's version changed, and both measurements are kept;
an id names the newest run that has it. The *same* run (id, defense and version,
data, start and end) is stored once.

A run is written in one transaction: its row, its tags, its samples (one JSON
document per distinct list of samples, shared by every run over it) and one compact outcome
row per sample. Reading it back rebuilds a :class:`~shieldbench.types.Run` equal
to the stored one, whose run file (:func:`shieldbench.runio.save_run`) is
byte-identical to the original's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import numpy as np
from sqlalchemy import Select, Table, insert, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shieldbench.errors import StoreError
from shieldbench.metrics import confusion, quantile_interval, rate
from shieldbench.store._models import Base, OutcomeRow, RunRow, RunTagRow, SampleSetRow
from shieldbench.types import (
    DatasetInfo,
    DefenseInfo,
    Outcome,
    Run,
    RunConfig,
    Sample,
    Verdict,
)

__all__ = ["RunInfo", "insert_run", "list_runs", "newest", "read_run", "sample_digest"]


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A stored run's description and headline figures (no outcomes), as listed.

    Rates are under the run's own error policy with Wilson 95% intervals; latency
    quantiles over ok outcomes with order-statistic intervals (``None`` when the
    data cannot bound them).
    """

    id: str
    source: str
    defense_spec: str
    defense_name: str
    defense_version: str | None
    dataset_spec: str
    dataset_hash: str
    n_samples: int
    started: datetime
    finished: datetime
    recorded: datetime
    git_commit: str | None
    git_branch: str | None
    tags: Mapping[str, str]
    error_policy: str
    n_attack: int
    n_benign: int
    n_errors: int
    block_rate: tuple[float | None, float | None, float | None]
    fpr: tuple[float | None, float | None, float | None]
    p50_ms: float | None
    p95_ms: tuple[float | None, float | None, float | None]
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "defense": {
                "spec": self.defense_spec,
                "name": self.defense_name,
                "version": self.defense_version,
            },
            "dataset": {
                "spec": self.dataset_spec,
                "content_hash": self.dataset_hash,
                "n_samples": self.n_samples,
            },
            "started": self.started.isoformat(),
            "finished": self.finished.isoformat(),
            "recorded": self.recorded.isoformat(),
            "git": {"commit": self.git_commit, "branch": self.git_branch},
            "tags": dict(self.tags),
            "error_policy": self.error_policy,
            "n_attack": self.n_attack,
            "n_benign": self.n_benign,
            "n_errors": self.n_errors,
            "block_rate": _triple(self.block_rate),
            "false_positive_rate": _triple(self.fpr),
            "p50_ms": self.p50_ms,
            "p95_ms": _triple(self.p95_ms),
        }


def _triple(t: tuple[float | None, float | None, float | None]) -> dict[str, float | None]:
    return {"value": t[0], "ci_low": t[1], "ci_high": t[2]}


def _sample_document(samples: Sequence[Sample]) -> bytes:
    records = [
        [
            s.id,
            s.text,
            s.label,
            s.category,
            s.subcategory,
            s.severity,
            s.tier,
            s.source,
            s.metadata or None,
            None if s.messages is None else [dict(m) for m in s.messages],
        ]
        for s in samples
    ]
    text = json.dumps(records, ensure_ascii=False, separators=(",", ":"), default=dict)
    return text.encode("utf-8", "surrogatepass")


def sample_digest(samples: Sequence[Sample]) -> str:
    """Hex sha256 over every field of the samples, metadata included, in order."""
    return hashlib.sha256(_sample_document(samples)).hexdigest()


def _read_samples(data: bytes) -> tuple[Sample, ...]:
    records = json.loads(data.decode("utf-8", "surrogatepass"))
    return tuple(
        Sample(
            id=r[0],
            text=r[1],
            label=r[2],
            category=r[3],
            subcategory=r[4],
            severity=r[5],
            tier=r[6],
            source=r[7],
            metadata=r[8] or {},
            messages=r[9] if len(r) > 9 else None,
        )
        for r in records
    )


def _figures(run: Run) -> dict[str, Any]:
    counts = confusion(run)
    block = rate(counts.tp, counts.n_attacks)
    fpr = rate(counts.fp, counts.n_benign)
    latencies = np.fromiter(
        (o.latency_ms for o in run.outcomes if o.status == "ok" and o.latency_ms is not None),
        dtype=float,
    )
    p50 = quantile_interval(latencies, 0.5)
    p95 = quantile_interval(latencies, 0.95)
    return {
        "counts": {
            "tp": counts.tp,
            "attacks": counts.n_attacks,
            "fp": counts.fp,
            "benign": counts.n_benign,
        },
        "error_policy": counts.policy,
        "n_attack": counts.n_attacks + counts.excluded_attacks,
        "n_benign": counts.n_benign + counts.excluded_benign,
        "n_errors": counts.errors + counts.timeouts,
        "block_rate": block.value,
        "block_low": block.ci_low if block.value is not None else None,
        "block_high": block.ci_high if block.value is not None else None,
        "fpr": fpr.value,
        "fpr_low": fpr.ci_low if fpr.value is not None else None,
        "fpr_high": fpr.ci_high if fpr.value is not None else None,
        "p50_ms": p50.value,
        "p95_ms": p95.value,
        "p95_low": p95.ci_low,
        "p95_high": p95.ci_high,
    }


def _insert_ignore(session: Session, values: dict[str, Any]) -> bool:
    """Insert a sample set unless its digest exists (concurrent writers too);
    ``True`` if this call inserted it."""
    dialect = session.get_bind().dialect.name
    module: Any = postgresql if dialect == "postgresql" else sqlite
    table = _table(SampleSetRow)
    stmt = module.insert(table).values(**values).on_conflict_do_nothing()
    return session.execute(stmt.returning(table.c.digest)).first() is not None


def _table(model: type[Base]) -> Table:
    """The Core table of a model: bulk inserts take column names, and skip the ORM."""
    return cast(Table, model.__table__)


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # made once


def _json(value: Any) -> str | None:
    """JSON text for a JSON column, ``None`` (SQL NULL) for nothing."""
    if not value:
        return None
    return _ENCODE(value)


_OUTCOME_COLUMNS = (
    "run_pk",
    "position",
    "status",
    "blocked",
    "score",
    "latency_ms",
    "attempts",
    "verdict_label",
    "reasons",
    "details",
    "error",
    "end_to_end",
)


def _outcome_rows(run_pk: int, outcomes: Sequence[Outcome]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for i, o in enumerate(outcomes):
        v = o.verdict
        if v is None:
            rows.append(
                (
                    run_pk,
                    i,
                    o.status,
                    None,
                    None,
                    o.latency_ms,
                    o.attempts,
                    None,
                    None,
                    None,
                    o.error,
                    _e2e(o),
                )
            )
        else:
            rows.append(
                (
                    run_pk,
                    i,
                    o.status,
                    v.blocked,
                    v.score,
                    o.latency_ms,
                    o.attempts,
                    v.label,
                    _json(list(v.reasons)),
                    _json(dict(v.details)),
                    o.error,
                    _e2e(o),
                )
            )
    return rows


def _e2e(o: Outcome) -> str | None:
    """An outcome's end-to-end record as JSON text; ``None`` when it has none (an empty
    record is kept as ``{}``: the run file tells them apart)."""
    return None if o.end_to_end is None else _ENCODE(_plain(o.end_to_end))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _bulk_insert(
    session: Session, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]
) -> None:
    """``executemany`` straight to the driver: the rows are already in column types
    (JSON as text), so SQLAlchemy's per-value processing (most of the time for
    100,000 rows) is skipped. One statement, in the session's transaction."""
    if not rows:
        return
    conn = session.connection()
    quote = conn.dialect.identifier_preparer.quote
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    sql = (
        f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)})"
        f" VALUES ({', '.join([mark] * len(columns))})"
    )
    conn.exec_driver_sql(sql, rows)


def _same_run(row: RunRow, run: Run) -> bool:
    return (
        row.defense_spec == run.defense.spec
        and row.dataset_hash == run.dataset.content_hash
        and row.defense_version == run.defense.version
        and row.n_samples == len(run.samples)
        and row.extra.get("started") == run.started.isoformat()
        and row.extra.get("finished") == run.finished.isoformat()
    )


def insert_run(
    session: Session,
    run: Run,
    *,
    source: str,
    tags: Mapping[str, str],
    git: tuple[str | None, str | None],
) -> bool:
    """Add ``run`` in the session's transaction; ``False`` when it is already stored."""
    if session.get_bind().dialect.name == "postgresql":  # SQLite: BEGIN IMMEDIATE did it
        session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:id))"), {"id": run.id})
    for existing in session.scalars(select(RunRow).where(RunRow.run_id == run.id)):
        if _same_run(existing, run):
            return False
    figures = _figures(run)
    document = _sample_document(run.samples)
    digest = hashlib.sha256(document).hexdigest()
    if not session.scalar(select(SampleSetRow.n).where(SampleSetRow.digest == digest)):
        values = {"digest": digest, "n": len(run.samples), "data": document}
        _insert_ignore(session, values)  # a concurrent writer may have stored it first
    row = RunRow(
        run_id=run.id,
        source=source,
        defense_spec=run.defense.spec,
        defense_name=run.defense.name,
        defense_version=run.defense.version,
        dataset_spec=run.dataset.spec,
        dataset_hash=run.dataset.content_hash,
        n_samples=run.dataset.n_samples,
        sample_set=digest,
        config=run.config.to_dict(),
        environment=dict(run.environment),
        extra={
            "started": run.started.isoformat(),
            "finished": run.finished.isoformat(),
            "schema_version": run.schema_version,
            "dataset_sources": [list(s) for s in run.dataset.sources],
            "counts": figures.pop("counts"),  # rate numerators/denominators, for trends
            "end_to_end": _plain(run.end_to_end) if run.end_to_end else None,
        },
        git_commit=git[0],
        git_branch=git[1],
        started=_aware(run.started),
        finished=_aware(run.finished),
        recorded=datetime.now(UTC),
        **figures,
    )
    session.add(row)
    session.flush()
    if tags:
        session.execute(
            insert(_table(RunTagRow)),
            [{"run_pk": row.pk, "key": k, "value": v} for k, v in tags.items()],
        )
    if run.outcomes:
        _bulk_insert(session, "outcomes", _OUTCOME_COLUMNS, _outcome_rows(row.pk, run.outcomes))
    return True


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def read_run(session: Session, run_id: str) -> Run:
    """Rebuild the stored run ``run_id`` exactly; :class:`StoreError` when absent."""
    row = session.scalar(newest(run_id))
    if row is None:
        raise StoreError(f"no stored run with id {run_id!r}")
    data = session.scalar(select(SampleSetRow.data).where(SampleSetRow.digest == row.sample_set))
    if data is None:
        raise StoreError(f"stored run {run_id!r} has lost its samples ({row.sample_set})")
    samples = _read_samples(data)
    outcomes = []
    query = (
        select(
            OutcomeRow.position,
            OutcomeRow.status,
            OutcomeRow.blocked,
            OutcomeRow.score,
            OutcomeRow.latency_ms,
            OutcomeRow.attempts,
            OutcomeRow.verdict_label,
            OutcomeRow.reasons,
            OutcomeRow.details,
            OutcomeRow.error,
            OutcomeRow.end_to_end,
        )
        .where(OutcomeRow.run_pk == row.pk)
        .order_by(OutcomeRow.position)
    )
    for o in session.execute(query):
        verdict = None
        if o.status == "ok":
            verdict = Verdict(
                blocked=bool(o.blocked),
                score=o.score,
                label=o.verdict_label,
                reasons=tuple(o.reasons or ()),
                details=o.details or {},
            )
        outcomes.append(
            Outcome(
                sample_id=samples[o.position].id,
                verdict=verdict,
                status=o.status,
                error=o.error,
                latency_ms=o.latency_ms,
                attempts=o.attempts,
                end_to_end=o.end_to_end,
            )
        )
    extra = row.extra
    return Run(
        id=row.run_id,
        defense=DefenseInfo(row.defense_spec, row.defense_name, row.defense_version),
        dataset=DatasetInfo(
            row.dataset_spec,
            row.dataset_hash,
            row.n_samples,
            tuple((str(a), str(b)) for a, b in extra.get("dataset_sources") or ()),
        ),
        config=RunConfig.from_dict(row.config),
        samples=samples,
        outcomes=tuple(outcomes),
        started=datetime.fromisoformat(extra["started"]),
        finished=datetime.fromisoformat(extra["finished"]),
        environment=row.environment,
        schema_version=int(extra.get("schema_version", 1)),
        end_to_end=extra.get("end_to_end") or {},
    )


def newest(run_id: str) -> Select[RunRow]:
    """The newest stored run with id ``run_id`` (ids repeat when a pair was re-run)."""
    return (
        select(RunRow)
        .where(RunRow.run_id == run_id)
        .order_by(RunRow.started.desc(), RunRow.pk.desc())
        .limit(1)
    )


def _info(row: RunRow, tags: Mapping[str, str]) -> RunInfo:
    return RunInfo(
        id=row.run_id,
        source=row.source,
        defense_spec=row.defense_spec,
        defense_name=row.defense_name,
        defense_version=row.defense_version,
        dataset_spec=row.dataset_spec,
        dataset_hash=row.dataset_hash,
        n_samples=row.n_samples,
        started=row.started,
        finished=row.finished,
        recorded=row.recorded,
        git_commit=row.git_commit,
        git_branch=row.git_branch,
        tags=dict(tags),
        error_policy=row.error_policy,
        n_attack=row.n_attack,
        n_benign=row.n_benign,
        n_errors=row.n_errors,
        block_rate=(row.block_rate, row.block_low, row.block_high),
        fpr=(row.fpr, row.fpr_low, row.fpr_high),
        p50_ms=row.p50_ms,
        p95_ms=(row.p95_ms, row.p95_low, row.p95_high),
        extra=row.extra,
    )


def filtered(
    *,
    defense: str | None = None,
    dataset: str | None = None,
    tags: Mapping[str, str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Select[RunRow]:
    """The runs matching every given filter (a defense by spec or name, a dataset by
    spec or content hash, every tag), newest first."""
    query = select(RunRow)
    if defense is not None:
        query = query.where((RunRow.defense_spec == defense) | (RunRow.defense_name == defense))
    if dataset is not None:
        query = query.where((RunRow.dataset_spec == dataset) | (RunRow.dataset_hash == dataset))
    for key, value in (tags or {}).items():
        tagged = select(RunTagRow.run_pk).where(RunTagRow.key == key, RunTagRow.value == value)
        query = query.where(RunRow.pk.in_(tagged))
    if since is not None:
        query = query.where(RunRow.started >= _aware(since))
    if until is not None:
        query = query.where(RunRow.started <= _aware(until))
    return query.order_by(RunRow.started.desc(), RunRow.pk.desc())


def list_runs(
    session: Session, query: Select[RunRow], *, limit: int | None = None
) -> list[RunInfo]:
    """The matching runs, oldest first (the newest ``limit`` when given)."""
    rows = list(session.scalars(query if limit is None else query.limit(limit)))
    tags: dict[int, dict[str, str]] = {}
    if rows:
        for t in session.scalars(
            select(RunTagRow).where(RunTagRow.run_pk.in_([r.pk for r in rows]))
        ):
            tags.setdefault(t.run_pk, {})[t.key] = t.value
    return [_info(r, tags.get(r.pk, {})) for r in reversed(rows)]
