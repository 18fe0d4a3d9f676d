"""Durable tasks: the `TaskStore` protocol, its SQL implementation, and the effects ledger.

``open_store(db)`` opens SQLite by default (``$DONEGATE_HOME/donegate.db``) or PostgreSQL by
URL (``postgresql+psycopg://...``) and runs the named, forward-only migrations shipped here.
SQLAlchemy and Alembic are imported only when a store is opened.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from donegate.errors import MissingExtra
from donegate.store.base import (
    TASK_ID,
    TERMINAL,
    Action,
    BrowseStore,
    DiskFull,
    Escalation,
    Evidence,
    HeldEffect,
    JournalWrite,
    Lease,
    LeaseLost,
    Outcome,
    QueueRow,
    RunJournal,
    RunRecord,
    StopRow,
    StoreError,
    StoreGone,
    StoreUnavailable,
    TaskPage,
    TaskRecord,
    TaskStatus,
    TaskStore,
)
from donegate.store.ledger import StoreLedger

if TYPE_CHECKING:
    from donegate.store.sql import SqlStore

__all__ = [
    "TASK_ID",
    "TERMINAL",
    "Action",
    "BrowseStore",
    "DiskFull",
    "Escalation",
    "Evidence",
    "HeldEffect",
    "JournalWrite",
    "Lease",
    "LeaseLost",
    "Outcome",
    "QueueRow",
    "RunJournal",
    "RunRecord",
    "StopRow",
    "StoreError",
    "StoreGone",
    "StoreLedger",
    "StoreUnavailable",
    "TaskPage",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "open_store",
]


def open_store(
    db: str | os.PathLike[str] | None = None, *, pool_size: int = 5, patience_s: float = 0.0
) -> SqlStore:
    """Open and migrate the store at `db` (a URL, a SQLite path, or None for the default).

    `patience_s` is how long later calls retry a store that stopped answering (see
    `TaskStore.patience_s`); opening itself fails at once, with one line.
    """
    try:
        import alembic  # noqa: F401 - probe the extra before importing the store
        import sqlalchemy  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(exc.name or "sqlalchemy", "postgres") from None
    from donegate.store.sql import open_store as _open

    return _open(db, pool_size=pool_size, patience_s=patience_s)
