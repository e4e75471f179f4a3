"""Guard audit: one hash chain per writer (a ``chain`` column; primary key ``(chain, seq)``).

Every record written before this revision belongs to the chain ``main`` (its body has
no ``chain`` field, and ``audit_row`` derives ``main`` from that), so an existing
chain verifies as it did. The table is rebuilt (SQLite cannot change a primary key
in place): a new table, the rows copied, the old one dropped, the new one renamed.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from shieldbench.store._models import UTCDateTime

revision = "0003"
down_revision: str | None = "0002"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

_PK = sa.BigInteger().with_variant(sa.Integer, "sqlite")
_COLUMNS = "seq, id, kind, ref, created, decision, body, prev_hash, hash"


def _table(name: str, *, chained: bool) -> None:
    chain = sa.Column("chain", sa.String(48), primary_key=True, server_default="main")
    columns = [chain] if chained else []
    op.create_table(
        name,
        *columns,
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


def _swap(*, chained: bool) -> None:
    op.drop_index("ix_guard_audit_created", "guard_audit")
    op.drop_index("ix_guard_audit_ref", "guard_audit")
    _table("guard_audit_new", chained=chained)
    select = f"'main', {_COLUMNS}" if chained else _COLUMNS
    target = f"chain, {_COLUMNS}" if chained else _COLUMNS
    where = "" if chained else " WHERE chain = 'main'"
    op.execute(f"INSERT INTO guard_audit_new ({target}) SELECT {select} FROM guard_audit{where}")
    op.drop_table("guard_audit")
    op.rename_table("guard_audit_new", "guard_audit")
    op.create_index("ix_guard_audit_created", "guard_audit", ["created"])
    op.create_index("ix_guard_audit_ref", "guard_audit", ["ref"])


def upgrade() -> None:
    _swap(chained=True)


def downgrade() -> None:
    """Back to one chain: only the ``main`` chain's records are kept."""
    _swap(chained=False)
