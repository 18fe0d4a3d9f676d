"""reviewers: the people who may approve, resolve and requeue, each with a hashed secret.

``donegate reviewers add NAME`` prints a secret once and keeps only its scrypt hash here; the
secret is then the UI login, the API bearer and the CLI's ``--token-file``. Forward-only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_reviewers"
down_revision = "0009_spend"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reviewers",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("secret_hash", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("donegate migrations are forward-only")
