"""turns: every classified turn by model-call number, and replayed-call counts per run.

A resumed run answers its first model calls from `turns` (no model call, no cost) and goes live
after the last one; `runs.replayed_calls` and `events.replayed_turns` say how many were replayed.
Forward-only, like every donegate migration.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_turns"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "turns",
        sa.Column("task_id", sa.String(200), primary_key=True),
        sa.Column("generation", sa.Integer, primary_key=True),
        sa.Column("step", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("turn", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.add_column(
        "runs", sa.Column("replayed_calls", sa.Integer, nullable=False, server_default="0")
    )
    op.add_column(
        "events", sa.Column("replayed_turns", sa.Integer, nullable=False, server_default="0")
    )


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
