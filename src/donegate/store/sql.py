"""`SqlStore`: the one `TaskStore` implementation, on SQLite (default) or PostgreSQL by URL.

The class is assembled from mixins, one per concern: dispatch (here), leases
(`donegate.store._leases`), the run journal (`donegate.store._journal`), the effects ledger
(`donegate.store._effects`), the human queue and telemetry reads (`donegate.store._review`),
the reviewers (`donegate.store._reviewers`), the review UI's pages (`donegate.store._browse`)
and the outbox (`donegate.store._outbox`). It implements every protocol of
`donegate.store.protocols`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import Connection

from donegate.codec import canonical_json, loads
from donegate.errors import UserError
from donegate.records.status import TASK_TERMINAL, TaskStatus
from donegate.records.task import TASK_ID
from donegate.store._baselines import BaselineMixin
from donegate.store._browse import BrowseMixin
from donegate.store._db import Database, patient, resolve_url
from donegate.store._effects import LedgerMixin
from donegate.store._journal import JournalMixin, put_checklist
from donegate.store._leases import LeaseMixin
from donegate.store._outbox import OutboxMixin, write_decision
from donegate.store._review import ReviewMixin
from donegate.store._reviewers import ReviewersMixin
from donegate.store._schema import escalations, runs, tasks
from donegate.store.base import BrowseStore, TaskRecord, TaskStore

__all__ = ["RESERVE_BYTES", "SqlStore", "open_store"]

RESERVE_BYTES = 2 * 1024 * 1024
"""Disk a worker's SQLite store holds back for a full disk: room for dozens of put-backs."""


def open_store(
    db: str | os.PathLike[str] | None = None,
    *,
    pool_size: int = 5,
    patience_s: float = 0.0,
    clock: Callable[[], float] = time.time,
) -> SqlStore:
    """Open (and migrate) the store at ``--db``: a URL, a SQLite path, or the default file.

    An unreachable or unusable URL raises a one-line `UserError` naming it. `patience_s` is how
    long later calls retry a store that stopped answering (`TaskStore.patience_s`). `clock` is
    the store's now, in epoch seconds (leases, backoffs, timestamps): tests pass a fake one.
    """
    store = SqlStore(Database(resolve_url(db), pool_size=pool_size), clock=clock)
    try:
        store.patience_s = patience_s
        store._db.migrate()
        store._db.pin()
    except BaseException:
        store.close()
        raise
    return store


def _record(row: Any) -> TaskRecord:
    return TaskRecord(
        id=row.id,
        spec=loads(row.spec),
        type=row.type,
        status=TaskStatus(row.status),
        attempts=row.attempts,
        max_attempts=row.max_attempts,
        generation=row.generation,
        instructions=row.instructions,
        lease_owner=row.lease_owner,
        lease_epoch=row.lease_epoch,
        lease_expires=row.lease_expires,
        heartbeat_at=row.heartbeat_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        finished_at=row.finished_at,
        reason=row.reason,
        result=loads(row.result),
    )


class SqlStore(
    LeaseMixin,
    JournalMixin,
    BaselineMixin,
    LedgerMixin,
    ReviewMixin,
    ReviewersMixin,
    BrowseMixin,
    OutboxMixin,
):
    """A `TaskStore` on SQLAlchemy Core; build it with `open_store`."""

    def __init__(self, database: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = database
        self.url = database.url
        """Where the store lives, password masked."""
        self.clock = clock
        """The store's now in epoch seconds: every lease, backoff and timestamp reads it."""

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.dialect

    @property
    def patience_s(self) -> float:
        """How long a call retries a store that stopped answering (see `TaskStore`)."""
        return self._db.patience_s

    @patience_s.setter
    def patience_s(self, value: float) -> None:
        if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
            raise UserError(f"the store's patience must be a finite number >= 0, got {value!r}")
        self._db.patience_s = float(value)

    def close(self) -> None:
        self._db.dispose()

    def keep_reserve(self, nbytes: int = RESERVE_BYTES) -> None:
        """Hold disk beside a SQLite store, freed when the disk fills (see `TaskStore`)."""
        self._db.keep_reserve(nbytes)

    # -- dispatch ------------------------------------------------------------------------------

    @patient
    def submit(
        self, task_id: str, spec: Mapping[str, Any], *, type: str | None, max_attempts: int = 5
    ) -> tuple[TaskRecord, bool]:
        if not task_id:
            raise UserError("a task id must not be empty")
        if not TASK_ID.fullmatch(task_id):
            shown = task_id if len(task_id) <= 40 else f"{task_id[:37]}..."
            raise UserError(
                f"task id {shown!r} ({len(task_id)} characters): an id is 1 to 128 of "
                "A-Z a-z 0-9 . _ -"
            )
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise UserError(f"max_attempts must be a whole number >= 1, got {max_attempts!r}")
        now = self.clock()
        text = canonical_json(spec)
        try:
            with self._db.write() as conn:
                row = conn.execute(sa.select(tasks).where(tasks.c.id == task_id)).first()
                if row is None:
                    conn.execute(
                        sa.insert(tasks).values(
                            id=task_id,
                            type=type,
                            status="pending",
                            spec=text,
                            max_attempts=max_attempts,
                            created_at=now,
                            updated_at=now,
                        )
                    )
                    items = [(str(i), "open", "") for i in spec.get("checklist") or ()]
                    put_checklist(conn, task_id, items, now)
                    created = True
                else:
                    created = False
        except exc.IntegrityError:  # a concurrent submit of the same id won the insert
            created = False
        record = self.get(task_id)
        assert record is not None
        if not created and canonical_json(record.spec) != text:
            raise UserError(f"task {task_id!r} was already submitted with a different spec")
        return record, created

    @patient
    def get(self, task_id: str) -> TaskRecord | None:
        with self._db.read() as conn:
            row = conn.execute(sa.select(tasks).where(tasks.c.id == task_id)).first()
        return None if row is None else _record(row)

    @patient
    def list_tasks(self, *, status: str | None = None, limit: int = 100) -> list[TaskRecord]:
        query = sa.select(tasks).order_by(tasks.c.created_at.desc(), tasks.c.id).limit(limit)
        if status is not None:
            query = query.where(tasks.c.status == status)
        with self._db.read() as conn:
            return [_record(r) for r in conn.execute(query).all()]

    @patient
    def cancel(self, task_id: str, reason: str = "cancelled") -> TaskRecord:
        now = self.clock()
        with self._db.write() as conn:
            row = self._locked(conn, task_id)
            if row.status in TASK_TERMINAL:
                raise UserError(f"task {task_id!r} already ended {row.status}")
            conn.execute(
                sa.update(tasks)
                .where(tasks.c.id == task_id)
                .values(
                    status="cancelled",
                    lease_epoch=tasks.c.lease_epoch + 1,  # fences out a running worker
                    lease_owner=None,
                    lease_expires=None,
                    reason=reason,
                    finished_at=now,
                    updated_at=now,
                )
            )
            conn.execute(
                sa.update(runs)
                .where(runs.c.task_id == task_id, runs.c.status == "running")
                .values(status="cancelled", ended_at=now, reason=reason)
            )
            write_decision(conn, row, decision="cancelled", reason=reason, now=now)
        record = self.get(task_id)
        assert record is not None
        return record

    @patient
    def retry(self, task_id: str, *, instructions: str | None = None) -> TaskRecord:
        now = self.clock()
        with self._db.write() as conn:
            row = self._locked(conn, task_id)
            if row.status not in ("failed", "escalated", "cancelled"):
                raise UserError(
                    f"task {task_id!r} is {row.status}; only failed, escalated or cancelled "
                    "tasks can be retried"
                )
            extra = "\n\n".join(x for x in (row.instructions, instructions) if x) or None
            conn.execute(
                sa.update(tasks)
                .where(tasks.c.id == task_id)
                .values(
                    status="pending",
                    generation=tasks.c.generation + 1,
                    attempts=0,
                    instructions=extra,
                    reason="retried",
                    finished_at=None,
                    not_before=None,
                    updated_at=now,
                )
            )
            conn.execute(
                sa.update(escalations)
                .where(escalations.c.task_id == task_id, escalations.c.status == "open")
                .values(status="requeued", note="retried", resolved_at=now)
            )
        record = self.get(task_id)
        assert record is not None
        return record

    def _locked(self, conn: Connection, task_id: str) -> Any:
        query = sa.select(tasks).where(tasks.c.id == task_id)
        if not self._db.is_sqlite:
            query = query.with_for_update()
        row = conn.execute(query).first()
        if row is None:
            raise UserError(f"no task {task_id!r}")
        return row


def _conforms(store: SqlStore) -> TaskStore:
    return store  # mypy checks here that SqlStore implements the protocol


def _browses(store: SqlStore) -> BrowseStore:
    return store  # and here that it serves the review UI
