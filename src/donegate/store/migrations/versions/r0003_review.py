"""review: the human queue also holds claims awaiting a person's approval (``closure: human``).

``escalations.kind`` is ``escalation`` (every existing row) or ``review``; ``resolved_by`` names
who approved, resolved or requeued an entry. Forward-only, like every donegate migration.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_review"
down_revision = "0002_turns"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "escalations",
        sa.Column("kind", sa.String(16), nullable=False, server_default="escalation"),
    )
    op.add_column("escalations", sa.Column("resolved_by", sa.String(200), nullable=True))


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
