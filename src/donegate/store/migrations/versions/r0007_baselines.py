"""baselines: each task's protected-file manifest as its first run took it.

A run resumed after its worker died (or was killed: the agent runs as the same user) used to
take the manifest again, from a workdir the first run may already have changed; a later run now
judges against the one the first run took. Forward-only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_baselines"
down_revision = "0006_claim_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "baselines",
        sa.Column("task_id", sa.String(200), primary_key=True),
        sa.Column("manifest", sa.Text, nullable=False),
        sa.Column("taken_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
