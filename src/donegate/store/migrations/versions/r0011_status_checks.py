"""status checks: each stored status column accepts only its vocabulary (`donegate.records.status`).

A CHECK constraint per column, so a row with a status no code knows (a typo, a hand edit, an
older or newer writer) is refused by the database instead of being read back into an enum that
cannot hold it. The values are written out here, frozen as this migration adds them; a later
vocabulary change is a later migration. SQLite cannot add a constraint to a table, so batch mode
rebuilds each table (copy, drop, rename); `Database.migrate` runs it with SQLite's foreign keys
off and checks them all before the commit (the rebuilt ``tasks`` and ``runs`` are parents of
other tables' rows). Forward-only.
"""

from __future__ import annotations

from alembic import op

revision = "0011_status_checks"
down_revision = "0010_reviewers"
branch_labels = None
depends_on = None

CHECKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "tasks": (
        "status",
        ("pending", "running", "done", "awaiting_review", "escalated", "failed", "cancelled"),
    ),
    "runs": (
        "status",
        (
            "running",
            "done",
            "awaiting_review",
            "escalated",
            "failed",
            "cancelled",
            "lost",
            "error",
        ),
    ),
    "checklists": ("status", ("open", "done", "blocked")),
    "effects": ("state", ("begun", "done")),
    "escalations": ("status", ("open", "resolved", "requeued", "approved")),
    "outbox": ("state", ("pending", "delivered", "failed")),
    "events": ("status", ("done", "awaiting_review", "escalated", "failed")),
}
"""Each table's status column and the values it may hold, as of this migration."""


def condition(column: str, values: tuple[str, ...]) -> str:
    """The CHECK's SQL: the column is one of `values` (both dialects read it alike)."""
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    for table, (column, values) in CHECKS.items():
        with op.batch_alter_table(table) as batch:
            batch.create_check_constraint(f"ck_{table}_{column}", condition(column, values))


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
