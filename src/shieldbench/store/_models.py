"""The ORM models of the history store (SQLAlchemy 2 declarative, typed ``Mapped``).

The tables, and why they look the way they do:

- ``runs``: one row per benchmark run: what ran (defense spec, name, version), on
  what (dataset spec, content hash, size), how (config), where (environment, git
  commit and branch), when, from which command (``source``), plus the headline
  figures computed when it was stored (block rate, FPR, p95 latency with their
  intervals) so that listing thousands of runs reads no outcome.
- ``run_tags``: user-given ``key=value`` tags, one row each (filterable in SQL on
  both backends).
- ``sample_sets``: the samples a run screened, stored once per distinct list of
  samples (keyed by a digest of their content), however many runs used them, as
  one JSON document (not compressed: compressing cost more time than the rest of
  storing a run): the texts are data to give back whole (export,
  paired tests), never rows to query, and one document stores 100,000 samples in a
  fraction of the time 100,000 rows take.
- ``outcomes``: one compact row per screened sample, by position (the sample id is
  the sample's at the same position, which a :class:`~shieldbench.types.Run`
  guarantees).
- ``attacks``: adaptive attack results, mutator searches and LLM-driven attacks (their
  ``kind``, headline figures + the whole JSON document, transcripts included).
- ``alerts``: alerts of the monitor and the guard service (``source`` tells which),
  with what triggered them.

The schema itself is created and upgraded by the alembic revisions in
``shieldbench/store/migrations/versions`` (``0001`` creates these tables), never by
``create_all``, so a database always says which revision it is at.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

__all__ = [
    "AlertRow",
    "AttackRow",
    "Base",
    "OutcomeRow",
    "RunRow",
    "RunTagRow",
    "SampleRow",
    "SampleSetRow",
    "UTCDateTime",
]


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and read back timezone-aware, on every backend.

    SQLite has no time zones: values are normalised to naive UTC on the way in and
    given ``UTC`` on the way out; a naive datetime is refused rather than guessed.
    """

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"a stored timestamp needs a time zone, got naive {value!r}")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base of every shieldbench table (other features subclass it too)."""

    type_annotation_map = {  # noqa: RUF012 (SQLAlchemy reads it as a class attribute)
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
    }


class RunRow(Base):
    __tablename__ = "runs"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(128), index=True)  # not unique: see _runs
    source: Mapped[str] = mapped_column(String(32))
    defense_spec: Mapped[str] = mapped_column(Text)
    defense_name: Mapped[str] = mapped_column(String(200))
    defense_version: Mapped[str | None] = mapped_column(String(200))
    dataset_spec: Mapped[str] = mapped_column(Text)
    dataset_hash: Mapped[str] = mapped_column(String(100), index=True)
    n_samples: Mapped[int] = mapped_column(Integer)
    sample_set: Mapped[str] = mapped_column(String(64), ForeignKey("sample_sets.digest"))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    environment: Mapped[dict[str, Any]] = mapped_column(JSON)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON)
    git_commit: Mapped[str | None] = mapped_column(String(64))
    git_branch: Mapped[str | None] = mapped_column(String(200))
    started: Mapped[datetime] = mapped_column(index=True)
    finished: Mapped[datetime]
    recorded: Mapped[datetime]
    error_policy: Mapped[str] = mapped_column(String(16))
    n_attack: Mapped[int] = mapped_column(Integer)
    n_benign: Mapped[int] = mapped_column(Integer)
    n_errors: Mapped[int] = mapped_column(Integer)
    block_rate: Mapped[float | None] = mapped_column(Float)
    block_low: Mapped[float | None] = mapped_column(Float)
    block_high: Mapped[float | None] = mapped_column(Float)
    fpr: Mapped[float | None] = mapped_column(Float)
    fpr_low: Mapped[float | None] = mapped_column(Float)
    fpr_high: Mapped[float | None] = mapped_column(Float)
    p50_ms: Mapped[float | None] = mapped_column(Float)
    p95_ms: Mapped[float | None] = mapped_column(Float)
    p95_low: Mapped[float | None] = mapped_column(Float)
    p95_high: Mapped[float | None] = mapped_column(Float)

    __table_args__ = (Index("ix_runs_defense_dataset", "defense_name", "dataset_hash"),)


class RunTagRow(Base):
    __tablename__ = "run_tags"

    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(String(1000))

    __table_args__ = (Index("ix_run_tags_key_value", "key", "value"),)


class SampleSetRow(Base):
    """The samples of runs, once per distinct list; ``digest`` is the sha256 (hex) of
    the UTF-8 JSON list of ``[id, text, label, category, subcategory, severity, tier,
    source, metadata, messages]`` records, in order.

    Since revision 0005 the records are rows of ``sample_rows`` (:class:`SampleRow`)
    and ``data`` is NULL; a set stored before holds the whole list in ``data``.
    """

    __tablename__ = "sample_sets"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)


class SampleRow(Base):
    """One sample of a set: ``record`` is its JSON field list, exactly the text it has
    in the set's list (so the set's digest is the sha256 of ``[`` + the records joined
    by ``,`` + ``]``), written and read a block of rows at a time."""

    __tablename__ = "sample_rows"

    digest: Mapped[str] = mapped_column(
        ForeignKey("sample_sets.digest", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    record: Mapped[str] = mapped_column(Text)


class OutcomeRow(Base):
    __tablename__ = "outcomes"

    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    status: Mapped[str] = mapped_column(String(8))
    blocked: Mapped[bool | None] = mapped_column(Boolean)
    score: Mapped[float | None] = mapped_column(Float)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(SmallInteger)
    verdict_label: Mapped[str | None] = mapped_column(String(200))
    reasons: Mapped[list[str] | None] = mapped_column(JSON)
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    end_to_end: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class AttackRow(Base):
    __tablename__ = "attacks"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    attack_id: Mapped[str] = mapped_column(String(128), unique=True)
    kind: Mapped[str] = mapped_column(String(64), server_default="shieldbench.attack")
    defense_spec: Mapped[str] = mapped_column(Text)
    defense_name: Mapped[str] = mapped_column(String(200))
    dataset_spec: Mapped[str] = mapped_column(Text)
    dataset_hash: Mapped[str] = mapped_column(String(100), index=True)
    started: Mapped[datetime] = mapped_column(index=True)
    finished: Mapped[datetime]
    recorded: Mapped[datetime]
    static_asr: Mapped[float | None] = mapped_column(Float)
    adaptive_asr: Mapped[float | None] = mapped_column(Float)
    queries: Mapped[int | None] = mapped_column(Integer)
    git_commit: Mapped[str | None] = mapped_column(String(64))
    git_branch: Mapped[str | None] = mapped_column(String(200))
    tags: Mapped[dict[str, Any]] = mapped_column(JSON)
    document: Mapped[dict[str, Any]] = mapped_column(JSON)


class AlertRow(Base):
    __tablename__ = "alerts"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    created: Mapped[datetime] = mapped_column(index=True)
    source: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(300))
    severity: Mapped[str] = mapped_column(String(16))
    title: Mapped[str] = mapped_column(String(500))
    message: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    run_pk: Mapped[int | None] = mapped_column(ForeignKey("runs.pk", ondelete="SET NULL"))
    delivered: Mapped[dict[str, Any]] = mapped_column(JSON)

    __table_args__ = (Index("ix_alerts_source_key_created", "source", "key", "created"),)
