"""Hot-path writes (`HotWrite`) and SQLite's shared write connection.

A hot write must write what `Connection.execute` writes (literals of its statement, rows of an
insert, the row count an update reports) on both backends, and a driver error must surface as
SQLAlchemy's error, so that `Database` translates it and a later write starts afresh.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from donegate.errors import StoreUnavailable
from donegate.store._hot import HotWrite
from donegate.store._schema import events, tasks
from donegate.store.sql import SqlStore, open_store
from tests.store.conftest import PG_ENV, PG_SKIP, pg_schema_url

_B = sa.bindparam
_TOUCH = HotWrite(
    sa.update(tasks)
    .where(tasks.c.id == _B("b_task"), tasks.c.status == "pending")  # a literal of its own
    .values(updated_at=_B("b_now"))
)
_ADD_EVENTS = HotWrite(sa.insert(events))


def _spec(task_id: str) -> dict[str, object]:
    return {"id": task_id, "prompt": "p", "model": "openai:x", "closure": "model"}


def _event(task_id: str, turns: int) -> dict[str, object]:
    return {
        "task_id": task_id,
        "status": "done",
        "turns": turns,
        "continuations": 0,
        "duration_s": 0.5,
        "at": 1.0,
    }


def test_hot_writes_write_what_execute_writes(store: SqlStore) -> None:
    store.submit("a", _spec("a"), type="t")
    store.submit("b", _spec("b"), type="t")
    with store._db.write() as conn:
        assert _TOUCH(conn, {"b_task": "a", "b_now": 42.0}) == 1
        assert _TOUCH(conn, {"b_task": "nope", "b_now": 42.0}) == 0
        # (an insert's count is SQLite's only: PostgreSQL's says -1; the rows are read below)
        _ADD_EVENTS(conn, [_event("a", 1), _event("b", 2), _event("a", 3)])
        _ADD_EVENTS(conn, _event("b", 4))
        assert _ADD_EVENTS(conn, []) == 0
    with store._db.read() as conn:
        touched = conn.execute(sa.select(tasks.c.id, tasks.c.updated_at).order_by(tasks.c.id))
        assert [(r.id, r.updated_at == 42.0) for r in touched] == [("a", True), ("b", False)]
        rows = conn.execute(
            sa.select(events.c.task_id, events.c.turns, events.c.open_items).order_by(events.c.id)
        ).all()
    # columns the rows leave out take the schema's server defaults (open_items: 0)
    assert [tuple(r) for r in rows] == [("a", 1, 0), ("b", 2, 0), ("a", 3, 0), ("b", 4, 0)]


def test_a_failed_hot_write_is_the_driver_error_and_the_next_write_works(
    store: SqlStore,
) -> None:
    with pytest.raises(sa.exc.IntegrityError), store._db.write() as conn:
        _ADD_EVENTS(conn, {"task_id": "a", "status": None, "at": 1.0})  # status NOT NULL
    with store._db.write() as conn:  # rolled back, and the store writes on
        _ADD_EVENTS(conn, _event("a", 1))
    with store._db.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(events)).scalar() == 1


def test_sqlite_write_errors_are_translated_and_the_write_connection_replaced(
    tmp_path: Path,
) -> None:
    path = tmp_path / "donegate.db"
    store = open_store(str(path))
    try:
        with store._db.write() as conn:
            _ADD_EVENTS(conn, _event("a", 1))
        first = store._db._writer
        assert first is not None  # SQLite's writes share one connection
        other = sqlite3.connect(path, timeout=0)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            first.connection.driver_connection.execute("PRAGMA busy_timeout=0")  # type: ignore[union-attr]
            with pytest.raises(StoreUnavailable, match="locked"), store._db.write():
                pass
        finally:
            other.rollback()
            other.close()
        assert store._db._writer is None  # dropped after the error
        with store._db.write() as conn:
            assert _ADD_EVENTS(conn, _event("a", 2)) == 1  # SQLite counts an insert's rows
        assert store._db._writer is not None and store._db._writer is not first
    finally:
        store.close()


def test_a_hot_insert_returns_the_new_rows_key(store: SqlStore) -> None:
    with store._db.write() as conn:
        first = _ADD_EVENTS.insert(conn, _event("a", 1))
        second = _ADD_EVENTS.insert(conn, _event("b", 2))
    assert second > first
    with store._db.read() as conn:
        rows = conn.execute(sa.select(events.c.id, events.c.task_id).order_by(events.c.id))
        assert [tuple(r) for r in rows] == [(first, "a"), (second, "b")]


@pytest.mark.skipif(not os.environ.get(PG_ENV), reason=PG_SKIP)
def test_a_hot_write_on_a_lost_postgresql_connection_is_retried_elsewhere() -> None:
    # PostgreSQL's alone: SQLite has no connection to lose
    for store_url in pg_schema_url(os.environ[PG_ENV]):
        store = open_store(store_url)
        store.submit("a", _spec("a"), type="t")
        killer = sa.create_engine(store_url)
        seen: list[bool] = []
        try:
            with (
                pytest.raises(StoreUnavailable, match="does not answer"),
                store._db.write() as conn,
            ):
                pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
                with killer.connect() as other:
                    other.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
                try:
                    _TOUCH(conn, {"b_task": "a", "b_now": 7.0})
                except sa.exc.DBAPIError as e:
                    seen += [e.connection_invalidated, conn.invalidated]
                    raise
            assert seen == [True, True]  # dropped, as SQLAlchemy drops a lost connection
            with store._db.write() as conn:  # the next write gets a live one
                assert _TOUCH(conn, {"b_task": "a", "b_now": 8.0}) == 1
        finally:
            killer.dispose()
        store.close()
