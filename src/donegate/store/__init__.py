"""Durable tasks: the store's protocols, its SQL implementation, and the effects ledger.

``open_store(db)`` opens SQLite by default (``$DONEGATE_HOME/donegate.db``) or PostgreSQL by
URL (``postgresql+psycopg://...``) and runs the named, forward-only migrations shipped here.
SQLAlchemy and Alembic are imported only when a store is opened.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from donegate.errors import (
    DiskFull,
    LeaseLost,
    MissingExtra,
    StoreError,
    StoreGone,
    StoreUnavailable,
)
from donegate.store.base import (
    Escalation,
    HeldEffect,
    JournalWrite,
    Lease,
    QueueRow,
    ReviewAction,
    Reviewer,
    RunJournal,
    RunOutcome,
    RunRecord,
    StopRow,
    TaskPage,
    TaskRecord,
)
from donegate.store.ledger import StoreLedger
from donegate.store.protocols import (
    BrowseStore,
    Journal,
    LedgerStore,
    Reviewers,
    ReviewQueue,
    TaskQueue,
    TaskStore,
    WorkerStore,
)

if TYPE_CHECKING:
    from donegate.store.sql import SqlStore

__all__ = [
    "BrowseStore",
    "DiskFull",
    "Escalation",
    "HeldEffect",
    "Journal",
    "JournalWrite",
    "Lease",
    "LeaseLost",
    "LedgerStore",
    "QueueRow",
    "ReviewAction",
    "ReviewQueue",
    "Reviewer",
    "Reviewers",
    "RunJournal",
    "RunOutcome",
    "RunRecord",
    "StopRow",
    "StoreError",
    "StoreGone",
    "StoreLedger",
    "StoreUnavailable",
    "TaskPage",
    "TaskQueue",
    "TaskRecord",
    "TaskStore",
    "WorkerStore",
    "open_store",
]


def open_store(
    db: str | os.PathLike[str] | None = None,
    *,
    pool_size: int = 5,
    patience_s: float = 0.0,
    clock: Callable[[], float] = time.time,
) -> SqlStore:
    """Open and migrate the store at `db` (a URL, a SQLite path, or None for the default).

    `patience_s` is how long later calls retry a store that stopped answering (see
    `TaskStore.patience_s`); opening itself fails at once, with one line. `clock` is the store's
    now in epoch seconds (leases, backoffs, timestamps): tests pass a fake one.
    """
    try:
        import alembic  # noqa: F401 - probe the extra before importing the store
        import sqlalchemy  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(exc.name or "sqlalchemy", "postgres") from None
    from donegate.store.sql import open_store as _open

    return _open(db, pool_size=pool_size, patience_s=patience_s, clock=clock)
