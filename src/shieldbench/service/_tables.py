"""The service's tables on the store's :class:`~shieldbench.store.Base`: audit and feedback.

``guard_audit`` is append-only: the service inserts rows and never updates one; a
warn-only verdict that arrives after the response is its own record (``kind="warn"``,
``ref`` = the decision id). Each row stores its canonical JSON ``body``, the hash of
the previous row and its own hash, ``sha256(prev_hash + body)``; ``shieldbench audit
verify`` recomputes the chain. The other columns (seq, id, time, kind, decision, ref)
are copies of body fields for queries; the hash covers the body, and ``audit verify``
rebuilds every column from it and compares (:mod:`shieldbench.service._verify`): a
new column must be derived in ``audit_row`` or verify reports it as not covered. Created by the
alembic revision ``0002`` (``shieldbench/store/migrations/versions/0002_guard.py``).

Each writer keeps its own chain: ``chain`` names it (``main``: the single server on
SQLite, and every record written before replicas; a replica's chain otherwise), and
``seq`` counts within it; the primary key is ``(chain, seq)`` (revision ``0003``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, Table, Text
from sqlalchemy.orm import Mapped, mapped_column

from shieldbench.store import Base

__all__ = ["GuardAuditRow", "GuardFeedbackRow", "audit_table", "feedback_table"]

_PK = BigInteger().with_variant(Integer, "sqlite")  # SQLite: INTEGER PRIMARY KEY = rowid


class GuardAuditRow(Base):
    __tablename__ = "guard_audit"

    chain: Mapped[str] = mapped_column(String(48), primary_key=True, server_default="main")
    seq: Mapped[int] = mapped_column(_PK, primary_key=True, autoincrement=False)
    id: Mapped[str] = mapped_column(String(40), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    ref: Mapped[str | None] = mapped_column(String(40), index=True)
    created: Mapped[datetime] = mapped_column(index=True)
    decision: Mapped[str | None] = mapped_column(String(8))
    body: Mapped[str] = mapped_column(Text)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class GuardFeedbackRow(Base):
    __tablename__ = "guard_feedback"

    seq: Mapped[int] = mapped_column(_PK, primary_key=True, autoincrement=True)
    decision_id: Mapped[str] = mapped_column(String(40))
    label: Mapped[str] = mapped_column(String(8))
    reviewer: Mapped[str | None] = mapped_column(String(200))
    note: Mapped[str | None] = mapped_column(Text)
    created: Mapped[datetime]

    __table_args__ = (Index("ix_guard_feedback_decision", "decision_id"),)


audit_table: Table = GuardAuditRow.__table__  # type: ignore[assignment]
feedback_table: Table = GuardFeedbackRow.__table__  # type: ignore[assignment]
