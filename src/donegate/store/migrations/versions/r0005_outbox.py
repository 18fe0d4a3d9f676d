"""outbox: final-outcome notifications, written in the transaction that records the outcome.

One row per notify target of a task's generation, keyed ``<task>:final`` (or
``<task>~<generation>:final``): a worker delivers it with backoff and bounded attempts and
records pending, delivered or failed with the last error. Forward-only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_outbox"
down_revision = "0004_actions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("target_no", sa.Integer, nullable=False),
        sa.Column("key", sa.String(300), nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("max_attempts", sa.Integer, nullable=False),
        sa.Column("next_at", sa.Float, nullable=False),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("delivered_at", sa.Float, nullable=True),
        sa.UniqueConstraint("key", "target_no", name="uq_outbox_key_target"),
    )
    op.create_index("ix_outbox_task", "outbox", ["task_id"])
    op.create_index("ix_outbox_state_next", "outbox", ["state", "next_at"])


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
