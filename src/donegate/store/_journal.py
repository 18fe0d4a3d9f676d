"""The run journal: turns, transcript, evidence, checklist, and a run's end.

Every write here is fenced: it first touches the task row under the writer's lease epoch, inside
the same transaction, and raises `LeaseLost` if that epoch is no longer current. On PostgreSQL
the touch also row-locks the task, so a concurrent claim waits or skips it until the write has
committed; on SQLite the write lock does the same. The effects ledger, fenced alike and riding
on these rows, is `donegate.store._effects`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from donegate.codec import (
    call_from_json,
    dumps,
    loads,
    message_from_json,
    message_to_json,
    part_to_json,
    result_from_json,
    turn_from_json,
    turn_to_json,
)
from donegate.messages import Message, Turn
from donegate.records.status import TaskStatus
from donegate.results import ToolCallRecord
from donegate.store._db import Database, patient
from donegate.store._hot import HotRead, HotWrite
from donegate.store._outbox import write_notices
from donegate.store._rows import run_record
from donegate.store._schema import baselines, checklists, escalations, events
from donegate.store._schema import evidence as evidence_t
from donegate.store._schema import messages as messages_t
from donegate.store._schema import runs as runs_t
from donegate.store._schema import tasks as tasks_t
from donegate.store._schema import turns as turns_t
from donegate.store.base import JournalWrite, Lease, LeaseLost, RunOutcome, RunRecord

__all__ = ["JournalMixin", "encode_rows", "fence", "insert_rows", "put_checklist", "stop_row"]

# Hot-path statements are built once: building a Core statement costs several times more than
# executing a cached one (bind names carry a b_ prefix; SQLAlchemy reserves column names). The
# writes among them are `HotWrite`s: compiled once, run on SQLite's cursor.
_B = sa.bindparam
_HELD = sa.and_(
    tasks_t.c.id == _B("b_task"),
    tasks_t.c.lease_epoch == _B("b_epoch"),
    tasks_t.c.status == "running",
)
_FENCE = HotWrite(sa.update(tasks_t).where(_HELD).values(heartbeat_at=_B("b_now")))
_LAST_SEQ = sa.select(sa.func.max(messages_t.c.seq)).where(messages_t.c.run_id == _B("b_run"))
_ADD_MESSAGES = HotWrite(sa.insert(messages_t))
_ADD_TURN = HotWrite(sa.insert(turns_t))
_ADD_EVIDENCE = HotWrite(sa.insert(evidence_t))
_DROP_ITEMS = sa.delete(checklists).where(
    checklists.c.task_id == _B("b_task"), checklists.c.item.in_(_B("b_items", expanding=True))
)
_ADD_ITEMS = HotWrite(sa.insert(checklists))
_ADD_EVENT = HotWrite(sa.insert(events))
_KEPT_BASELINE = HotRead(sa.select(baselines.c.manifest).where(baselines.c.task_id == _B("b_task")))
_ADD_BASELINE = HotWrite(sa.insert(baselines))
_END_TASK = HotWrite(
    sa.update(tasks_t)
    .where(_HELD)
    .values(
        status=_B("b_status"),
        reason=_B("b_reason"),
        result=_B("b_result"),
        lease_owner=None,
        lease_expires=None,
        finished_at=_B("b_now"),
        updated_at=_B("b_now"),
    )
)
_END_RUN = HotWrite(
    sa.update(runs_t)
    .where(runs_t.c.id == _B("b_run"))
    .values(
        status=_B("b_status"),
        ending=_B("b_ending"),
        reason=_B("b_reason"),
        ended_at=_B("b_now"),
        model_calls=_B("b_calls"),
        replayed_calls=_B("b_replayed"),
        continuations=_B("b_continuations"),
    )
)


def _held(lease: Lease, now: float) -> dict[str, object]:
    return {"b_task": lease.task_id, "b_epoch": lease.epoch, "b_now": now}


def fence(conn: Connection, lease: Lease, now: float) -> None:
    """Touch the task under `lease`; `LeaseLost` when the epoch is stale or the task ended."""
    if _FENCE(conn, _held(lease, now)) != 1:
        raise LeaseLost(lease.task_id, lease.epoch)


def keep_baseline(conn: Connection, task_id: str, manifest: str, now: float) -> str:
    """Store `manifest` (JSON) as the task's protected-file baseline unless one is stored;
    the stored one (the first wins)."""
    kept = _KEPT_BASELINE.first(conn, {"b_task": task_id})
    if kept is not None:
        return str(kept.manifest)
    _ADD_BASELINE(conn, {"task_id": task_id, "manifest": manifest, "taken_at": now})
    return manifest


def put_checklist(
    conn: Connection, task_id: str, items: Sequence[tuple[str, str, str]], now: float
) -> None:
    """Upsert checklist items (delete then insert: portable, and inside one transaction)."""
    if not items:
        return
    latest = {item: (status, note) for item, status, note in items}
    conn.execute(_DROP_ITEMS, {"b_task": task_id, "b_items": list(latest)})
    _ADD_ITEMS(
        conn,
        [
            {"task_id": task_id, "item": i, "status": s, "note": n, "updated_at": now}
            for i, (s, n) in latest.items()
        ],
    )


def stop_row(
    conn: Connection,
    *,
    task_id: str,
    run_id: int | None,
    task_type: str | None,
    outcome: RunOutcome,
    now: float,
) -> None:
    """Insert the stop-reason telemetry row of one run."""
    open_items = sum(1 for _, status, _ in outcome.checklist if status != "done")
    _ADD_EVENT(
        conn,
        {
            "task_id": task_id,
            "run_id": run_id,
            "task_type": task_type,
            "status": outcome.status,
            "ending": outcome.ending,
            "loop_status": outcome.loop_status,
            "open_items": open_items,
            "turns": outcome.model_calls,
            "replayed_turns": outcome.replayed_calls,
            "continuations": outcome.continuations,
            "input_tokens": outcome.input_tokens,
            "output_tokens": outcome.output_tokens,
            "duration_s": outcome.duration_s,
            "at": now,
            "spend_usd": _charged_usd(outcome),
        },
    )


def _charged_usd(outcome: RunOutcome) -> float:
    """What the run's own model calls cost (its summary's ``charged``), 0 when unpriced."""
    charged = outcome.summary.get("charged")
    usd = charged.get("usd") if isinstance(charged, Mapping) else None
    return float(usd) if isinstance(usd, int | float) else 0.0


@dataclass(slots=True)
class _Rows:
    """One write's rows, encoded before the write lock is taken (JSON is the slow part)."""

    messages: list[dict[str, Any]]
    turn: dict[str, Any] | None
    evidence: list[dict[str, Any]]
    checklist: Sequence[tuple[str, str, str]]
    seq: int | None
    baseline: str | None = None


def encode_rows(lease: Lease, now: float, rows: JournalWrite) -> _Rows:
    """What a run produced since its last write, as rows (message `seq` is set on insert)."""
    turn = rows.get("turn")
    return _Rows(
        messages=[
            {
                "task_id": lease.task_id,
                "run_id": lease.run_id,
                "step": step,
                "role": m.role,
                "data": dumps(message_to_json(m)),
            }
            for step, m in rows.get("messages", ())
        ],
        turn=None
        if turn is None
        else {
            "task_id": lease.task_id,
            "generation": lease.generation,
            "step": turn[0],
            "run_id": lease.run_id,
            "turn": dumps(turn_to_json(turn[1])),
            "created_at": now,
        },
        evidence=[
            {
                "task_id": lease.task_id,
                "run_id": lease.run_id,
                "step": e.step,
                "tool": e.call.name,
                "call": dumps(part_to_json(e.call)),
                "result": dumps(part_to_json(e.result)),
                "executed": e.executed,
                "idempotency_key": e.idempotency_key,
                "duration_s": e.duration_s,
                "at": now,
            }
            for e in rows.get("evidence", ())
        ],
        checklist=rows.get("checklist", ()),
        seq=rows.get("seq"),
        baseline=dumps(dict(rows["baseline"])) if "baseline" in rows else None,
    )


def insert_rows(conn: Connection, lease: Lease, rows: _Rows, now: float) -> None:
    """Insert encoded rows (the caller has fenced `conn`); messages from position `seq` on."""
    seq = rows.seq
    if rows.messages:
        if seq is None:
            last = conn.execute(_LAST_SEQ, {"b_run": lease.run_id}).scalar()
            seq = 0 if last is None else int(last) + 1
        for i, row in enumerate(rows.messages, start=seq):
            row["seq"] = i
        _ADD_MESSAGES(conn, rows.messages)
    if rows.turn is not None:
        _ADD_TURN(conn, rows.turn)
    if rows.evidence:
        _ADD_EVIDENCE(conn, rows.evidence)
    put_checklist(conn, lease.task_id, rows.checklist, now)
    if rows.baseline is not None:
        keep_baseline(conn, lease.task_id, rows.baseline, now)


class JournalMixin:
    """The journal half of `SqlStore`."""

    _db: Database
    clock: Callable[[], float]

    @patient
    def journal(self, lease: Lease, **rows: Unpack[JournalWrite]) -> None:
        now = self.clock()
        encoded = encode_rows(lease, now, rows)
        with self._db.write() as conn:
            fence(conn, lease, now)
            insert_rows(conn, lease, encoded, now)

    @patient
    def append_messages(
        self,
        lease: Lease,
        step: int,
        messages: Sequence[Message],
        evidence: Sequence[ToolCallRecord] = (),
        checklist: Sequence[tuple[str, str, str]] = (),
    ) -> None:
        self.journal(
            lease, messages=[(step, m) for m in messages], evidence=evidence, checklist=checklist
        )

    @patient
    def turns(self, task_id: str, generation: int) -> list[Turn]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(turns_t.c.step, turns_t.c.turn)
                .where(turns_t.c.task_id == task_id, turns_t.c.generation == generation)
                .order_by(turns_t.c.step)
            ).all()
        out: list[Turn] = []
        for r in rows:
            if r.step != len(out) + 1:  # never written out of order; a gap ends the replay
                break
            out.append(turn_from_json(loads(r.turn)))
        return out

    @patient
    def transcript(self, run_id: int) -> list[Message]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(messages_t.c.data)
                .where(messages_t.c.run_id == run_id)
                .order_by(messages_t.c.seq)
            ).all()
        return [message_from_json(loads(r.data)) for r in rows]

    @patient
    def runs(self, task_id: str) -> list[RunRecord]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(runs_t).where(runs_t.c.task_id == task_id).order_by(runs_t.c.id)
            ).all()
        return [run_record(r) for r in rows]

    @patient
    def evidence(self, task_id: str) -> list[ToolCallRecord]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(evidence_t)
                .where(evidence_t.c.task_id == task_id)
                .order_by(evidence_t.c.id)
            ).all()
        return [
            ToolCallRecord(
                step=r.step,
                call=call_from_json(loads(r.call)),
                result=result_from_json(loads(r.result)),
                executed=bool(r.executed),
                idempotency_key=r.idempotency_key,
                duration_s=r.duration_s,
            )
            for r in rows
        ]

    @patient
    def checklist(self, task_id: str) -> list[tuple[str, str, str]]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(checklists.c.item, checklists.c.status, checklists.c.note)
                .where(checklists.c.task_id == task_id)
                .order_by(checklists.c.updated_at, checklists.c.item)
            ).all()
        return [(r.item, r.status, r.note) for r in rows]

    # -- the end of a run ----------------------------------------------------------------------

    @patient
    def finish(self, lease: Lease, outcome: RunOutcome, **rows: Unpack[JournalWrite]) -> None:
        now = self.clock()
        task_type = lease.spec.get("type")
        encoded = encode_rows(lease, now, rows)
        summary = dumps(_summary(outcome))
        with self._db.write() as conn:
            ended = _END_TASK(
                conn,
                {
                    **_held(lease, now),
                    "b_status": outcome.status,
                    "b_reason": outcome.reason,
                    "b_result": summary,
                },
            )
            if ended != 1:  # the fence: only the lease holder records an outcome
                raise LeaseLost(lease.task_id, lease.epoch)
            insert_rows(conn, lease, encoded, now)
            _END_RUN(
                conn,
                {
                    "b_run": lease.run_id,
                    "b_status": outcome.status,
                    "b_ending": outcome.ending,
                    "b_reason": outcome.reason,
                    "b_now": now,
                    "b_calls": outcome.model_calls,
                    "b_replayed": outcome.replayed_calls,
                    "b_continuations": outcome.continuations,
                },
            )
            put_checklist(conn, lease.task_id, outcome.checklist, now)
            if outcome.status in ("escalated", "awaiting_review"):  # the human queue
                conn.execute(
                    sa.insert(escalations).values(
                        task_id=lease.task_id,
                        run_id=lease.run_id,
                        kind="review"
                        if outcome.status == TaskStatus.AWAITING_REVIEW
                        else "escalation",
                        status="open",
                        reason=outcome.reason or "escalated",
                        report=dumps(outcome.report.as_data() if outcome.report else {}),
                        report_md=outcome.report_md or f"# {lease.task_id}\n\n{outcome.reason}\n",
                        created_at=now,
                    )
                )
            stop_row(
                conn,
                task_id=lease.task_id,
                run_id=lease.run_id,
                task_type=task_type if isinstance(task_type, str) else None,
                outcome=outcome,
                now=now,
            )
            write_notices(conn, lease, outcome, now)  # the outbox: with the outcome or not at all


def _summary(outcome: RunOutcome) -> dict[str, Any]:
    return {
        "status": outcome.status,
        "reason": outcome.reason,
        "ending": outcome.ending,
        "loop_status": outcome.loop_status,
        "model_calls": outcome.model_calls,
        "replayed_calls": outcome.replayed_calls,
        "continuations": outcome.continuations,
        "duration_s": round(outcome.duration_s, 4),
        **dict(outcome.summary),
    }
