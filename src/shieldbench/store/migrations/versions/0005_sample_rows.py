"""Samples in a table: one ``sample_rows`` row per sample, not one JSON document per set.

A set of ten million samples as one document is gigabytes that must be built,
hashed and read whole. From this revision a set's records are rows of
``sample_rows`` (``digest``, ``position``, ``record``: the sample's JSON field
list, the same text it had in the document), written and read a block at a time.
``sample_sets.data`` becomes nullable: sets stored before keep their document and
read as before, new sets leave it NULL. The digest is unchanged (the sha256 of the
same list), so a run over samples stored before shares their set.

Revision ID: 0005
Revises: 0004 (the attack kind)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "sample_rows",
        sa.Column(
            "digest",
            sa.String(64),
            sa.ForeignKey("sample_sets.digest", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("record", sa.Text, nullable=False),
    )
    with op.batch_alter_table("sample_sets") as batch:
        batch.alter_column("data", existing_type=sa.LargeBinary(), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM sample_sets WHERE data IS NULL")
    with op.batch_alter_table("sample_sets") as batch:
        batch.alter_column("data", existing_type=sa.LargeBinary(), nullable=False)
    op.drop_table("sample_rows")
