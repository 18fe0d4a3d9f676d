"""initial: tasks, runs, messages, evidence, checklists, effects, escalations, events.

Forward-only: there is no downgrade; a newer schema is reached by a newer named migration.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("type", sa.String(100), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("spec", sa.Text, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
        sa.Column("instructions", sa.Text, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("max_attempts", sa.Integer, nullable=False, server_default="5"),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_epoch", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lease_expires", sa.Float, nullable=True),
        sa.Column("heartbeat_at", sa.Float, nullable=True),
        sa.Column("not_before", sa.Float, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float, nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("result", sa.Text, nullable=True),
    )
    op.create_index("ix_tasks_status_created", "tasks", ["status", "created_at"])
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.String(200), sa.ForeignKey("tasks.id"), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("epoch", sa.Integer, nullable=False),
        sa.Column("worker_id", sa.String(200), nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("ending", sa.String(32), nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("model_calls", sa.Integer, nullable=False, server_default="0"),
        sa.Column("continuations", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_runs_task_id", "runs", ["task_id"])
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.UniqueConstraint("run_id", "seq", name="uq_messages_run_seq"),
    )
    op.create_index("ix_messages_task_id", "messages", ["task_id"])
    op.create_table(
        "evidence",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("call", sa.Text, nullable=False),
        sa.Column("result", sa.Text, nullable=False),
        sa.Column("executed", sa.Boolean, nullable=False),
        sa.Column("idempotency_key", sa.String(300), nullable=True),
        sa.Column("duration_s", sa.Float, nullable=False, server_default="0"),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_evidence_task_id", "evidence", ["task_id"])
    op.create_table(
        "checklists",
        sa.Column("task_id", sa.String(200), primary_key=True),
        sa.Column("item", sa.String(500), primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "effects",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("call", sa.Text, nullable=False),
        sa.Column("result", sa.Text, nullable=True),
        sa.Column("epoch", sa.Integer, nullable=False),
        sa.Column("issues", sa.Integer, nullable=False, server_default="1"),
        sa.Column("begun_at", sa.Float, nullable=False),
        sa.Column("done_at", sa.Float, nullable=True),
    )
    op.create_index("ix_effects_task_id", "effects", ["task_id"])
    op.create_table(
        "escalations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("run_id", sa.Integer, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("report", sa.Text, nullable=False),
        sa.Column("report_md", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("resolved_at", sa.Float, nullable=True),
        sa.Column("note", sa.Text, nullable=True),
        sa.Column("instructions", sa.Text, nullable=True),
    )
    op.create_index("ix_escalations_task_id", "escalations", ["task_id"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("run_id", sa.Integer, nullable=True),
        sa.Column("task_type", sa.String(100), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("ending", sa.String(32), nullable=True),
        sa.Column("loop_status", sa.String(32), nullable=True),
        sa.Column("open_items", sa.Integer, nullable=False, server_default="0"),
        sa.Column("turns", sa.Integer, nullable=False),
        sa.Column("continuations", sa.Integer, nullable=False),
        sa.Column("input_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("output_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("duration_s", sa.Float, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_events_at", "events", ["at"])


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
