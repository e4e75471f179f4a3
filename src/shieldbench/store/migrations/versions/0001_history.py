"""Run history: runs, tags, samples, outcomes, attacks, alerts.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from shieldbench.store._models import UTCDateTime

revision = "0001"
down_revision: str | None = None
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "sample_sets",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("n", sa.Integer, nullable=False),
    )
    op.create_table(
        "samples",
        sa.Column(
            "set_digest",
            sa.String(64),
            sa.ForeignKey("sample_sets.digest", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("sample_id", sa.Text, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("label", sa.String(8), nullable=False),
        sa.Column("category", sa.String(200), nullable=False),
        sa.Column("subcategory", sa.String(200)),
        sa.Column("severity", sa.String(16)),
        sa.Column("tier", sa.String(16)),
        sa.Column("source", sa.String(200)),
        sa.Column("metadata", sa.JSON),
    )
    op.create_table(
        "runs",
        sa.Column("pk", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(128), nullable=False, unique=True),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("defense_spec", sa.Text, nullable=False),
        sa.Column("defense_name", sa.String(200), nullable=False),
        sa.Column("defense_version", sa.String(200)),
        sa.Column("dataset_spec", sa.Text, nullable=False),
        sa.Column("dataset_hash", sa.String(100), nullable=False, index=True),
        sa.Column("n_samples", sa.Integer, nullable=False),
        sa.Column("sample_set", sa.String(64), sa.ForeignKey("sample_sets.digest"), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("environment", sa.JSON, nullable=False),
        sa.Column("extra", sa.JSON, nullable=False),
        sa.Column("git_commit", sa.String(64)),
        sa.Column("git_branch", sa.String(200)),
        sa.Column("started", UTCDateTime(), nullable=False, index=True),
        sa.Column("finished", UTCDateTime(), nullable=False),
        sa.Column("recorded", UTCDateTime(), nullable=False),
        sa.Column("error_policy", sa.String(16), nullable=False),
        sa.Column("n_attack", sa.Integer, nullable=False),
        sa.Column("n_benign", sa.Integer, nullable=False),
        sa.Column("n_errors", sa.Integer, nullable=False),
        *(
            sa.Column(name, sa.Float)
            for name in (
                "block_rate",
                "block_low",
                "block_high",
                "fpr",
                "fpr_low",
                "fpr_high",
                "p50_ms",
                "p95_ms",
                "p95_low",
                "p95_high",
            )
        ),
    )
    op.create_index("ix_runs_defense_dataset", "runs", ["defense_name", "dataset_hash"])
    op.create_table(
        "run_tags",
        sa.Column(
            "run_pk", sa.Integer, sa.ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("value", sa.String(1000), nullable=False),
    )
    op.create_index("ix_run_tags_key_value", "run_tags", ["key", "value"])
    op.create_table(
        "outcomes",
        sa.Column(
            "run_pk", sa.Integer, sa.ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("blocked", sa.Boolean),
        sa.Column("score", sa.Float),
        sa.Column("latency_ms", sa.Float),
        sa.Column("attempts", sa.SmallInteger, nullable=False),
        sa.Column("verdict_label", sa.String(200)),
        sa.Column("reasons", sa.JSON),
        sa.Column("details", sa.JSON),
        sa.Column("error", sa.Text),
    )
    op.create_table(
        "attacks",
        sa.Column("pk", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("attack_id", sa.String(128), nullable=False, unique=True),
        sa.Column("defense_spec", sa.Text, nullable=False),
        sa.Column("defense_name", sa.String(200), nullable=False),
        sa.Column("dataset_spec", sa.Text, nullable=False),
        sa.Column("dataset_hash", sa.String(100), nullable=False, index=True),
        sa.Column("started", UTCDateTime(), nullable=False, index=True),
        sa.Column("finished", UTCDateTime(), nullable=False),
        sa.Column("recorded", UTCDateTime(), nullable=False),
        sa.Column("static_asr", sa.Float),
        sa.Column("adaptive_asr", sa.Float),
        sa.Column("queries", sa.Integer),
        sa.Column("git_commit", sa.String(64)),
        sa.Column("git_branch", sa.String(200)),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("document", sa.JSON, nullable=False),
    )
    op.create_table(
        "alerts",
        sa.Column("pk", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("created", UTCDateTime(), nullable=False, index=True),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("key", sa.String(300), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("details", sa.JSON, nullable=False),
        sa.Column("run_pk", sa.Integer, sa.ForeignKey("runs.pk", ondelete="SET NULL")),
        sa.Column("delivered", sa.JSON, nullable=False),
    )
    op.create_index("ix_alerts_source_key_created", "alerts", ["source", "key", "created"])


def downgrade() -> None:
    for table in ("alerts", "attacks", "outcomes", "run_tags", "runs", "samples", "sample_sets"):
        op.drop_table(table)
