"""Chaos: workers SIGKILLed at random points across 200 tasks; nothing lost, nothing repeated.

The tasks' side effect (`tests.worker.effects.send`) keeps its own log outside the store: one
line per delivery and one per execution. After the storm every task must have ended done or
escalated, every task's message must have been delivered exactly once, and no effect may have
executed more often than the ledger began it (a recorded result is never executed again; only
an in-flight one, begun and not recorded, is re-issued under the same key). A resumed task
replays its journaled turns instead of asking the model again: a script player asked again would
send a second message under a step-2 key, which the exact delivery count would catch.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from donegate.store.sql import SqlStore, open_store
from donegate.worker import submit
from tests.store.conftest import PG_ENV, PG_SKIP, pg_schema_url
from tests.worker.chaos import Chaos, python_worker, worker_env
from tests.worker.helpers import effect_counts, task

TASKS = 200


def submit_batch(store: SqlStore, workdir: Path) -> None:
    for i in range(TASKS):
        submit(task(f"c{i:03}", workdir, escalate=i % 10 == 0), store)


def check_outcome(store: SqlStore, effect_log: Path, chaos: Chaos) -> dict[str, int]:
    """The invariants; returns figures for the report."""
    tasks = {t.id: t for t in store.list_tasks(limit=TASKS + 10)}
    assert len(tasks) == TASKS  # 0 lost
    statuses = {t.status for t in tasks.values()}
    assert statuses <= {"done", "escalated"}, statuses
    for i in range(TASKS):
        t = tasks[f"c{i:03}"]
        if i % 10 == 0:
            assert t.status == "escalated", (t.id, t.reason)
        else:
            assert t.status == "done" or "workers were lost" in (t.reason or ""), (t.id, t.reason)
    delivered, executed = effect_counts(effect_log)
    assert delivered == {f"c{i:03}:1:0": 1 for i in range(TASKS)}  # 0 duplicates, 0 missing
    reissued = 0
    for task_id in tasks:
        for effect in store.effects(task_id):
            assert effect["state"] == "done", effect
            assert 1 <= executed[effect["key"]] <= effect["issues"], effect
            reissued += effect["issues"] - 1
    runs = [r for t in tasks for r in store.runs(t)]
    lost_runs = sum(1 for r in runs if r.status == "lost")
    replayed = sum(r.replayed_calls for r in runs)
    assert chaos.kills >= 8 and lost_runs >= 5 and replayed >= 1, (chaos.kills, lost_runs)
    return {
        "kills": chaos.kills,
        "lost_runs": lost_runs,
        "reissued": reissued,
        "replayed": replayed,
    }


@pytest.mark.slow
def test_embedded_workers_killed_at_random(tmp_path: Path, effect_log: Path) -> None:
    db = tmp_path / "chaos.db"
    store = open_store(db)
    submit_batch(store, tmp_path)
    chaos = Chaos(
        python_worker("--db", str(db), "--concurrency", "2", "--lease", "1", "--poll", "0.05"),
        worker_env(tmp_path, effect_log),
        tmp_path / "logs",
    )
    took = chaos.run(store, total=TASKS, max_kills=25, timeout_s=50)
    figures = check_outcome(store, effect_log, chaos)
    print(f"\nembedded chaos: {TASKS} tasks in {took:.1f}s, {figures}")
    store.close()


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get(PG_ENV), reason=PG_SKIP)
@pytest.mark.skipif(
    not os.environ.get("DONEGATE_TEST_REDIS_URL"),
    reason="DONEGATE_TEST_REDIS_URL is not set (CI starts Redis via .ci/services.sh)",
)
def test_celery_workers_on_postgres_killed_at_random(tmp_path: Path, effect_log: Path) -> None:
    import redis

    broker = os.environ["DONEGATE_TEST_REDIS_URL"]
    redis.Redis.from_url(broker).flushdb()
    for url in pg_schema_url(os.environ[PG_ENV]):
        store = open_store(url)
        submit_batch(store, tmp_path)
        from donegate.worker.celery_app import client, enqueue

        sender = client(broker)
        for t in store.list_tasks(limit=TASKS):
            enqueue(sender, t.id)
        chaos = Chaos(
            python_worker(
                "--engine",
                "celery",
                "--db",
                url,
                "--broker",
                broker,
                "--pool",
                "threads",
                "--concurrency",
                "4",
                "--lease",
                "1",
                "--visibility-timeout",
                "4",
            ),
            worker_env(tmp_path, effect_log),
            tmp_path / "logs",
        )
        took = chaos.run(store, total=TASKS, max_kills=20, timeout_s=55)
        figures = check_outcome(store, effect_log, chaos)
        print(f"\ncelery chaos: {TASKS} tasks in {took:.1f}s, {figures}")
        store.close()
