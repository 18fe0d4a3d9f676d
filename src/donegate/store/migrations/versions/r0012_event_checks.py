"""event checks: a stop row's ``ending`` and ``loop_status`` accept only their vocabularies.

r0011 checked each table's status column; the events table has two more status-like columns,
the last turn's `Ending` and the loop's status (a `Status`, or ``outcome_unknown`` when a worker
could not know how a run ended: `donegate.records.status.LoopStatus`). Both may be NULL (a run
that ended before any turn; a stop row written before either was recorded). The values are
written out here, frozen as this migration adds them. SQLite rebuilds the table in batch mode,
as r0011 did. Forward-only.
"""

from __future__ import annotations

from alembic import op

revision = "0012_event_checks"
down_revision = "0011_status_checks"
branch_labels = None
depends_on = None

ENDINGS = (
    "complete",
    "tool_use",
    "truncated",
    "filtered",
    "refused",
    "paused",
    "context_exceeded",
    "empty",
    "error",
    "malformed_tool_call",
)
"""Every turn ending, as of this migration."""

LOOP_STATUSES = (
    "complete",
    "truncated",
    "filtered",
    "refused",
    "empty",
    "context_exceeded",
    "malformed_tool_call",
    "provider_error",
    "max_steps",
    "budget_exceeded",
    "gated",
    "outcome_unknown",
)
"""Every loop status a stop row records, as of this migration."""


def upgrade() -> None:
    with op.batch_alter_table("events") as batch:
        for column, values in (("ending", ENDINGS), ("loop_status", LOOP_STATUSES)):
            listed = ", ".join(repr(v) for v in values)
            batch.create_check_constraint(f"ck_events_{column}", f"{column} IN ({listed})")


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
