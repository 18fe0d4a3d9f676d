"""The human queue (escalations and reviews) and the telemetry reads (stop rows, counts).

An escalation is a stuck task; a review is a ``closure: human`` task whose claim passed every
gate and waits, ``awaiting_review``, for a person: `approve` makes it ``done``, `resolve`
without requeue rejects it (``failed``), `resolve --requeue` runs it again with instructions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa

from donegate.codec import dumps, loads
from donegate.errors import UserError
from donegate.records.report import EscalationReport
from donegate.records.status import EscalationStatus
from donegate.spend import grant
from donegate.store._db import Database, patient
from donegate.store._outbox import write_decision
from donegate.store._rows import STOP_COLUMNS, stop_rows
from donegate.store._schema import escalations, events, tasks
from donegate.store.base import Escalation, StopRow

__all__ = ["ReviewMixin"]


def _escalation(row: Any) -> Escalation:
    return Escalation(
        id=row.id,
        task_id=row.task_id,
        status=EscalationStatus(row.status),
        reason=row.reason,
        report=EscalationReport.from_data(loads(row.report)),
        report_md=row.report_md,
        created_at=row.created_at,
        resolved_at=row.resolved_at,
        note=row.note,
        instructions=row.instructions,
        kind=row.kind,
        resolved_by=row.resolved_by,
    )


class ReviewMixin:
    """The people-facing half of `SqlStore`."""

    _db: Database
    clock: Callable[[], float]

    @patient
    def escalations(self, *, status: str | None = "open") -> list[Escalation]:
        query = sa.select(escalations).order_by(escalations.c.id)
        if status is not None:
            query = query.where(escalations.c.status == status)
        with self._db.read() as conn:
            return [_escalation(r) for r in conn.execute(query).all()]

    @patient
    def escalation(self, escalation_id: int) -> Escalation | None:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(escalations).where(escalations.c.id == escalation_id)
            ).first()
        return None if row is None else _escalation(row)

    @patient
    def resolve(
        self,
        escalation_id: int,
        *,
        note: str | None = None,
        requeue: bool = False,
        instructions: str | None = None,
        budget_extra: Mapping[str, float] | None = None,
        by: str | None = None,
    ) -> Escalation:
        if instructions and not requeue:
            raise UserError("--instructions only go with --requeue")
        if budget_extra and not requeue:
            raise UserError("--budget-extra only goes with --requeue")
        now = self.clock()
        with self._db.write() as conn:
            row = conn.execute(
                sa.select(escalations).where(escalations.c.id == escalation_id)
            ).first()
            if row is None:
                raise UserError(f"no escalation {escalation_id}")
            if row.status != "open":
                raise UserError(f"escalation {escalation_id} is already {row.status}")
            if row.kind == "review" and not requeue:  # a review closed unapproved: rejected
                reason = f"rejected in review {escalation_id}" + (f": {note}" if note else "")
                rejected = conn.execute(
                    sa.update(tasks)
                    .where(tasks.c.id == row.task_id, tasks.c.status == "awaiting_review")
                    .values(status="failed", reason=reason, updated_at=now)
                )
                if rejected.rowcount == 1:
                    task = conn.execute(sa.select(tasks).where(tasks.c.id == row.task_id)).one()
                    write_decision(conn, task, decision="rejected", reason=reason, now=now)
            conn.execute(
                sa.update(escalations)
                .where(escalations.c.id == escalation_id)
                .values(
                    status="requeued" if requeue else "resolved",
                    note=note,
                    instructions=instructions,
                    resolved_at=now,
                    resolved_by=by,
                )
            )
            if requeue:
                task = conn.execute(sa.select(tasks).where(tasks.c.id == row.task_id)).one()
                if task.status not in ("escalated", "awaiting_review"):
                    raise UserError(f"task {row.task_id} is {task.status}, not escalated")
                extra = "\n\n".join(x for x in (task.instructions, instructions) if x) or None
                spec = task.spec
                if budget_extra:  # the spend so far carries over; the limit grows
                    spec = dumps(grant(loads(task.spec), budget_extra))
                conn.execute(
                    sa.update(tasks)
                    .where(tasks.c.id == row.task_id)
                    .values(
                        spec=spec,
                        status="pending",
                        generation=tasks.c.generation + 1,
                        attempts=0,
                        instructions=extra,
                        reason=f"requeued from escalation {escalation_id}",
                        finished_at=None,
                        not_before=None,
                        updated_at=now,
                    )
                )
            updated = conn.execute(
                sa.select(escalations).where(escalations.c.id == escalation_id)
            ).one()
        return _escalation(updated)

    @patient
    def approve(
        self,
        escalation_id: int,
        *,
        by: str,
        note: str | None = None,
        certificate: str | None = None,
        channel: str | None = None,
        os_user: str | None = None,
    ) -> Escalation:
        now = self.clock()
        with self._db.write() as conn:
            row = conn.execute(
                sa.select(escalations).where(escalations.c.id == escalation_id)
            ).first()
            if row is None:
                raise UserError(f"no escalation {escalation_id}")
            if row.kind != "review":
                raise UserError(
                    f"escalation {escalation_id} is not a review: resolve or requeue it instead"
                )
            if row.status != "open":
                raise UserError(f"review {escalation_id} is already {row.status}")
            task = conn.execute(sa.select(tasks).where(tasks.c.id == row.task_id)).one()
            if task.status != "awaiting_review":
                raise UserError(f"task {row.task_id} is {task.status}, not awaiting review")
            result = loads(task.result) or {}
            approval: dict[str, Any] = {"by": by, "at": now, "note": note, "review": escalation_id}
            if channel is not None:
                approval["channel"] = channel
            if os_user is not None:
                approval["os_user"] = os_user
            result = {**result, "status": "done", "approved": approval}
            if certificate is not None:
                result["certificate"] = certificate
            conn.execute(
                sa.update(escalations)
                .where(escalations.c.id == escalation_id)
                .values(status="approved", note=note, resolved_by=by, resolved_at=now)
            )
            reason = f"approved by {by} in review {escalation_id}"
            conn.execute(
                sa.update(tasks)
                .where(tasks.c.id == row.task_id)
                .values(
                    status="done",
                    reason=reason,
                    result=dumps(result),
                    finished_at=now,
                    updated_at=now,
                )
            )
            write_decision(
                conn,
                task,
                decision="approved",
                reason=reason,
                now=now,
                certificate=result.get("certificate"),
            )
            updated = conn.execute(
                sa.select(escalations).where(escalations.c.id == escalation_id)
            ).one()
        return _escalation(updated)

    @patient
    def stop_rows(self, *, since: float) -> list[StopRow]:
        with self._db.read() as conn:
            rows = conn.execute(
                STOP_COLUMNS.where(events.c.at >= since).order_by(events.c.at)
            ).all()
        return stop_rows(rows)

    @patient
    def counts(self) -> dict[str, int]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(tasks.c.status, sa.func.count()).group_by(tasks.c.status)
            ).all()
        return {str(status): int(n) for status, n in rows}
