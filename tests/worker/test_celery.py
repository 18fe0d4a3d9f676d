"""The Celery engine: late acks, the lease deciding who runs, reaping, redelivery while running."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from donegate.cli._store import resolve_model
from donegate.store.sql import SqlStore, open_store
from donegate.worker import submit
from donegate.worker.celery_app import QUEUE, TASK_NAME, client, enqueue, make_app
from tests.worker.chaos import python_worker, worker_env
from tests.worker.helpers import effect_counts, task

# Celery's tests share one Redis database: under xdist they run on one worker.
pytestmark = [pytest.mark.xdist_group("redis"), pytest.mark.service, pytest.mark.slow]

REDIS_ENV = "DONEGATE_TEST_REDIS_URL"
REDIS_SKIP = f"{REDIS_ENV} is not set (CI starts Redis via .ci/services.sh)"


@pytest.fixture
def sqlite_store(tmp_path: Path, effect_log: Path) -> SqlStore:
    """A SQLite store (the lease logic is the same on PostgreSQL; see tests/store)."""
    return open_store(tmp_path / "celery.db")


def test_messages_are_acknowledged_late_and_given_back_on_worker_loss(tmp_path: Path) -> None:
    app = make_app(broker="memory://", db=str(tmp_path / "x.db"), lease_s=10)
    conf = app.conf
    assert (conf.task_acks_late, conf.task_reject_on_worker_lost) == (True, True)
    assert conf.worker_prefetch_multiplier == 1
    assert conf.broker_transport_options == {"visibility_timeout": 60.0}
    assert conf.task_default_queue == QUEUE and TASK_NAME in app.tasks


def test_a_message_for_a_task_leased_elsewhere_is_dropped(
    sqlite_store: SqlStore, tmp_path: Path, effect_log: Path
) -> None:
    submit(task("t", tmp_path), sqlite_store)
    held = sqlite_store.claim("another-machine", 0.3)
    assert held is not None
    app = make_app(broker="memory://", db=str(tmp_path / "celery.db"), model_resolver=resolve_model)
    run = app.tasks[TASK_NAME]
    assert run("t") == "skipped: leased elsewhere or ended"
    record = sqlite_store.get("t")
    assert record is not None and (record.lease_owner, record.attempts) == ("another-machine", 1)
    time.sleep(0.35)  # the other machine died: its lease runs out
    assert run("t") == "done"
    assert run("t") == "skipped: leased elsewhere or ended"  # a late duplicate: already ended
    assert effect_counts(effect_log)[1] == {"t:1:0": 1}


def test_the_reaper_returns_expired_leases_and_stale_pending_tasks(
    sqlite_store: SqlStore, tmp_path: Path
) -> None:
    submit(task("expired", tmp_path), sqlite_store)
    assert sqlite_store.claim("dead", 0.01) is not None
    submit(task("stale", tmp_path), sqlite_store)
    time.sleep(0.05)
    assert sorted(sqlite_store.reap(pending_stale_s=0.02)) == ["expired", "stale"]
    assert sqlite_store.reap(pending_stale_s=10) == []  # touched: not sent again at once
    record = sqlite_store.get("expired")
    assert record is not None and (record.status, record.lease_owner) == ("pending", None)
    assert [r.status for r in sqlite_store.runs("expired")] == ["lost"]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get(REDIS_ENV), reason=REDIS_SKIP)
def test_redis_redelivery_of_a_running_task_is_dropped(
    sqlite_store: SqlStore, tmp_path: Path, effect_log: Path
) -> None:
    import redis

    broker = os.environ[REDIS_ENV]
    redis.Redis.from_url(broker).flushdb()
    submit(task("slow", tmp_path), sqlite_store)
    enqueue(client(broker), "slow")
    env = worker_env(tmp_path, effect_log, DONEGATE_TEST_EFFECT_DELAY="4")
    command = python_worker(
        "--engine", "celery", "--db", str(tmp_path / "celery.db"), "--broker", broker,
        "--pool", "threads", "--concurrency", "2", "--lease", "3", "--visibility-timeout", "1",
    )  # fmt: skip
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            record = sqlite_store.get("slow")
            if record is not None and record.status == "done":
                break
            time.sleep(0.2)
        time.sleep(1.5)  # room for any further redelivery to be (wrongly) run
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()
    record = sqlite_store.get("slow")
    assert record is not None and (record.status, record.attempts) == ("done", 1)
    assert effect_counts(effect_log) == ({"slow:1:0": 1}, {"slow:1:0": 1})
    assert [r.status for r in sqlite_store.runs("slow")] == ["done"]


def test_a_celery_run_writes_the_worker_notify_targets_with_its_outcome(
    sqlite_store: SqlStore, tmp_path: Path, effect_log: Path
) -> None:
    hook = {"webhook": {"url": "http://127.0.0.1:9/never-called"}}
    own = {"command": ["true"]}
    submit(task("t", tmp_path, notify=[own]), sqlite_store)
    app = make_app(
        broker="memory://",
        db=str(tmp_path / "celery.db"),
        model_resolver=resolve_model,
        notify=[hook],
    )
    assert app.tasks[TASK_NAME]("t") == "done"
    rows = sqlite_store.outbox(task_id="t")
    assert sorted((n.key, n.state, json.dumps(n.target)) for n in rows) == sorted(
        [("t:final", "pending", json.dumps(own)), ("t:final", "pending", json.dumps(hook))]
    )  # the spec's target and the worker's, committed with the outcome


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get(REDIS_ENV), reason=REDIS_SKIP)
def test_a_celery_worker_delivers_the_outbox(
    sqlite_store: SqlStore, tmp_path: Path, effect_log: Path
) -> None:
    import redis

    from tests.worker.test_outbox import Receiver

    broker = os.environ[REDIS_ENV]
    redis.Redis.from_url(broker).flushdb()
    receiver = Receiver()
    submit(task("n", tmp_path), sqlite_store)
    enqueue(client(broker), "n")
    command = python_worker(
        "--engine", "celery", "--db", str(tmp_path / "celery.db"), "--broker", broker,
        "--pool", "threads", "--concurrency", "2", "--notify-webhook", receiver.url,
    )  # fmt: skip
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - closed below
    env = worker_env(tmp_path, effect_log)
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 120  # a bound: a loaded machine starts Celery slowly
        while not [n for n in sqlite_store.outbox(task_id="n") if n.state == "delivered"]:
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()
        receiver.close()
    assert sqlite_store.get("n").status == "done"  # type: ignore[union-attr]
    [(key, body)] = receiver.got
    assert key == "n:final" and (body["task_id"], body["status"]) == ("n", "done")
