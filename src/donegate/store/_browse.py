"""Reads for people browsing the store (``donegate serve``), and the actions they take.

Every list here is a page: a bounded ``LIMIT`` over an index, walked with a keyset cursor (the
last row's sort key) rather than an ``OFFSET``, so the thousandth page costs what the first does.
The queue rows are projections: an escalation's report holds its whole transcript, too much to
decode fifty times for a list, so the queue reads the columns it shows and joins the run for the
continuations it spent. `record_action` keeps who did what from the UI and when (``actions``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from donegate.codec import loads, message_from_json, turn_from_json
from donegate.messages import Message, Turn
from donegate.records.status import EscalationStatus
from donegate.store._db import Database
from donegate.store._rows import STOP_COLUMNS, run_record, stop_rows
from donegate.store._schema import actions, escalations, events, tasks
from donegate.store._schema import messages as messages_t
from donegate.store._schema import runs as runs_t
from donegate.store._schema import turns as turns_t
from donegate.store.base import (
    QueueRow,
    ReviewAction,
    RunJournal,
    StopRow,
    TaskPage,
    TaskRecord,
)

__all__ = ["MAX_PAGE", "BrowseMixin"]

MAX_PAGE = 200
"""The most rows one page may ask for."""


def _bounded(limit: int) -> int:
    return max(1, min(int(limit), MAX_PAGE))


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped.lower()}%"


def _task(row: Any) -> TaskRecord:
    from donegate.store.sql import _record  # the one row -> TaskRecord mapping

    return _record(row)


def _action(r: Any) -> ReviewAction:
    return ReviewAction(
        id=r.id,
        at=r.at,
        actor=r.actor,
        action=r.action,
        task_id=r.task_id,
        escalation_id=r.escalation_id,
        detail=r.detail,
    )


class BrowseMixin:
    """The browsing half of `SqlStore`."""

    _db: Database
    clock: Callable[[], float]

    def task_page(
        self,
        *,
        status: str | None = None,
        type: str | None = None,
        text: str | None = None,
        after: tuple[float, str] | None = None,
        limit: int = 50,
    ) -> TaskPage:
        size = _bounded(limit)
        query = sa.select(tasks).order_by(tasks.c.created_at.desc(), tasks.c.id.desc())
        if status:
            query = query.where(tasks.c.status == status)
        if type:
            query = query.where(tasks.c.type == type)
        if text:
            pattern = _like(text)
            query = query.where(
                sa.or_(
                    sa.func.lower(tasks.c.id).like(pattern, escape="\\"),
                    sa.func.lower(tasks.c.reason).like(pattern, escape="\\"),
                )
            )
        if after is not None:
            at, last = after
            query = query.where(
                sa.or_(
                    tasks.c.created_at < at,
                    sa.and_(tasks.c.created_at == at, tasks.c.id < last),
                )
            )
        with self._db.read() as conn:
            rows = conn.execute(query.limit(size + 1)).all()
        records = [_task(r) for r in rows[:size]]
        more = len(rows) > size
        return TaskPage(
            tasks=records,
            next=(records[-1].created_at, records[-1].id) if more else None,
        )

    def task_types(self) -> list[str]:
        query = sa.select(tasks.c.type).where(tasks.c.type.is_not(None)).distinct()
        with self._db.read() as conn:
            return sorted(str(t) for t in conn.execute(query).scalars())

    def queue_page(
        self, *, status: str | None = "open", after: int | None = None, limit: int = 50
    ) -> list[QueueRow]:
        query = (
            sa.select(
                escalations.c.id,
                escalations.c.task_id,
                escalations.c.status,
                escalations.c.reason,
                escalations.c.created_at,
                escalations.c.kind,
                tasks.c.type,
                runs_t.c.continuations,
                runs_t.c.model_calls,
            )
            .select_from(
                escalations.outerjoin(tasks, tasks.c.id == escalations.c.task_id).outerjoin(
                    runs_t, runs_t.c.id == escalations.c.run_id
                )
            )
            .order_by(escalations.c.id)
            .limit(_bounded(limit))
        )
        if status is not None:
            query = query.where(escalations.c.status == status)
        if after is not None:
            query = query.where(escalations.c.id > after)
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return [
            QueueRow(
                id=r.id,
                task_id=r.task_id,
                task_type=r.type,
                kind=str(r.kind),
                status=EscalationStatus(r.status),
                reason=r.reason,
                created_at=r.created_at,
                continuations=r.continuations,
                model_calls=r.model_calls,
            )
            for r in rows
        ]

    def queue_count(self, *, status: str = "open") -> int:
        query = sa.select(sa.func.count()).where(escalations.c.status == status)
        with self._db.read() as conn:
            return int(conn.execute(query).scalar() or 0)

    def task_escalations(self, task_id: str) -> list[int]:
        query = (
            sa.select(escalations.c.id)
            .where(escalations.c.task_id == task_id)
            .order_by(escalations.c.id)
        )
        with self._db.read() as conn:
            return [int(i) for i in conn.execute(query).scalars()]

    def journals(self, task_id: str) -> list[RunJournal]:
        with self._db.read() as conn:
            run_rows = conn.execute(
                sa.select(runs_t).where(runs_t.c.task_id == task_id).order_by(runs_t.c.id)
            ).all()
            turn_rows = conn.execute(
                sa.select(turns_t.c.run_id, turns_t.c.step, turns_t.c.turn)
                .where(turns_t.c.task_id == task_id)
                .order_by(turns_t.c.generation, turns_t.c.step)
            ).all()
            message_rows = conn.execute(
                sa.select(messages_t.c.run_id, messages_t.c.step, messages_t.c.data)
                .where(messages_t.c.task_id == task_id)
                .order_by(messages_t.c.run_id, messages_t.c.seq)
            ).all()
        turns_by_run: dict[int, dict[int, Turn]] = {}
        for t in turn_rows:
            turns_by_run.setdefault(t.run_id, {})[t.step] = turn_from_json(loads(t.turn))
        messages_by_run: dict[int, list[tuple[int, Message]]] = {}
        for m in message_rows:
            messages_by_run.setdefault(m.run_id, []).append(
                (m.step, message_from_json(loads(m.data)))
            )
        return [
            RunJournal(
                run=run_record(r),
                generation=r.generation,
                ending=r.ending,
                turns=turns_by_run.get(r.id, {}),
                messages=messages_by_run.get(r.id, []),
            )
            for r in run_rows
        ]

    def stop_rows_of(self, *, since: float, task_type: str | None = None) -> list[StopRow]:
        query = STOP_COLUMNS.where(events.c.at >= since).order_by(events.c.at)
        if task_type is not None:
            query = query.where(events.c.task_type == task_type)
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return stop_rows(rows)

    def stop_types(self) -> list[str]:
        query = sa.select(events.c.task_type).where(events.c.task_type.is_not(None)).distinct()
        with self._db.read() as conn:
            return sorted(str(t) for t in conn.execute(query).scalars())

    def record_action(
        self,
        *,
        actor: str,
        action: str,
        task_id: str,
        escalation_id: int | None = None,
        detail: str | None = None,
    ) -> ReviewAction:
        now = self.clock()
        with self._db.write() as conn:
            inserted = conn.execute(
                sa.insert(actions).values(
                    at=now,
                    actor=actor,
                    action=action,
                    task_id=task_id,
                    escalation_id=escalation_id,
                    detail=detail,
                )
            )
            key = inserted.inserted_primary_key
        assert key is not None
        return ReviewAction(
            id=int(key[0]),
            at=now,
            actor=actor,
            action=action,
            task_id=task_id,
            escalation_id=escalation_id,
            detail=detail,
        )

    def actions(self, *, task_id: str, limit: int = 50) -> list[ReviewAction]:
        query = (
            sa.select(actions)
            .where(actions.c.task_id == task_id)
            .order_by(actions.c.at.desc(), actions.c.id.desc())
            .limit(_bounded(limit))
        )
        with self._db.read() as conn:
            return [_action(r) for r in conn.execute(query).all()]
