"""A person's decision ends a task too: approve, reject (resolve a review) and cancel each write a
notice to the task's ``notify:`` targets in the transaction that records it, under a key of its
own (``<task>:approved``, ``:rejected``, ``:cancelled``), and a courier delivers it once. On
SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from donegate.cli._store import resolve_model
from donegate.store.sql import SqlStore
from donegate.worker import Worker, submit
from donegate.worker.outbox import Courier
from tests.review.helpers import reviewer_file
from tests.worker.helpers import task
from tests.worker.test_outbox import FAST, Receiver
from tests.worker.test_review import run


@pytest.fixture
def hook() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _reviewed(store: SqlStore, tmp_path: Path, task_id: str, url: str) -> int:
    """A ``closure: human`` task run to awaiting review (its own notice delivered); its review."""
    (tmp_path / "ready.txt").write_text("ready")
    spec = task(task_id, tmp_path, closure="human", checks=[{"file_exists": "ready.txt"}],
                notify=[{"webhook": {"url": url}}])  # fmt: skip
    submit(spec, store)
    Worker(store, model_resolver=resolve_model, delivery=FAST, poll_s=0.05).run(until_idle=True)
    [entry] = store.escalations()
    return entry.id


def _deliver(store: SqlStore) -> Callable[[], None]:
    courier = Courier(store, FAST)
    return courier.drain


def test_approval_is_notified_under_its_own_key_with_the_approved_certificate(
    store: SqlStore, store_url: str, tmp_path: Path, hook: Receiver,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    review = _reviewed(store, tmp_path, "a1", hook.url)
    assert [(k, b["status"]) for k, b in hook.got] == [("a1:final", "awaiting_review")]
    ann = reviewer_file(store, tmp_path)
    code, _, err = run(capsys, "escalations", "approve", str(review), "--by", "ann",
                       "--token-file", str(ann), "--db", store_url)  # fmt: skip
    assert code == 0, err
    [notice] = [n for n in store.outbox(task_id="a1") if n.key == "a1:approved"]
    assert notice.state == "pending"  # written with the approval, not yet sent
    _deliver(store)()
    (key, body) = hook.got[-1]
    assert len(hook.got) == 2 and key == body["idempotency_key"] == "a1:approved"
    assert (body["task_id"], body["status"], body["decision"]) == ("a1", "done", "approved")
    assert body["reason"] == f"approved by ann in review {review}"
    cert = body["certificate"]
    assert cert["status"] == "done" and cert["closure"]["review"]["approved_by"] == "ann"
    assert store.outbox(task_id="a1")[0].state == "delivered"


def test_a_rejected_review_is_notified(store: SqlStore, tmp_path: Path, hook: Receiver) -> None:
    review = _reviewed(store, tmp_path, "r1", hook.url)
    store.resolve(review, note="wrong recipient")
    _deliver(store)()
    (key, body) = hook.got[-1]
    assert key == "r1:rejected" and (body["status"], body["decision"]) == ("failed", "rejected")
    assert body["reason"] == f"rejected in review {review}: wrong recipient"
    assert "certificate" not in body


def test_a_requeued_review_is_not_notified_until_its_new_run_ends(
    store: SqlStore, tmp_path: Path, hook: Receiver
) -> None:
    review = _reviewed(store, tmp_path, "q1", hook.url)
    store.resolve(review, requeue=True, instructions="again")
    assert [n.key for n in store.outbox(task_id="q1")] == ["q1:final"]


def test_a_cancelled_task_is_notified_and_one_without_targets_writes_nothing(
    store: SqlStore, tmp_path: Path, hook: Receiver, store_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    submit(task("c1", tmp_path, notify=[{"webhook": {"url": hook.url}}]), store)
    submit(task("c2", tmp_path), store)
    code, _, err = run(capsys, "tasks", "cancel", "c1", "--reason", "not needed", "--db", store_url)
    assert code == 0, err
    store.cancel("c2")
    _deliver(store)()
    [(key, body)] = hook.got
    assert key == "c1:cancelled" and body["status"] == "cancelled"
    assert (body["reason"], body["decision"]) == ("not needed", "cancelled")
    assert store.outbox(task_id="c2") == []
    assert json.loads(json.dumps(body)) == body
