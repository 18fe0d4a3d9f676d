"""The store under faults and bad numbers: a vanished or replaced SQLite file, bounded ids,
numbers that would strand a task, uncharged put-backs, and what a worker must not leave idle."""

from __future__ import annotations

import math
import os
import sqlite3
import time
from pathlib import Path

import pytest

from donegate.errors import UserError
from donegate.messages import ToolCall, ToolResult
from donegate.store import StoreGone, StoreLedger
from donegate.store.sql import SqlStore, open_store

SPEC = {"id": "t", "prompt": "p"}


def _copy(src: Path, dst: Path) -> None:
    """A consistent copy of a live SQLite store (its WAL included), as a backup tool makes."""
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


def test_a_deleted_sqlite_file_stops_the_store_and_is_never_recreated(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    store = open_store(db)
    store.submit("t", SPEC, type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    os.unlink(db)
    for call in (
        lambda: store.get("t"),
        lambda: store.claim("w", 30),
        lambda: store.journal(lease, checklist=[("a", "done", "")]),
        lambda: store.submit("u", {"id": "u", "prompt": "p"}, type=None),
    ):
        with pytest.raises(StoreGone) as info:
            call()
        message = str(info.value)
        assert message.startswith(f"the store file {db} was deleted") and "\n" not in message
    assert not db.exists()  # no empty store appears in its place
    store.close()


def test_a_replaced_sqlite_file_is_another_store(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    store = open_store(db)
    store.submit("t", SPEC, type=None)
    _copy(db, tmp_path / "backup.db")
    os.replace(tmp_path / "backup.db", db)  # a restore: same path, same rows, another inode
    with pytest.raises(
        StoreGone, match=f"the store file {db} was replaced under this process \\(inode "
    ):
        store.claim("w", 30)
    store.close()
    reopened = open_store(db)  # a new process (or open) takes the new file as its store
    record = reopened.get("t")
    assert record is not None and record.status == "pending"
    reopened.close()


@pytest.mark.parametrize(
    "task_id",
    ["x" * 129, "x" * 300, "a/b", "../etc", "a b", "tâche", "a:b", ""],
)
def test_ids_are_bounded_and_plain(store: SqlStore, task_id: str) -> None:
    with pytest.raises(UserError) as info:
        store.submit(task_id, {"id": task_id, "prompt": "p"}, type=None)
    assert "\n" not in str(info.value) and len(str(info.value)) < 200
    assert store.list_tasks() == []


def test_the_longest_id_is_taken(store: SqlStore) -> None:
    task_id = "A-z_0.9" + "x" * 121
    assert len(task_id) == 128
    record, created = store.submit(task_id, {"id": task_id, "prompt": "p"}, type=None)
    assert created and record.id == task_id


@pytest.mark.parametrize("lease_s", [math.nan, math.inf, -math.inf, 0, -1, 0.0])
def test_a_lease_that_would_never_expire_or_already_has_is_refused(
    store: SqlStore, lease_s: float
) -> None:
    store.submit("t", SPEC, type=None)
    with pytest.raises(UserError, match="a lease must be a finite number of seconds > 0"):
        store.claim("w", lease_s)
    with pytest.raises(UserError, match="a lease must be"):
        store.claim_task("t", "w", lease_s)
    record = store.get("t")
    assert record is not None and (record.status, record.attempts) == ("pending", 0)
    lease = store.claim("w", 30)
    assert lease is not None
    with pytest.raises(UserError, match="a lease must be"):
        store.heartbeat([lease], lease_s)
    record = store.get("t")
    assert record is not None and record.lease_expires is not None
    assert math.isfinite(record.lease_expires)


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "3"])
def test_max_attempts_must_be_a_whole_number_of_one_or_more(store: SqlStore, bad: object) -> None:
    with pytest.raises(UserError, match="max_attempts must be a whole number >= 1"):
        store.submit("t", SPEC, type=None, max_attempts=bad)  # type: ignore[arg-type]
    assert store.list_tasks() == []


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0])
def test_bad_delays_and_patience_are_refused(store: SqlStore, bad: float) -> None:
    store.submit("t", SPEC, type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    with pytest.raises(UserError, match="a release delay must be"):
        store.release(lease, "x", delay_s=bad)
    record = store.get("t")
    assert record is not None and record.status == "running"  # nothing was written
    with pytest.raises(UserError, match="patience must be a finite number >= 0"):
        store.patience_s = bad


def test_an_uncharged_release_hands_the_attempt_back(store: SqlStore) -> None:
    store.submit("t", SPEC, type=None, max_attempts=1)
    lease = store.claim("w", 30)
    assert lease is not None and lease.attempt == 1
    store.release(lease, "put back: disk full", charge=False)
    record = store.get("t")
    assert record is not None
    assert (record.status, record.attempts, record.reason) == ("pending", 0, "put back: disk full")
    again = store.claim("w2", 30)  # the one allowed attempt is still there
    assert again is not None and again.epoch == lease.epoch + 1
    store.release(again, "worker error")  # charged: out of attempts
    record = store.get("t")
    assert record is not None and record.status == "failed"


def test_waiting_lists_pending_tasks_and_the_workers_own_unrecorded_runs(store: SqlStore) -> None:
    for task_id in ("a", "b", "c"):
        store.submit(task_id, {"id": task_id, "prompt": "p"}, type=None)
    mine = store.claim("me", 30)
    theirs = store.claim("them", 30)
    assert mine is not None and theirs is not None
    store.release(theirs, "busy", delay_s=60)  # pending, but not claimable for a minute
    assert store.claim("me", 30) is not None  # c
    assert sorted(store.waiting("me")) == ["a", "b", "c"]
    assert store.waiting("them") == ["b"]  # delayed, still pending: an idle worker must wait


def test_a_key_begun_by_a_dead_lease_is_reissued_only_when_asked(store: SqlStore) -> None:
    store.submit("t", SPEC, type=None)
    dead = store.claim("dead", 0.05)
    assert dead is not None
    call = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann"})
    assert StoreLedger(store, dead).begin("t:1:0", call, reissue=False)  # first: it may run
    assert StoreLedger(store, dead).begin("t:1:0", call, reissue=False)  # its own, answered late
    time.sleep(0.1)
    live = store.claim("live", 30)
    assert live is not None
    ledger = StoreLedger(store, live)
    assert ledger.lookup("t:1:0", call) is None
    assert not ledger.begin("t:1:0", call, reissue=False)  # outcome unknown: nothing written
    [row] = store.effects("t")
    assert (row["state"], row["issues"]) == ("begun", 1)
    assert ledger.begin("t:1:0", call, reissue=True)
    ledger.record("t:1:0", ToolResult(call_id="c1", name="send", content="sent"))
    [row] = store.effects("t")
    assert (row["state"], row["issues"]) == ("done", 2)
