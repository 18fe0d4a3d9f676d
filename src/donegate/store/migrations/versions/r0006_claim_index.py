"""claim_index: a claim finds the oldest runnable task without scanning backed-off ones.

``ix_tasks_ready`` holds only the pending tasks that may run now (``not_before`` is NULL), in
submission order: a claim reads its first entry. ``ix_tasks_backoff`` holds the pending tasks
waiting out a backoff, by when they may run: a claim first moves those whose time has come into
the ready set (``not_before`` back to NULL), reading only them. Both are partial indexes (SQLite
and PostgreSQL), so rows of ended tasks are in neither. Forward-only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_claim_index"
down_revision = "0005_outbox"
branch_labels = None
depends_on = None

_READY = sa.text("status = 'pending' AND not_before IS NULL")
_BACKOFF = sa.text("status = 'pending' AND not_before IS NOT NULL")


def upgrade() -> None:
    op.create_index(
        "ix_tasks_ready", "tasks", ["created_at"], sqlite_where=_READY, postgresql_where=_READY
    )
    op.create_index(
        "ix_tasks_backoff",
        "tasks",
        ["not_before"],
        sqlite_where=_BACKOFF,
        postgresql_where=_BACKOFF,
    )


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
