"""Leases: claiming (any runnable task, or one named task), heartbeats, release, reaping.

A claim is one write transaction: pick a runnable row (pending, or running under an expired
lease), bump its lease epoch, open a run row. On SQLite the transaction starts with ``BEGIN
IMMEDIATE``, so two claimers never read the same candidate; on PostgreSQL candidates are
selected ``FOR UPDATE SKIP LOCKED``, so concurrent claimers take different rows. The bumped epoch
is the fencing token every later write is checked against (`donegate.store._journal.fence`).
Pending tasks are found through two partial indexes (r0006_claim_index), so tasks waiting out a
backoff cost a claim nothing however many there are: see `_candidate`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from donegate.codec import dumps, loads
from donegate.errors import UserError
from donegate.records.report import EscalationReport
from donegate.records.status import TaskStatus
from donegate.store._db import Database, patient
from donegate.store._hot import HotRead, HotWrite
from donegate.store._journal import fence, stop_row
from donegate.store._outbox import write_notices
from donegate.store._schema import BACKOFF, READY, escalations, runs, tasks
from donegate.store.base import Lease, RunOutcome

__all__ = ["LeaseMixin"]

_B = sa.bindparam
_NOW: sa.BindParameter[float] = _B("b_now")
_EXPIRED = sa.and_(tasks.c.status == "running", tasks.c.lease_expires < _NOW)
_PENDING = sa.and_(
    tasks.c.status == "pending", sa.or_(tasks.c.not_before.is_(None), tasks.c.not_before <= _NOW)
)
# Pending tasks are read through partial indexes (r0006_claim_index): the oldest ready one is the
# first entry of ix_tasks_ready; backed-off ones whose time has come are first moved into it
# (read through ix_tasks_backoff), so a claim never walks the tasks still waiting out a backoff.
# SQLite is told which index (``INDEXED BY``: an error, not a scan, if it cannot be used): with
# no statistics it would walk ix_tasks_status_created through the backed-off rows instead. The
# two texts say what the Core statements beside them say, which PostgreSQL plans by itself.
_READY_SQLITE = sa.text(
    f"SELECT * FROM tasks INDEXED BY ix_tasks_ready WHERE {READY} ORDER BY created_at LIMIT 1"
)
_WAKE_SQLITE = sa.text(
    "UPDATE tasks SET not_before = NULL WHERE id IN (SELECT id FROM tasks INDEXED BY "
    f"ix_tasks_backoff WHERE {BACKOFF} AND not_before <= :b_now)"
)
# SQLite's claim (the embedded worker's hot path) runs them on the driver's cursor, as
# `HotWrite` runs writes: through `Connection.execute` they cost ~3x SQLite's own time.
_WAKE_HOT = HotWrite(_WAKE_SQLITE)
_OLDEST: list[HotRead] = [
    HotRead(sa.select(tasks).where(_EXPIRED).order_by(tasks.c.created_at).limit(1)),
    HotRead(_READY_SQLITE),
]
_OLDEST_SKIP: list[sa.Executable] = [
    sa.select(tasks)
    .where(w)
    .order_by(tasks.c.created_at)
    .limit(1)
    .with_for_update(skip_locked=True)
    for w in (_EXPIRED, READY)
]
_WAKE_SKIP = (
    sa.update(tasks)
    .where(
        tasks.c.id.in_(
            sa.select(tasks.c.id)
            .where(BACKOFF, tasks.c.not_before <= _NOW)
            .with_for_update(skip_locked=True)
        )
    )
    .values(not_before=None)
)
_NAMED = sa.select(tasks).where(tasks.c.id == _B("b_task"), sa.or_(_EXPIRED, _PENDING))
_NAMED_SKIP = _NAMED.with_for_update(skip_locked=True)
_LOSE_RUNS = (
    sa.update(runs)
    .where(runs.c.task_id == _B("b_task"), runs.c.status == "running")
    .values(status="lost", ended_at=_NOW, reason="lease expired")
)
_TAKE = HotWrite(
    sa.update(tasks)
    .where(tasks.c.id == _B("b_task"))
    .values(
        status="running",
        lease_owner=_B("b_owner"),
        lease_epoch=_B("b_epoch"),
        lease_expires=_B("b_expires"),
        heartbeat_at=_NOW,
        attempts=_B("b_attempt"),
        not_before=None,
        updated_at=_NOW,
    )
)
_ADD_RUN = HotWrite(sa.insert(runs))
_BEAT = (
    sa.update(tasks)
    .where(
        tasks.c.id == _B("b_task"),
        tasks.c.lease_epoch == _B("b_epoch"),
        tasks.c.status == "running",
    )
    .values(lease_expires=_B("b_expires"), heartbeat_at=_NOW)
)


class LeaseMixin:
    """The lease half of `SqlStore`."""

    _db: Database
    clock: Callable[[], float]

    @patient
    def claim(self, worker_id: str, lease_s: float) -> Lease | None:
        _check_lease(lease_s)
        while True:
            now = self.clock()
            with self._db.write() as conn:
                row = self._candidate(conn, now)
                if row is None:
                    return None
                lease = self._take(conn, row, worker_id, lease_s, now)
                if lease is not None:
                    return lease

    @patient
    def claim_task(self, task_id: str, worker_id: str, lease_s: float) -> Lease | None:
        """Lease one named task if it is runnable now; None when it is leased elsewhere or ended.

        This is how a broker message is honoured: the message says which task, the store says
        whether this worker may run it.
        """
        _check_lease(lease_s)
        now = self.clock()
        with self._db.write() as conn:
            query = _NAMED if self._db.is_sqlite else _NAMED_SKIP
            row = conn.execute(query, {"b_task": task_id, "b_now": now}).first()
            if row is None:
                return None
            return self._take(conn, row, worker_id, lease_s, now)

    def _candidate(self, conn: Connection, now: float) -> Any:
        # Backed-off tasks whose time has come become ready (each is moved once); the ready
        # set is then exactly the pending tasks that may run now, oldest first as before.
        params = {"b_now": now}
        if self._db.is_sqlite:
            _WAKE_HOT(conn, params)
            return next((r for q in _OLDEST if (r := q.first(conn, params)) is not None), None)
        conn.execute(_WAKE_SKIP, params)
        for query in _OLDEST_SKIP:
            row = conn.execute(query, params).first()
            if row is not None:
                return row
        return None

    def _take(
        self, conn: Connection, row: Any, worker_id: str, lease_s: float, now: float
    ) -> Lease | None:
        if row.status == "running":  # its worker died or stalled: that run is lost
            conn.execute(_LOSE_RUNS, {"b_task": row.id, "b_now": now})
        if row.attempts >= row.max_attempts:
            _give_up(conn, row, now)
            return None
        epoch = row.lease_epoch + 1
        attempt = row.attempts + 1
        _TAKE(
            conn,
            {
                "b_task": row.id,
                "b_owner": worker_id,
                "b_epoch": epoch,
                "b_expires": now + lease_s,
                "b_attempt": attempt,
                "b_now": now,
            },
        )
        run_id = _ADD_RUN.insert(
            conn,
            {
                "task_id": row.id,
                "attempt": attempt,
                "generation": row.generation,
                "epoch": epoch,
                "worker_id": worker_id,
                "started_at": now,
                "status": "running",
            },
        )
        return Lease(
            task_id=row.id,
            epoch=epoch,
            worker_id=worker_id,
            run_id=run_id,
            attempt=attempt,
            generation=row.generation,
            spec=loads(row.spec),
            instructions=row.instructions,
            expires=now + lease_s,
        )

    @patient
    def heartbeat(self, leases: Sequence[Lease], lease_s: float) -> set[str]:
        _check_lease(lease_s)
        lost: set[str] = set()
        if not leases:
            return lost
        now = self.clock()
        with self._db.write() as conn:
            for lease in leases:
                touched = conn.execute(
                    _BEAT,
                    {
                        "b_task": lease.task_id,
                        "b_epoch": lease.epoch,
                        "b_expires": now + lease_s,
                        "b_now": now,
                    },
                )
                if touched.rowcount != 1:
                    lost.add(lease.task_id)
        return lost

    @patient
    def release(
        self,
        lease: Lease,
        reason: str,
        *,
        delay_s: float = 0.0,
        charge: bool = True,
        notify: Mapping[str, Any] | None = None,
    ) -> None:
        if not (math.isfinite(delay_s) and delay_s >= 0):
            raise UserError(f"a release delay must be a finite number >= 0, got {delay_s!r}")
        now = self.clock()
        with self._db.write() as conn:
            fence(conn, lease, now)
            row = conn.execute(sa.select(tasks).where(tasks.c.id == lease.task_id)).one()
            spent = charge and row.attempts >= row.max_attempts
            conn.execute(
                sa.update(tasks)
                .where(tasks.c.id == lease.task_id)
                .values(
                    status="failed" if spent else "pending",
                    lease_owner=None,
                    lease_expires=None,
                    not_before=None if spent else now + delay_s,
                    finished_at=now if spent else None,
                    attempts=row.attempts if charge else max(0, row.attempts - 1),
                    reason=reason,
                    updated_at=now,
                )
            )
            conn.execute(
                sa.update(runs)
                .where(runs.c.id == lease.run_id)
                .values(status="error", ended_at=now, reason=reason)
            )
            if spent:
                outcome = RunOutcome(status=TaskStatus.FAILED, reason=reason, notify=notify)
                write_notices(conn, lease, outcome, now)  # the task ended: with its outcome
                stop_row(
                    conn,
                    task_id=lease.task_id,
                    run_id=lease.run_id,
                    task_type=row.type,
                    outcome=outcome,
                    now=now,
                )

    @patient
    def waiting(self, worker_id: str) -> list[str]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(tasks.c.id)
                .where(
                    sa.or_(
                        tasks.c.status == "pending",
                        sa.and_(tasks.c.status == "running", tasks.c.lease_owner == worker_id),
                    )
                )
                .order_by(tasks.c.created_at)
                .limit(100)
            ).all()
        return [r.id for r in rows]

    @patient
    def reap(self, *, pending_stale_s: float) -> list[str]:
        """Tasks that need a new broker message: expired leases, and pending tasks left alone.

        Expired leases go back to pending (their run marked lost, the epoch bumped) and pending
        tasks untouched for `pending_stale_s` are touched, in one transaction, so concurrent
        reapers never return the same task twice in a row.
        """
        now = self.clock()
        with self._db.write() as conn:
            query = sa.select(tasks.c.id).where(_expired(now)).limit(500)
            stale = sa.select(tasks.c.id).where(
                _pending(now), tasks.c.updated_at < now - pending_stale_s
            )
            if not self._db.is_sqlite:
                query = query.with_for_update(skip_locked=True)
                stale = stale.with_for_update(skip_locked=True)
            expired_ids = [r.id for r in conn.execute(query).all()]
            stale_ids = [r.id for r in conn.execute(stale.limit(500)).all()]
            if expired_ids:
                conn.execute(
                    sa.update(runs)
                    .where(runs.c.task_id.in_(expired_ids), runs.c.status == "running")
                    .values(status="lost", ended_at=now, reason="lease expired")
                )
                conn.execute(
                    sa.update(tasks)
                    .where(tasks.c.id.in_(expired_ids))
                    .values(
                        status="pending",
                        lease_epoch=tasks.c.lease_epoch + 1,
                        lease_owner=None,
                        lease_expires=None,
                        updated_at=now,
                    )
                )
            if stale_ids:
                conn.execute(
                    sa.update(tasks).where(tasks.c.id.in_(stale_ids)).values(updated_at=now)
                )
        return expired_ids + stale_ids


def _check_lease(lease_s: float) -> None:
    """A lease must end: NaN, infinite or non-positive seconds would strand its task."""
    if isinstance(lease_s, bool) or not (
        isinstance(lease_s, int | float) and math.isfinite(lease_s) and lease_s > 0
    ):
        raise UserError(f"a lease must be a finite number of seconds > 0, got {lease_s!r}")


def _expired(now: float) -> sa.ColumnElement[bool]:
    return sa.and_(tasks.c.status == "running", tasks.c.lease_expires < now)


def _pending(now: float) -> sa.ColumnElement[bool]:
    return sa.and_(
        tasks.c.status == "pending",
        sa.or_(tasks.c.not_before.is_(None), tasks.c.not_before <= now),
    )


def _give_up(conn: Connection, row: Any, now: float) -> None:
    reason = f"its workers were lost {row.attempts} times (max_attempts={row.max_attempts})"
    outcome = RunOutcome(
        status=TaskStatus.ESCALATED,
        reason=reason,
        report=EscalationReport(task_id=row.id, reason=reason, attempts=row.attempts),
        report_md=f"# {row.id}: escalated\n\n{reason}; a person should look at it.\n",
    )
    conn.execute(
        sa.update(tasks)
        .where(tasks.c.id == row.id)
        .values(
            status="escalated",
            lease_epoch=row.lease_epoch + 1,
            lease_owner=None,
            lease_expires=None,
            reason=reason,
            finished_at=now,
            updated_at=now,
        )
    )
    conn.execute(
        sa.insert(escalations).values(
            task_id=row.id,
            status="open",
            reason=reason,
            report=dumps(outcome.report.as_data() if outcome.report is not None else {}),
            report_md=outcome.report_md,
            created_at=now,
        )
    )
    stop_row(conn, task_id=row.id, run_id=None, task_type=row.type, outcome=outcome, now=now)
