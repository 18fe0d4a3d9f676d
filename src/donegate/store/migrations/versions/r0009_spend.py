"""spend: each run's model-call cost in US dollars beside its tokens, for ``donegate stats``.

Forward-only; rows written before it read as 0.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_spend"
down_revision = "0007_baselines"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("events", sa.Column("spend_usd", sa.Float, nullable=False, server_default="0"))


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
