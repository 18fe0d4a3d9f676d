"""The outbox: final-outcome notifications, written with the outcome and delivered later.

`write_notices` runs inside `finish`'s transaction, so a task's outcome and its notifications
commit together or not at all: a worker killed after the commit leaves pending rows another
worker (or the same one restarted) delivers; a worker killed before it leaves neither. Delivery
is at least once, and every attempt at one row carries the same idempotency key, so a receiver
that dedupes on it acts once.

A deliverer takes a row by bumping its attempt count under compare-and-set (`outbox_take`), so
two workers polling one store do not both send the same attempt.

A person's decision ends a task too: `write_decision` writes its notice (approved, rejected,
cancelled) in the transaction that records it, under a key of its own, ``<task>:<decision>``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from donegate.codec import dumps, loads
from donegate.errors import UserError
from donegate.records.certificate import read_certificate
from donegate.records.status import OutboxStatus
from donegate.store._db import Database, patient
from donegate.store._schema import outbox
from donegate.store.base import Lease, RunOutcome

__all__ = [
    "Notification",
    "OutboxMixin",
    "OutboxStore",
    "certificate_json",
    "write_decision",
    "write_notices",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Notification:
    """One outbox row: where a task's final outcome goes, and how its delivery stands."""

    id: int
    task_id: str
    generation: int
    key: str
    """The idempotency key every attempt carries."""
    target: dict[str, Any]
    """``{"webhook": {...}}`` or ``{"command": [...]}``, as the spec or the worker named it."""
    body: dict[str, Any]
    """The JSON delivered."""
    state: OutboxStatus
    attempts: int
    max_attempts: int
    next_at: float
    last_error: str | None
    created_at: float
    delivered_at: float | None

    def public(self) -> dict[str, Any]:
        """The delivery state as JSON (CLI, API), without the body."""
        kind = "webhook" if "webhook" in self.target else "command"
        where = self.target["webhook"]["url"] if kind == "webhook" else self.target["command"][0]
        return {
            "id": self.id,
            "key": self.key,
            "kind": kind,
            "target": where,
            "state": self.state,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "last_error": self.last_error,
            "delivered_at": self.delivered_at,
        }


def _row(row: Any) -> Notification:
    return Notification(
        id=row.id,
        task_id=row.task_id,
        generation=row.generation,
        key=row.key,
        target=loads(row.target),
        body=loads(row.body),
        state=OutboxStatus(row.state),
        attempts=row.attempts,
        max_attempts=row.max_attempts,
        next_at=row.next_at,
        last_error=row.last_error,
        created_at=row.created_at,
        delivered_at=row.delivered_at,
    )


def write_notices(conn: Connection, lease: Lease, outcome: RunOutcome, now: float) -> None:
    """Insert the outcome's notifications (one per target) inside the caller's transaction."""
    if outcome.notify:
        _insert(conn, lease.task_id, lease.generation, outcome.notify, now)


def write_decision(
    conn: Connection,
    task: Any,
    *,
    decision: Literal["approved", "rejected", "cancelled"],
    reason: str,
    now: float,
    certificate: str | None = None,
) -> None:
    """Notify the task spec's targets of a person's decision, inside the caller's transaction.

    `task` is its row as read in that transaction. The key, ``<task>:<decision>`` (after a
    requeue ``<task>~<generation>:<decision>``), differs from the run's ``:final`` one: an
    approved review was notified ``awaiting_review`` before. Only the spec's own ``notify:``
    targets are known here (a worker's ``--notify-*`` ones are that worker's); the body has
    the approved certificate when there is one.
    """
    spec = loads(task.spec) or {}
    targets = [t for t in spec.get("notify") or [] if isinstance(t, dict)]
    if not targets:
        return
    base = task.id if task.generation == 0 else f"{task.id}~{task.generation}"
    key = f"{base}:{decision}"
    status = {"approved": "done", "rejected": "failed", "cancelled": "cancelled"}[decision]
    body: dict[str, Any] = {
        "task_id": task.id,
        "status": status,
        "decision": decision,
        "reason": reason,
        "idempotency_key": key,
    }
    if decision == "approved":
        body["certificate"] = certificate_json(certificate)
    _insert(conn, task.id, task.generation, {"key": key, "body": body, "targets": targets}, now)


def certificate_json(path: object) -> Any:
    """The signed certificate the harness wrote at `path` (its JSON as written, which the
    signature covers; bounded), or None when there is none."""
    if not isinstance(path, str):
        return None
    try:
        return read_certificate(path)
    except UserError:
        return None


def _insert(
    conn: Connection, task_id: str, generation: int, notice: Mapping[str, Any], now: float
) -> None:
    if not notice.get("targets"):
        return
    conn.execute(
        sa.insert(outbox),
        [
            {
                "task_id": task_id,
                "generation": generation,
                "target_no": i,
                "key": notice["key"],
                "target": dumps(target),
                "body": dumps(notice["body"]),
                "state": "pending",
                "attempts": 0,
                "max_attempts": int(notice.get("max_attempts", 8)),
                "next_at": now,
                "created_at": now,
            }
            for i, target in enumerate(notice["targets"])
        ],
    )


@runtime_checkable
class OutboxStore(Protocol):
    """What a deliverer, the CLI and the API need of a store's outbox."""

    def outbox(
        self, *, task_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[Notification]: ...

    def outbox_due(self, now: float, limit: int = 20) -> list[Notification]: ...

    def outbox_take(self, n: Notification, until: float) -> bool: ...

    def outbox_result(
        self, n: Notification, *, error: str | None, retry_at: float | None
    ) -> None: ...

    def outbox_retry(self, notification_id: int) -> Notification: ...


class OutboxMixin:
    """`OutboxStore` on the SQL store."""

    _db: Database
    clock: Callable[[], float]

    @patient
    def outbox(
        self, *, task_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[Notification]:
        q = sa.select(outbox).order_by(outbox.c.id.desc()).limit(max(1, min(limit, 1000)))
        if task_id is not None:
            q = q.where(outbox.c.task_id == task_id)
        if state is not None:
            q = q.where(outbox.c.state == state)
        with self._db.read() as conn:
            return [_row(r) for r in conn.execute(q)]

    @patient
    def outbox_due(self, now: float, limit: int = 20) -> list[Notification]:
        with self._db.read() as conn:
            return [_row(r) for r in conn.execute(_due(limit), {"b_now": now})]

    @patient
    def outbox_take(self, n: Notification, until: float) -> bool:
        """Count one attempt at `n` and hold it until `until`; False when another took it."""
        with self._db.write() as conn:
            taken = conn.execute(
                sa.update(outbox)
                .where(
                    outbox.c.id == n.id,
                    outbox.c.state == "pending",
                    outbox.c.attempts == n.attempts,
                )
                .values(attempts=outbox.c.attempts + 1, next_at=until)
            )
            return taken.rowcount == 1

    @patient
    def outbox_result(self, n: Notification, *, error: str | None, retry_at: float | None) -> None:
        """Record an attempt: delivered (no error), pending again at `retry_at`, or failed."""
        now = self.clock()
        values: dict[str, Any]
        if error is None:
            values = {"state": "delivered", "delivered_at": now, "last_error": None}
        elif retry_at is not None:
            values = {"state": "pending", "next_at": retry_at, "last_error": error[:2000]}
        else:
            values = {"state": "failed", "last_error": error[:2000]}
        with self._db.write() as conn:
            conn.execute(sa.update(outbox).where(outbox.c.id == n.id).values(**values))

    @patient
    def outbox_retry(self, notification_id: int) -> Notification:
        """Send a notification again (delivered or failed): pending now, attempts from zero."""
        now = self.clock()
        with self._db.write() as conn:
            done = conn.execute(
                sa.update(outbox)
                .where(outbox.c.id == notification_id)
                .values(state="pending", attempts=0, next_at=now)
            )
            if done.rowcount != 1:
                raise UserError(f"no notification {notification_id} in the outbox")
            row = conn.execute(sa.select(outbox).where(outbox.c.id == notification_id)).one()
        return _row(row)


@functools.lru_cache(maxsize=8)
def _due(limit: int) -> sa.Select[Any]:
    """What `outbox_due` reads, built once per limit (each courier polls it twice a second)."""
    return (
        sa.select(outbox)
        .where(outbox.c.state == "pending", outbox.c.next_at <= sa.bindparam("b_now"))
        .order_by(outbox.c.next_at, outbox.c.id)
        .limit(limit)
    )
