"""Attacks: a ``kind`` column, so that LLM-driven attacks are stored beside mutator searches.

The ``attacks`` table holds every attack result's ``to_dict()`` document; its
``kind`` (``shieldbench.attack`` for the mutator search, ``shieldbench.llm_attack``
for PAIR, TAP and Crescendo) is now a column, so a listing can say which record a
row holds without reading the document. Rows written before this revision are
mutator searches (the only kind stored then): the server default says so.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision: str | None = "0003"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("attacks") as batch:
        batch.add_column(
            sa.Column("kind", sa.String(64), nullable=False, server_default="shieldbench.attack")
        )


def downgrade() -> None:
    with op.batch_alter_table("attacks") as batch:
        batch.drop_column("kind")
