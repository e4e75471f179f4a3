"""Guard service: the hash-chained audit log and reviewers' feedback.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from shieldbench.store._models import UTCDateTime

revision = "0002"
down_revision: str | None = "0001"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

_PK = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "guard_audit",
        sa.Column("seq", _PK, primary_key=True, autoincrement=False),
        sa.Column("id", sa.String(40), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(40)),
        sa.Column("created", UTCDateTime(), nullable=False),
        sa.Column("decision", sa.String(8)),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )
    op.create_index("ix_guard_audit_created", "guard_audit", ["created"])
    op.create_index("ix_guard_audit_ref", "guard_audit", ["ref"])
    op.create_table(
        "guard_feedback",
        sa.Column("seq", _PK, primary_key=True, autoincrement=True),
        sa.Column("decision_id", sa.String(40), nullable=False),
        sa.Column("label", sa.String(8), nullable=False),
        sa.Column("reviewer", sa.String(200)),
        sa.Column("note", sa.Text),
        sa.Column("created", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_guard_feedback_decision", "guard_feedback", ["decision_id"])


def downgrade() -> None:
    op.drop_table("guard_feedback")
    op.drop_table("guard_audit")
