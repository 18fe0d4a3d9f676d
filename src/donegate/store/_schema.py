"""The store's tables (SQLAlchemy Core); migrations create them, queries use these objects.

Times are epoch seconds (floats): portable between SQLite and PostgreSQL, cheap to compare in a
lease predicate. JSON is stored as text the store encodes itself, so both backends hold the same
bytes. A test compares these tables with what the migrations build. Each status column has a
CHECK naming its vocabulary from `donegate.records.status` (r0011_status_checks).
"""

from __future__ import annotations

import sqlalchemy as sa

from donegate.records.status import (
    ATTEMPT_VALUES,
    EFFECT_VALUES,
    ENDING_VALUES,
    ESCALATION_VALUES,
    ITEM_VALUES,
    LOOP_VALUES,
    OUTBOX_VALUES,
    TASK_OUTCOMES,
    TASK_VALUES,
)

__all__ = [
    "BACKOFF",
    "READY",
    "actions",
    "checklists",
    "effects",
    "escalations",
    "events",
    "evidence",
    "messages",
    "metadata",
    "outbox",
    "reviewers",
    "runs",
    "tasks",
    "turns",
]

metadata = sa.MetaData()


def one_of(table: str, column: str, values: tuple[str, ...]) -> sa.CheckConstraint:
    """The CHECK that a status column holds one of its vocabulary's values (r0011)."""
    listed = ", ".join(f"'{v}'" for v in values)
    return sa.CheckConstraint(f"{column} IN ({listed})", name=f"ck_{table}_{column}")


tasks = sa.Table(
    "tasks",
    metadata,
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
    sa.Index("ix_tasks_status_created", "status", "created_at"),
    one_of("tasks", "status", TASK_VALUES),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("task_id", sa.String(200), sa.ForeignKey("tasks.id"), nullable=False, index=True),
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
    sa.Column("replayed_calls", sa.Integer, nullable=False, server_default="0"),
    one_of("runs", "status", ATTEMPT_VALUES),
)

turns = sa.Table(
    "turns",
    metadata,
    sa.Column("task_id", sa.String(200), primary_key=True),
    sa.Column("generation", sa.Integer, primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("turn", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
"""Every classified turn of a task's generation by model-call number: a resume replays them."""

messages = sa.Table(
    "messages",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("task_id", sa.String(200), nullable=False, index=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.UniqueConstraint("run_id", "seq", name="uq_messages_run_seq"),
)

evidence = sa.Table(
    "evidence",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("task_id", sa.String(200), nullable=False, index=True),
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

checklists = sa.Table(
    "checklists",
    metadata,
    sa.Column("task_id", sa.String(200), primary_key=True),
    sa.Column("item", sa.String(500), primary_key=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("note", sa.Text, nullable=False, server_default=""),
    sa.Column("updated_at", sa.Float, nullable=False),
    one_of("checklists", "status", ITEM_VALUES),
)

baselines = sa.Table(
    "baselines",
    metadata,
    sa.Column("task_id", sa.String(200), primary_key=True),
    sa.Column("manifest", sa.Text, nullable=False),
    sa.Column("taken_at", sa.Float, nullable=False),
)
"""Each task's protected-file manifest as its first run took it (r0007_baselines): every later
run of the task, a resumed one included, judges its protected files against it."""

effects = sa.Table(
    "effects",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("task_id", sa.String(200), nullable=False, index=True),
    sa.Column("state", sa.String(8), nullable=False),
    sa.Column("call", sa.Text, nullable=False),
    sa.Column("result", sa.Text, nullable=True),
    sa.Column("epoch", sa.Integer, nullable=False),
    sa.Column("issues", sa.Integer, nullable=False, server_default="1"),
    sa.Column("begun_at", sa.Float, nullable=False),
    sa.Column("done_at", sa.Float, nullable=True),
    one_of("effects", "state", EFFECT_VALUES),
)

escalations = sa.Table(
    "escalations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("task_id", sa.String(200), nullable=False, index=True),
    sa.Column("run_id", sa.Integer, nullable=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("report", sa.Text, nullable=False),
    sa.Column("report_md", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("resolved_at", sa.Float, nullable=True),
    sa.Column("note", sa.Text, nullable=True),
    sa.Column("instructions", sa.Text, nullable=True),
    sa.Column("kind", sa.String(16), nullable=False, server_default="escalation"),
    sa.Column("resolved_by", sa.String(200), nullable=True),
    one_of("escalations", "status", ESCALATION_VALUES),
)
"""The human queue: escalations, and (``kind = 'review'``) claims awaiting a person's approval."""

events = sa.Table(
    "events",
    metadata,
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
    sa.Column("replayed_turns", sa.Integer, nullable=False, server_default="0"),
    sa.Column("input_tokens", sa.Integer, nullable=False, server_default="0"),
    sa.Column("output_tokens", sa.Integer, nullable=False, server_default="0"),
    sa.Column("duration_s", sa.Float, nullable=False),
    sa.Column("at", sa.Float, nullable=False, index=True),
    sa.Column("spend_usd", sa.Float, nullable=False, server_default="0"),  # r0009_spend
    one_of("events", "status", TASK_OUTCOMES),
    one_of("events", "ending", ENDING_VALUES),  # r0012_event_checks
    one_of("events", "loop_status", LOOP_VALUES),  # r0012_event_checks
)

actions = sa.Table(
    "actions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("task_id", sa.String(200), nullable=False),
    sa.Column("escalation_id", sa.Integer, nullable=True),
    sa.Column("detail", sa.Text, nullable=True),
    sa.Index("ix_actions_task_at", "task_id", "at"),
)

reviewers = sa.Table(
    "reviewers",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("secret_hash", sa.String(200), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
"""The people who may approve, resolve and requeue (r0010_reviewers): a KDF hash per secret,
never the secret (`donegate.review.reviewers`)."""
"""What people did from the review UI (resolve, requeue, retry): who (a token's name) and when."""

# Indexes the review UI's pages read through (r0004_actions): each list is one index range scan.
sa.Index("ix_tasks_created", tasks.c.created_at)
sa.Index("ix_tasks_type_created", tasks.c.type, tasks.c.created_at)
sa.Index("ix_escalations_status_id", escalations.c.status, escalations.c.id)
sa.Index("ix_events_type_at", events.c.task_type, events.c.at)

# Indexes claims read through (r0006_claim_index), partial so ended tasks are in neither: the
# oldest runnable pending task is the first entry of ``ix_tasks_ready``; backed-off tasks wait in
# ``ix_tasks_backoff`` by time, and a claim reads only those whose time has come.
READY = sa.text("status = 'pending' AND not_before IS NULL")
BACKOFF = sa.text("status = 'pending' AND not_before IS NOT NULL")
sa.Index("ix_tasks_ready", tasks.c.created_at, sqlite_where=READY, postgresql_where=READY)
sa.Index("ix_tasks_backoff", tasks.c.not_before, sqlite_where=BACKOFF, postgresql_where=BACKOFF)

outbox = sa.Table(
    "outbox",
    metadata,
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
    sa.Index("ix_outbox_task", "task_id"),
    sa.Index("ix_outbox_state_next", "state", "next_at"),
    one_of("outbox", "state", OUTBOX_VALUES),
)
"""Final-outcome notifications (r0005_outbox): written with the outcome, delivered by a worker."""
