"""The store's reads for the review UI: keyset pages, filters, the queue, journals, actions;
on SQLite and PostgreSQL. On SQLite the page queries are also checked to be index scans."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from donegate.messages import Ending
from donegate.store import RunOutcome, open_store
from donegate.store.sql import SqlStore
from donegate.worker import submit
from tests.server.fill import READY_HINT, report_task, work


def _spec(task_id: str, task_type: str = "mail") -> dict[str, Any]:
    return {"id": task_id, "prompt": f"do {task_id}", "type": task_type}


def test_task_pages_walk_every_task_once_newest_first(store: SqlStore) -> None:
    for n in range(57):
        store.submit(
            f"t{n:03d}", _spec(f"t{n:03d}", "a" if n % 3 else "b"), type="a" if n % 3 else "b"
        )
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = store.task_page(limit=10, after=after)
        seen += [t.id for t in page.tasks]
        pages += 1
        if page.next is None:
            break
        after = page.next
    assert pages == 6 and len(seen) == 57 == len(set(seen))
    created = [store.get(i).created_at for i in seen]  # type: ignore[union-attr]
    assert created == sorted(created, reverse=True)
    typed = store.task_page(type="b", limit=200).tasks
    assert {t.id for t in typed} == {f"t{n:03d}" for n in range(0, 57, 3)}
    assert [t.id for t in store.task_page(text="T05", limit=200).tasks] == [
        f"t05{n}" for n in range(6, -1, -1)
    ]
    assert store.task_page(text="100%_", limit=5).tasks == []  # LIKE wildcards are literal
    assert store.task_page(status="running").tasks == []
    assert store.task_types() == ["a", "b"]


def test_the_queue_actions_and_journals_come_from_real_runs(
    store: SqlStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    for n in range(3):
        submit(report_task(f"r{n}", tmp_path / f"w{n}"), store)
    work(store, tmp_path / "home")
    rows = store.queue_page()
    assert [r.task_id for r in rows] == ["r0", "r1", "r2"]
    assert [(r.task_type, r.continuations, r.model_calls) for r in rows] == [("report", 1, 3)] * 3
    assert [r.task_id for r in store.queue_page(after=rows[0].id, limit=1)] == ["r1"]
    assert store.queue_count() == 3
    store.resolve(rows[1].id, note="done by hand")
    store.record_action(actor="ann", action="resolve", task_id="r1", escalation_id=rows[1].id)
    assert [r.task_id for r in store.queue_page()] == ["r0", "r2"]
    assert [r.task_id for r in store.queue_page(status="resolved")] == ["r1"]
    assert store.task_escalations("r1") == [rows[1].id]
    (action,) = store.actions(task_id="r1")
    assert (action.actor, action.action, action.escalation_id) == ("ann", "resolve", rows[1].id)
    assert time.time() - action.at < 60

    store.resolve(rows[0].id, requeue=True, instructions=READY_HINT)
    work(store, tmp_path / "home")
    first, second = store.journals("r0")
    assert (first.generation, first.run.status, second.generation, second.run.status) == (
        0, "escalated", 1, "done",
    )  # fmt: skip
    assert sorted(second.turns) == [1, 2] and second.turns[2].ending is Ending.COMPLETE
    assert [s for s, _ in second.messages][:2] == [0, 0]  # the prompt: system and user
    assert any(READY_HINT in m.text for _, m in second.messages if m.role == "user")
    stops = store.stop_rows_of(since=0, task_type="report")
    assert len(stops) == 4 and store.stop_rows_of(since=0, task_type="other") == []
    assert store.stop_types() == ["report"]


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqlStore]:
    """A SQLite store: query plans are read with SQLite's EXPLAIN QUERY PLAN."""
    s = open_store(tmp_path / "plans.db")
    yield s
    s.close()


@pytest.fixture
def plans(sqlite_store: SqlStore) -> Iterator[list[str]]:
    """SQLite query plans of every SELECT the store runs while the fixture is active."""
    store = sqlite_store
    found: list[str] = []

    def explain(conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        many = bool(rest[-1])  # (context, executemany) follow, as SQLAlchemy passes them
        if statement.lstrip().upper().startswith("SELECT") and not many:
            rows = cursor.connection.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
            found.append(" | ".join(str(r[-1]) for r in rows))

    engine = store._db.engine
    sa.event.listen(engine, "before_cursor_execute", explain)
    yield found
    sa.event.remove(engine, "before_cursor_execute", explain)


def test_page_queries_are_index_scans_without_a_full_sort(
    sqlite_store: SqlStore, plans: list[str]
) -> None:
    store = sqlite_store
    for n in range(5):
        store.submit(f"t{n}", _spec(f"t{n}"), type="mail")
    page = store.task_page(limit=2)
    store.task_page(limit=2, after=page.next)
    store.task_page(type="mail", limit=2)
    store.task_page(status="pending", limit=2)
    store.queue_page()
    store.queue_count()
    store.actions(task_id="t1")
    store.stop_rows_of(since=0, task_type="mail")
    # a full sort would read every row; ties on created_at are sorted by id as they stream
    bad = [p for p in plans if "USING" not in p or "TEMP B-TREE FOR ORDER BY" in p]
    assert plans and not bad, bad
    assert not any(p.startswith("SCAN tasks") and "INDEX" not in p for p in plans)


def test_a_worker_outcome_row_reads_back_through_the_page(store: SqlStore) -> None:
    store.submit("x", _spec("x"), type="mail")
    lease = store.claim("w", 30)
    assert lease is not None
    store.finish(lease, RunOutcome(status="failed", reason="truncated: cut"))
    (task,) = store.task_page(status="failed").tasks
    assert (task.id, task.reason) == ("x", "truncated: cut")
