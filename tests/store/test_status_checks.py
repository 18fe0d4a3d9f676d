"""Stored status columns accept only their vocabulary (r0011_status_checks), on both backends."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from donegate.records import status
from donegate.store._db import MIGRATIONS, Database
from donegate.store.sql import open_store

_TASK = {"id": "t", "spec": "{}", "created_at": 1.0, "updated_at": 1.0}
_RUN = {
    "task_id": "t",
    "attempt": 1,
    "generation": 0,
    "epoch": 1,
    "worker_id": "w",
    "started_at": 1.0,
}
ROWS: dict[str, tuple[str, str, dict[str, Any]]] = {
    # table: (status column, a value it holds, the row's other required columns)
    "tasks": ("status", "pending", {**_TASK, "id": "t2"}),
    "runs": ("status", "lost", _RUN),
    "checklists": ("status", "blocked", {"task_id": "t", "item": "i", "updated_at": 1.0}),
    "effects": (
        "state",
        "begun",
        {"key": "k", "task_id": "t", "call": "{}", "epoch": 1, "begun_at": 1.0},
    ),
    "escalations": (
        "status",
        "approved",
        {"task_id": "t", "reason": "r", "report": "{}", "report_md": "m", "created_at": 1.0},
    ),
    "outbox": (
        "state",
        "delivered",
        {
            "task_id": "t",
            "generation": 0,
            "target_no": 0,
            "key": "k",
            "target": "{}",
            "body": "{}",
            "max_attempts": 3,
            "next_at": 1.0,
            "created_at": 1.0,
        },
    ),
    "events": (
        "status",
        "awaiting_review",
        {"task_id": "t", "turns": 1, "continuations": 0, "duration_s": 1.0, "at": 1.0},
    ),
}
"""A row for each status column: its status (one of the vocabulary) and the columns it needs."""

_EVENT = ROWS["events"][2] | {"status": "escalated"}


def _insert(conn: sa.Connection, table: str, row: dict[str, Any]) -> None:
    names = ", ".join(row)
    conn.execute(
        sa.text(f"INSERT INTO {table} ({names}) VALUES ({', '.join(':' + n for n in row)})"), row
    )


@pytest.mark.parametrize("table", sorted(ROWS))
def test_an_out_of_vocabulary_status_is_refused_by_the_database(store_url: str, table: str) -> None:
    column, good, row = ROWS[table]
    store = open_store(store_url)
    try:
        with store._db.write() as conn:
            _insert(conn, "tasks", {**_TASK, "status": "running"})  # the rows' parents
            _insert(conn, "runs", {**_RUN, "status": "running"})
            _insert(conn, table, {**row, column: good})  # the vocabulary's value is taken
            conn.execute(sa.text(f"DELETE FROM {table} WHERE {column} = :v"), {"v": good})
        with (
            pytest.raises(sa.exc.IntegrityError, match=f"ck_{table}_{column}"),
            store._db.write() as conn,
        ):
            _insert(conn, table, {**row, column: "finished"})  # a word no code writes
    finally:
        store.close()


def _migration(name: str = "r0011_status_checks") -> Any:
    path = Path(MIGRATIONS) / "versions" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_migration_lists_each_enum_s_values() -> None:
    """The migration's frozen lists are today's vocabularies (a new value needs a migration)."""
    live = {
        "tasks": status.TaskStatus,
        "runs": status.AttemptStatus,
        "checklists": status.ItemStatus,
        "effects": status.EffectStatus,
        "escalations": status.EscalationStatus,
        "outbox": status.OutboxStatus,
    }
    checks = _migration().CHECKS
    assert set(checks) == {*live, "events"} == set(ROWS)
    for table, enum in live.items():
        assert checks[table][1] == tuple(enum), table
    assert checks["events"][1] == status.TASK_OUTCOMES
    assert {table: column for table, (column, _) in checks.items()} == {
        table: column for table, (column, _, _) in ROWS.items()
    }


def test_a_store_with_rows_moves_to_the_checks_keeping_them_and_its_foreign_keys(
    store_url: str,
) -> None:
    database = Database(store_url)
    config = Config()
    config.set_main_option("script_location", MIGRATIONS)
    with database.write() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0010_reviewers")
        _insert(conn, "tasks", {**_TASK, "status": "running"})
        _insert(conn, "runs", {**_RUN, "status": "running"})
        _insert(
            conn,
            "turns",
            {
                "task_id": "t",
                "generation": 0,
                "step": 1,
                "run_id": 1,
                "turn": "{}",
                "created_at": 1.0,
            },
        )
        _insert(conn, "events", {**_EVENT, "ending": "error", "loop_status": "outcome_unknown"})
    database.dispose()
    store = open_store(store_url)  # runs r0011 and r0012 over the rows: tables are rebuilt
    try:
        assert [r.status for r in store.runs("t")] == [status.AttemptStatus.RUNNING]
        assert [(r.ending, r.loop_status) for r in store.stop_rows_of(since=0)] == [
            ("error", "outcome_unknown")
        ]
        with pytest.raises(sa.exc.IntegrityError), store._db.write() as conn:  # keys hold again
            _insert(conn, "runs", {**_RUN, "task_id": "nobody", "status": "running"})
    finally:
        store.close()


@pytest.mark.parametrize(
    ("column", "good"), [("ending", "paused"), ("loop_status", "outcome_unknown")]
)
def test_an_event_s_ending_and_loop_status_are_checked_too(
    store_url: str, column: str, good: str
) -> None:
    """r0012: a stop row's ending and loop status hold their vocabulary's values or NULL."""
    store = open_store(store_url)
    try:
        with store._db.write() as conn:
            _insert(conn, "events", {**_EVENT, column: good})
            _insert(conn, "events", {**_EVENT, column: None})  # NULL: not recorded
        with (
            pytest.raises(sa.exc.IntegrityError, match=f"ck_events_{column}"),
            store._db.write() as conn,
        ):
            _insert(conn, "events", {**_EVENT, column: "finished"})
        assert {(r.ending, r.loop_status) for r in store.stop_rows_of(since=0)} == {
            ("paused", None) if column == "ending" else (None, "outcome_unknown"),
            (None, None),
        }
    finally:
        store.close()


def test_r0012_lists_today_s_endings_and_loop_statuses() -> None:
    module = _migration("r0012_event_checks")
    assert module.ENDINGS == status.ENDING_VALUES
    assert module.LOOP_STATUSES == status.LOOP_VALUES


def test_stop_rows_read_back_as_the_enums() -> None:
    """The mapper gives enum members (not bare strings), and names a value it cannot parse."""
    from donegate.messages import Ending
    from donegate.store._rows import stop_rows

    (row,) = stop_rows([("t", None, "escalated", "paused", "gated", 0, 1, 0, 0, 1.0, 1.0, 0.0)])
    assert row.status is status.TaskStatus.ESCALATED
    assert row.ending is Ending.PAUSED
    assert row.loop_status is status.Status.GATED
    (row,) = stop_rows([("t", None, "failed", None, "outcome_unknown", 0, 1, 0, 0, 1.0, 1.0, 0.0)])
    assert row.ending is None and row.loop_status == status.OUTCOME_UNKNOWN
    with pytest.raises(ValueError, match="finished"):
        stop_rows([("t", None, "failed", None, "finished", 0, 1, 0, 0, 1.0, 1.0, 0.0)])
