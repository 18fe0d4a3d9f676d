"""The row mappers two store services share: a run row as a `RunRecord`, an events row as a
`StopRow`. One each, so the worker's journal and the review pages read the same record from
the same columns (two copies had drifted: one read no ``spend_usd``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from donegate.messages import Ending
from donegate.records.status import (
    OUTCOME_UNKNOWN,
    TASK_OUTCOMES,
    AttemptStatus,
    LoopStatus,
    Status,
    TaskOutcome,
    task_outcome,
)
from donegate.store._schema import events
from donegate.store.base import RunRecord, StopRow

__all__ = ["STOP_COLUMNS", "run_record", "stop_rows"]


def run_record(row: Any) -> RunRecord:
    """A ``runs`` row (every column selected) as its record."""
    return RunRecord(
        id=row.id,
        task_id=row.task_id,
        attempt=row.attempt,
        worker_id=row.worker_id,
        started_at=row.started_at,
        ended_at=row.ended_at,
        status=AttemptStatus(row.status),
        reason=row.reason,
        model_calls=row.model_calls,
        replayed_calls=row.replayed_calls,
        continuations=row.continuations,
    )


STOP_COLUMNS = sa.select(
    events.c.task_id,
    events.c.task_type,
    events.c.status,
    events.c.ending,
    events.c.loop_status,
    events.c.open_items,
    events.c.turns,
    events.c.replayed_turns,
    events.c.continuations,
    events.c.duration_s,
    events.c.at,
    events.c.spend_usd,
)
"""The ``events`` columns a `StopRow` holds, in the order `stop_rows` unpacks them."""


_OUTCOMES: dict[object, TaskOutcome] = {o.value: o for o in TASK_OUTCOMES}
_ENDINGS: dict[object, Ending | None] = {None: None, **{e.value: e for e in Ending}}
_LOOP: dict[object, LoopStatus | None] = {
    None: None,
    OUTCOME_UNKNOWN: OUTCOME_UNKNOWN,
    **{s.value: s for s in Status},
}


def _parsed(table: dict[object, Any], value: object, parse: Any) -> Any:
    """`value` through `table` (a dict lookup per column of a row); `parse` names a value the
    table lacks (the CHECK constraints keep those out)."""
    try:
        return table[value]
    except KeyError:
        return parse(value)


def stop_rows(rows: Iterable[Sequence[Any]]) -> list[StopRow]:
    """Rows of `STOP_COLUMNS` as records (a page can read tens of thousands of these: plain
    tuples, no per-row attribute lookup; the statuses parsed by a dict lookup each)."""
    return [
        StopRow(
            task_id=task_id,
            task_type=kind,
            status=_parsed(_OUTCOMES, status, task_outcome),
            ending=_parsed(_ENDINGS, ending, Ending),
            loop_status=_parsed(_LOOP, loop_status, Status),
            open_items=open_items,
            turns=turns,
            replayed_turns=replayed,
            continuations=continuations,
            duration_s=duration_s,
            at=at,
            spend_usd=spend_usd,
        )
        for (
            task_id, kind, status, ending, loop_status, open_items, turns, replayed,
            continuations, duration_s, at, spend_usd,
        ) in rows
    ]  # fmt: skip
