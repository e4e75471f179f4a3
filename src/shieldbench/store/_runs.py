"""Runs out of the history: rebuild one exactly, find and list them.

A run id is not unique in the history: ``run --resume`` re-runs a benchmark pair
under its id when the defense's version changed, and both measurements are kept;
an id names the newest run that has it. The *same* run (id, defense and version,
data, start and end) is stored once.

A run is written in one transaction by :func:`shieldbench.store._runwrite.insert_run`.
Reading it back rebuilds a :class:`~shieldbench.types.Run` equal to the stored one,
whose run file (:func:`shieldbench.runio.save_run`) is byte-identical to the
original's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import EllipsisType
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from shieldbench.errors import StoreError
from shieldbench.identity import DefenseIdentity
from shieldbench.store._models import OutcomeRow, RunRow, RunTagRow
from shieldbench.store._samples import load_records, samples_from_records
from shieldbench.types import (
    DatasetInfo,
    DefenseInfo,
    Outcome,
    Run,
    RunConfig,
    Verdict,
)

__all__ = ["RunInfo", "aware", "filtered", "info_of", "list_runs", "newest", "read_run"]


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

    @property
    def identity(self) -> DefenseIdentity:
        """Which defense this run measured: canonical spec and version (never the
        display name, which variants share)."""
        return DefenseIdentity.of(self.defense_spec, self.defense_version)

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


def aware(moment: datetime) -> datetime:
    """``moment`` with a time zone: a naive one is taken as UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def read_run(session: Session, run_id: str) -> Run:
    """Rebuild the stored run ``run_id`` exactly; :class:`StoreError` when absent."""
    row = session.scalar(newest(run_id))
    if row is None:
        raise StoreError(f"no stored run with id {run_id!r}")
    records = load_records(session, row.sample_set)
    if records is None:
        raise StoreError(f"stored run {run_id!r} has lost its samples ({row.sample_set})")
    samples = samples_from_records(records)
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


def info_of(row: RunRow, tags: Mapping[str, str]) -> RunInfo:
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
    specs: Collection[str] | None = None,
    version: str | EllipsisType | None = ...,
    dataset: str | None = None,
    tags: Mapping[str, str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Select[RunRow]:
    """The runs matching every given filter, newest first: a defense spec among
    ``specs`` as stored (:func:`shieldbench.store._resolve.defense_specs` finds the
    spellings of one), its ``version`` (``None``: runs without one; ``...``: any), a
    dataset by spec or content hash, every tag."""
    query = select(RunRow)
    if specs is not None:
        query = query.where(RunRow.defense_spec.in_(list(specs)))
    if version is None:
        query = query.where(RunRow.defense_version.is_(None))
    elif not isinstance(version, EllipsisType):
        query = query.where(RunRow.defense_version == version)
    if dataset is not None:
        query = query.where((RunRow.dataset_spec == dataset) | (RunRow.dataset_hash == dataset))
    for key, value in (tags or {}).items():
        tagged = select(RunTagRow.run_pk).where(RunTagRow.key == key, RunTagRow.value == value)
        query = query.where(RunRow.pk.in_(tagged))
    if since is not None:
        query = query.where(RunRow.started >= aware(since))
    if until is not None:
        query = query.where(RunRow.started <= aware(until))
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
    return [info_of(r, tags.get(r.pk, {})) for r in reversed(rows)]
