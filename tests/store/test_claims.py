"""Claims read through the claim indexes (r0006): backed-off tasks are not scanned, order kept."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from donegate.store._schema import tasks
from donegate.store.sql import SqlStore, open_store
from tests.store.conftest import PG_ENV, PG_SKIP, pg_schema_url


def spec(task_id: str) -> dict[str, object]:
    return {"id": task_id, "prompt": f"do {task_id}"}


def back_off(store: SqlStore, task_ids: list[str], until: float) -> None:
    """Pending tasks waiting out a backoff until `until`, as a failed run's release leaves them."""
    with store._db.write() as conn:
        conn.execute(sa.update(tasks).where(tasks.c.id.in_(task_ids)).values(not_before=until))


def test_backed_off_tasks_wait_and_then_run_oldest_first(store: SqlStore) -> None:
    for name in ("old1", "old2", "new"):
        store.submit(name, spec(name), type=None)
    back_off(store, ["old1", "old2"], time.time() + 3600)
    first = store.claim("w", 30)
    assert first is not None and first.task_id == "new"  # the older two are backing off
    assert store.claim("w", 30) is None
    store.submit("newer", spec("newer"), type=None)
    back_off(store, ["old2", "old1"], time.time() - 1)  # their time has come
    claimed = [lease.task_id for lease in iter(lambda: store.claim("w", 30), None)]
    assert claimed == ["old1", "old2", "newer"]  # submission order, as before the backoff
    assert {t.status for t in store.list_tasks()} == {"running"}


def test_a_named_claim_honours_the_backoff(store: SqlStore) -> None:
    store.submit("t", spec("t"), type=None)
    back_off(store, ["t"], time.time() + 3600)
    assert store.claim_task("t", "w", 30) is None
    assert store.waiting("w") == ["t"]  # a delayed task is still one a worker must not leave
    back_off(store, ["t"], time.time() - 1)
    lease = store.claim_task("t", "w", 30)
    assert lease is not None and lease.task_id == "t"


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqlStore]:
    """A SQLite store: query plans are read with SQLite's EXPLAIN QUERY PLAN."""
    s = open_store(tmp_path / "plans.db")
    yield s
    s.close()


@contextmanager
def _watch(store: SqlStore, explain: Any) -> Iterator[list[str]]:
    found: list[str] = []

    def hook(conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        head = statement.lstrip().upper()
        if head.startswith(("SELECT", "UPDATE TASKS")) and not rest[-1]:
            found.append(explain(cursor, statement, params))

    engine = store._db.engine
    sa.event.listen(engine, "before_cursor_execute", hook)
    yield found
    sa.event.remove(engine, "before_cursor_execute", hook)


def _sqlite_plan(cursor: Any, statement: str, params: Any) -> str:
    rows = cursor.connection.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
    return " | ".join(str(r[-1]) for r in rows)


def _many(store: SqlStore, n: int, *, not_before: float | None) -> None:
    now = time.time()
    rows = [
        {
            "id": f"b{i:06}",
            "status": "pending",
            "spec": "{}",
            "not_before": not_before,
            "created_at": now - 10_000 + i * 0.001,  # older than every ready task
            "updated_at": now,
        }
        for i in range(n)
    ]
    with store._db.write() as conn:
        conn.execute(sa.insert(tasks), rows)


@contextmanager
def _traced(store: SqlStore) -> Iterator[list[str]]:
    """The plans of the claim's reads and task updates, from SQLite's own trace: the claim runs
    them on the driver's cursor, which SQLAlchemy's cursor events do not see."""
    statements: list[str] = []
    with store._db.write() as conn:  # the write connection, as the claim will use it
        raw = conn.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    raw.set_trace_callback(statements.append)  # each statement with its values in it
    found: list[str] = []
    try:
        yield found
    finally:
        raw.set_trace_callback(None)
    for sql in statements:
        if sql.lstrip().upper().startswith(("SELECT", "UPDATE TASKS")):
            found.append(_sqlite_plan(raw.cursor(), sql, ()))


def test_sqlite_claims_read_only_index_ranges(sqlite_store: SqlStore) -> None:
    store = sqlite_store
    _many(store, 500, not_before=time.time() + 3600)
    store.submit("ready", spec("ready"), type=None)
    with _traced(store) as plans:
        lease = store.claim("w", 30)
    assert lease is not None and lease.task_id == "ready"
    assert len(plans) >= 3, plans  # the wake, the expired read and the ready read at least
    joined = " || ".join(plans)
    assert "ix_tasks_ready" in joined and "ix_tasks_backoff" in joined, plans
    assert not any(
        "SCAN tasks" in p and "INDEX" not in p.split("SCAN tasks", 1)[1] for p in plans
    ), plans
    assert not any("TEMP B-TREE" in p for p in plans), plans


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL schema (the plan test reads PostgreSQL's EXPLAIN)."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(PG_SKIP)
    yield from pg_schema_url(base)


def test_postgres_claims_read_only_index_ranges(pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        _many(store, 5_000, not_before=time.time() + 3600)
        store.submit("ready", spec("ready"), type=None)
        with store._db.write() as conn:
            conn.execute(sa.text("ANALYZE tasks"))

        def explain(cursor: Any, statement: str, params: Any) -> str:
            with cursor.connection.cursor() as c:
                c.execute(f"EXPLAIN {statement}", params)
                return " | ".join(str(r[0]).strip() for r in c.fetchall())

        with _watch(store, explain) as plans:
            lease = store.claim("w", 30)
        assert lease is not None and lease.task_id == "ready"
        joined = " || ".join(plans)
        assert "ix_tasks_ready" in joined and "ix_tasks_backoff" in joined, plans
        assert "Seq Scan on tasks" not in joined, plans
    finally:
        store.close()
