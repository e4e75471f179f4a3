"""Store one run whole, in one transaction.

A run is written as its row, its tags, its samples (one row per sample, in a set
shared by every run over the same list, see :mod:`shieldbench.store._samples`) and
one compact outcome row per sample, each written a block of rows at a time. The
*same* run (id, defense and version, data, start and end) is stored once;
:mod:`shieldbench.store._runs` reads it back.

Nothing is written unredacted (:mod:`shieldbench._redact`): what a defense or a
server said (a verdict's label, reasons and details, error texts, the end-to-end
record) and what describes the run (specs, config, environment, tags) go through
:func:`~shieldbench._redact.redact_all`: registered credentials, URL credentials and
credential-shaped tokens (``Bearer ...``, ``AKIA...``) are masked. The samples are
data: only registered credentials are masked in them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, insert, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shieldbench._redact import has_secrets, mask_secrets, redact, redact_all
from shieldbench.metrics import confusion, latency_stats, rate
from shieldbench.store._models import Base, RunRow, RunTagRow, SampleSetRow
from shieldbench.store._runs import aware
from shieldbench.store._samples import record_blocks, sample_digest
from shieldbench.types import Outcome, Run

__all__ = ["insert_run"]


def _figures(run: Run) -> dict[str, Any]:
    counts = confusion(run)
    block = rate(counts.tp, counts.n_attacks)
    fpr = rate(counts.fp, counts.n_benign)
    latency = latency_stats(run)  # columnar runs: read a block of rows at a time
    p50, p95 = latency.p50, latency.p95
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


def _store_samples(session: Session, run: Run) -> str:
    """Store the run's sample set unless it is there; its digest.

    Two streaming passes over the samples, a block at a time: the digest (the sha256
    of the set's list, as before revision 0005), then, when the set is new, its rows.
    Data: only the credentials this process read are masked.
    """
    mask = mask_secrets if has_secrets() else None
    digest = sample_digest(run.samples, mask)
    if session.scalar(select(SampleSetRow.n).where(SampleSetRow.digest == digest)) is not None:
        return digest
    if not _insert_ignore(session, {"digest": digest, "n": len(run.samples), "data": None}):
        return digest  # a concurrent writer stored it first
    position = 0
    for block in record_blocks(run.samples, mask):
        rows = [(digest, position + i, text) for i, text in enumerate(block)]
        _bulk_insert(session, "sample_rows", ("digest", "position", "record"), rows)
        position += len(block)
    return digest


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
    """JSON text for a JSON column, ``None`` (SQL NULL) for nothing (redacted)."""
    if not value:
        return None
    return _ENCODE(redact_all(value))


def _said(text: str | None) -> str | None:
    """A message a defense or a server wrote (label, error), redacted."""
    return text if not text else redact(text)


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


_INSERT_CHUNK = 65_536


def _outcome_rows(run_pk: int, outcomes: Sequence[Outcome]) -> Iterator[list[tuple[Any, ...]]]:
    """The outcome rows, :data:`_INSERT_CHUNK` at a time (a large run is never all rows)."""
    rows: list[tuple[Any, ...]] = []
    for i, o in enumerate(outcomes):
        if len(rows) >= _INSERT_CHUNK:
            yield rows
            rows = []
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
                    _said(o.error),
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
                    _said(v.label),
                    _json(list(v.reasons)),
                    _json(dict(v.details)),
                    _said(o.error),
                    _e2e(o),
                )
            )
    if rows:
        yield rows


def _e2e(o: Outcome) -> str | None:
    """An outcome's end-to-end record as JSON text; ``None`` when it has none (an empty
    record is kept as ``{}``: the run file tells them apart)."""
    return None if o.end_to_end is None else _ENCODE(redact_all(_plain(o.end_to_end)))


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
        row.defense_spec == redact(run.defense.spec)
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
    digest = _store_samples(session, run)
    row = RunRow(
        run_id=run.id,
        source=source,
        defense_spec=redact(run.defense.spec),
        defense_name=redact(run.defense.name),
        defense_version=_said(run.defense.version),
        dataset_spec=redact(run.dataset.spec),
        dataset_hash=run.dataset.content_hash,
        n_samples=run.dataset.n_samples,
        sample_set=digest,
        config=redact_all(run.config.to_dict()),
        environment=redact_all(dict(run.environment)),
        extra=redact_all(
            {
                "started": run.started.isoformat(),
                "finished": run.finished.isoformat(),
                "schema_version": run.schema_version,
                "dataset_sources": [list(s) for s in run.dataset.sources],
                "counts": figures.pop("counts"),  # rate numerators/denominators, for trends
                "end_to_end": _plain(run.end_to_end) if run.end_to_end else None,
            }
        ),
        git_commit=git[0],
        git_branch=git[1],
        started=aware(run.started),
        finished=aware(run.finished),
        recorded=datetime.now(UTC),
        **figures,
    )
    session.add(row)
    session.flush()
    if tags:
        session.execute(
            insert(_table(RunTagRow)),
            [{"run_pk": row.pk, "key": k, "value": redact(v)} for k, v in tags.items()],
        )
    for rows in _outcome_rows(row.pk, run.outcomes):
        _bulk_insert(session, "outcomes", _OUTCOME_COLUMNS, rows)
    return True
