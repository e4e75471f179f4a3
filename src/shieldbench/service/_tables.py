"""The service's tables: the hash-chained audit log and the reviewers' feedback.

``guard_audit`` is append-only: the service inserts rows and never updates one; a
warn-only verdict that arrives after the response is its own record (``kind="warn"``,
``ref`` = the decision id). Each row stores its canonical JSON ``body``, the hash of
the previous row and its own hash, ``sha256(prev_hash + body)``; ``shieldbench audit
verify`` recomputes the chain. The denormalised columns (time, kind, decision) exist
for queries only; the hash covers the body, which holds them too.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

__all__ = ["audit_table", "feedback_table", "metadata"]

metadata = MetaData()

audit_table = Table(
    "guard_audit",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("id", String(40), nullable=False, unique=True),
    Column("kind", String(16), nullable=False),
    Column("ref", String(40), nullable=True),
    Column("created", Float, nullable=False),
    Column("decision", String(8), nullable=True),
    Column("body", Text, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    Index("ix_guard_audit_created", "created"),
    Index("ix_guard_audit_ref", "ref"),
)

feedback_table = Table(
    "guard_feedback",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("decision_id", String(40), nullable=False),
    Column("label", String(8), nullable=False),
    Column("reviewer", String(200), nullable=True),
    Column("note", Text, nullable=True),
    Column("created", Float, nullable=False),
    Index("ix_guard_feedback_decision", "decision_id"),
)
