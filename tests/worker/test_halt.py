"""The worker's own faults, in process: it stops, puts back what it held, and is not idle while
work waits; and an id that could fail after the effects is refused before them."""

from __future__ import annotations

import errno
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from donegate.cli._store import resolve_model
from donegate.errors import UserError
from donegate.store import DiskFull
from donegate.store._schema import tasks
from donegate.store.sql import SqlStore, open_store
from donegate.worker import Worker, submit
from tests.worker.helpers import effect_counts, task


def test_a_full_disk_after_the_effect_puts_the_task_back_and_nothing_runs_twice(
    store: SqlStore, effect_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for task_id in ("a", "b"):
        submit(task(task_id, effect_log.parent), store)

    def no_space(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device", "/data/certificates/a.json")

    worker = Worker(store, model_resolver=resolve_model)
    with monkeypatch.context() as patch:
        patch.setattr("donegate.harness.runner.write_certificate", no_space)
        stats = worker.run(until_idle=True)
    assert isinstance(worker.fault, DiskFull)
    assert str(worker.fault) == ("disk full: /data/certificates/a.json: No space left on device")
    assert (stats.claimed, stats.put_back, stats.stranded, stats.finished) == (1, 1, 0, {})
    a, b = store.get("a"), store.get("b")
    assert a is not None and b is not None
    assert (a.status, a.attempts, b.status) == ("pending", 0, "pending")  # uncharged, unclaimed
    assert a.reason == f"put back: {worker.fault}"
    again = Worker(store, model_resolver=resolve_model)
    again.run(until_idle=True)
    assert again.fault is None
    assert {t.id: t.status for t in store.list_tasks()} == {"a": "done", "b": "done"}
    delivered, executed = effect_counts(effect_log)
    assert delivered == executed == {"a:1:0": 1, "b:1:0": 1}  # a's effect answered by the ledger
    assert [r.replayed_calls for r in store.runs("a")] == [0, 2]


def test_until_idle_waits_for_a_task_whose_retry_is_delayed(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    lease = store.claim("earlier-worker", 30)
    assert lease is not None
    store.release(lease, "worker error: boom", delay_s=0.4)
    started = time.monotonic()
    worker = Worker(store, model_resolver=resolve_model, poll_s=0.05)
    stats = worker.run(until_idle=True)
    assert stats.finished == {"done": 1} and time.monotonic() - started >= 0.35
    record = store.get("t")
    assert record is not None and record.status == "done"


def test_a_stored_id_too_long_for_a_file_name_is_refused_before_its_effects(
    tmp_path: Path, effect_log: Path
) -> None:
    """Stored before ids were checked: run, its certificate's name would fail after `send`.

    SQLite only: PostgreSQL's id column never held more than 200 characters.
    """
    store = open_store(tmp_path / "old.db")
    long_id = "x" * 300
    submit(task("short", effect_log.parent), store)
    with store._db.write() as conn:  # what an older version let in
        conn.execute(sa.update(tasks).where(tasks.c.id == "short").values(id=long_id))
    worker = Worker(store, model_resolver=resolve_model)
    assert worker.run(until_idle=True).finished == {"failed": 1}
    record = store.get(long_id)
    assert record is not None and record.status == "failed"
    assert record.reason == (
        "task 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...': its id (300 characters) is not 1 to "
        "128 of A-Z a-z 0-9 . _ -; not run"
    )
    assert effect_counts(effect_log) == ({}, {})
    store.close()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("lease_s", float("nan")),
        ("lease_s", float("inf")),
        ("lease_s", 0),
        ("poll_s", -1.0),
        ("poll_s", float("nan")),
        ("concurrency", 0),
        ("concurrency", 1.5),
        ("error_backoff_s", float("inf")),
    ],
)
def test_the_worker_refuses_numbers_that_mean_nothing(
    store: SqlStore, option: str, value: Any
) -> None:
    with pytest.raises(UserError, match=f"^{option} must be"):
        Worker(store, **{option: value})


@pytest.mark.parametrize("max_tasks", [0, -1, True])
def test_max_tasks_must_be_positive(store: SqlStore, max_tasks: Any) -> None:
    with pytest.raises(UserError, match="max_tasks must be a whole number >= 1"):
        Worker(store).run(max_tasks=max_tasks)
