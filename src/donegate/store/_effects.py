"""The effects ledger: side-effecting calls by idempotency key, fenced by the lease.

A key answers only for the call it was begun for: a different call under the same key (another
name or other arguments) raises `EffectDivergence` instead of being answered with, or re-issued
as, the other call. A first begin is one statement (an insert that does nothing when the key is
held); what an existing key holds is learned from that insert's conflict, in the same
transaction, and `effects_open` carries the run's unwritten journal rows with it: the begins
of a batch's side-effecting calls (run side by side) and the turn asking for them are one write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Unpack

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection

from donegate.codec import call_from_json, dumps, loads, part_to_json, result_from_json
from donegate.messages import ToolCall, ToolResult
from donegate.records.status import EffectStatus
from donegate.store._db import Database, patient
from donegate.store._hot import HotWrite
from donegate.store._journal import encode_rows, fence, insert_rows
from donegate.store._schema import effects
from donegate.store.base import HeldEffect, JournalWrite, Lease
from donegate.tools import ensure_same_call

__all__ = ["LedgerMixin"]

_B = sa.bindparam
_EFFECT = sa.select(effects.c.state, effects.c.call, effects.c.result, effects.c.epoch).where(
    effects.c.key == _B("b_key")
)
_REISSUE = (
    sa.update(effects)
    .where(effects.c.key == _B("b_key"), effects.c.state == "begun")
    .values(issues=effects.c.issues + 1, epoch=_B("b_epoch"), begun_at=_B("b_now"))
)
# A first begin is one statement: insert unless the key is there (then check and re-issue).
# psycopg reports no rowcount for ON CONFLICT DO NOTHING, so PostgreSQL says it with RETURNING
# (SQLite's rowcount is exact, and RETURNING needs SQLite 3.35).
_ADD_EFFECT_SQLITE = HotWrite(sqlite_insert(effects).on_conflict_do_nothing(index_elements=["key"]))
_ADD_EFFECT_PG = (
    pg_insert(effects).on_conflict_do_nothing(index_elements=["key"]).returning(effects.c.key)
)
_EFFECT_DONE = HotWrite(
    sa.update(effects)
    .where(effects.c.key == _B("b_key"))
    .values(state="done", result=_B("b_result"), done_at=_B("b_now"))
)


class LedgerMixin:
    """The effects-ledger part of `SqlStore`."""

    _db: Database
    clock: Callable[[], float]

    @patient
    def effect_lookup(self, key: str, call: ToolCall) -> ToolResult | None:
        with self._db.read() as conn:
            row = conn.execute(_EFFECT, {"b_key": key}).first()
        if row is None:
            return None
        ensure_same_call(key, call_from_json(loads(row.call)), call)
        if row.state != "done" or row.result is None:
            return None
        return result_from_json(loads(row.result))

    def effect_open(
        self, lease: Lease, key: str, call: ToolCall, **rows: Unpack[JournalWrite]
    ) -> HeldEffect | None:
        [held] = self.effects_open(lease, [(key, call)], **rows)
        return held

    @patient
    def effects_open(
        self, lease: Lease, calls: Sequence[tuple[str, ToolCall]], **rows: Unpack[JournalWrite]
    ) -> list[HeldEffect | None]:
        now = self.clock()
        encoded = encode_rows(lease, now, rows) if rows else None
        with self._db.write() as conn:
            fence(conn, lease, now)
            if encoded is not None:
                insert_rows(conn, lease, encoded, now)
            found = [
                None
                if self._add_effect(conn, lease, key, call, now)
                else conn.execute(_EFFECT, {"b_key": key}).one()
                for key, call in calls
            ]
        return [None if row is None else _held(row) for row in found]

    @patient
    def effect_begin(self, lease: Lease, key: str, call: ToolCall, *, reissue: bool = True) -> bool:
        now = self.clock()
        with self._db.write() as conn:
            fence(conn, lease, now)
            if self._add_effect(conn, lease, key, call, now):
                return True
            held = conn.execute(_EFFECT, {"b_key": key}).one()
            # begun before and never recorded: re-issue it, if it is the same call and the
            # caller says its tool honours the key
            ensure_same_call(key, call_from_json(loads(held.call)), call)
            if not reissue:
                # This very lease began it: a retried begin whose first answer was lost.
                return bool(held.epoch == lease.epoch and held.state == "begun")
            conn.execute(_REISSUE, {"b_key": key, "b_epoch": lease.epoch, "b_now": now})
            return True

    def _add_effect(
        self, conn: Connection, lease: Lease, key: str, call: ToolCall, now: float
    ) -> bool:
        """Insert `key` as begun for `call`; False when the key is held (the insert conflicted)."""
        row = {
            "key": key,
            "task_id": lease.task_id,
            "state": "begun",
            "call": dumps(part_to_json(call)),
            "epoch": lease.epoch,
            "issues": 1,
            "begun_at": now,
        }
        if self._db.is_sqlite:
            return _ADD_EFFECT_SQLITE(conn, row) == 1
        return conn.execute(_ADD_EFFECT_PG, row).first() is not None

    @patient
    def effect_record(self, lease: Lease, key: str, result: ToolResult) -> None:
        now = self.clock()
        with self._db.write() as conn:
            fence(conn, lease, now)
            _EFFECT_DONE(
                conn, {"b_key": key, "b_result": dumps(part_to_json(result)), "b_now": now}
            )

    @patient
    def effects(self, task_id: str) -> list[dict[str, Any]]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(effects).where(effects.c.task_id == task_id).order_by(effects.c.begun_at)
            ).all()
        return [
            {
                "key": r.key,
                "state": r.state,
                "call": loads(r.call),
                "result": loads(r.result),
                "issues": r.issues,
            }
            for r in rows
        ]


def _held(row: Any) -> HeldEffect:
    """What a held key's row says."""
    return HeldEffect(
        call=call_from_json(loads(row.call)),
        state=EffectStatus(row.state),
        result=None if row.result is None else result_from_json(loads(row.result)),
        epoch=row.epoch,
    )
