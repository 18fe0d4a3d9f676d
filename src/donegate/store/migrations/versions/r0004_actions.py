"""actions: what people did from the review UI, and the indexes its pages read through.

``actions`` records each resolve, requeue and retry made in ``donegate serve`` with who (the
token's name) and when. The indexes make every page one index range scan: tasks newest first
(all, or by type), the open queue oldest first, stop rows by task type and time. Forward-only,
like every donegate migration.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_actions"
down_revision = "0003_review"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "actions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("escalation_id", sa.Integer, nullable=True),
        sa.Column("detail", sa.Text, nullable=True),
    )
    op.create_index("ix_actions_task_at", "actions", ["task_id", "at"])
    op.create_index("ix_tasks_created", "tasks", ["created_at"])
    op.create_index("ix_tasks_type_created", "tasks", ["type", "created_at"])
    op.create_index("ix_escalations_status_id", "escalations", ["status", "id"])
    op.create_index("ix_events_type_at", "events", ["task_type", "at"])


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
