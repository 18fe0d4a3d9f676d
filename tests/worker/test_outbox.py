"""The outbox: a task's end reaches a local webhook receiver once per key, through failures,
timeouts and a worker SIGKILLed on either side of recording the outcome."""

from __future__ import annotations

import http.server
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

from donegate.cli._store import resolve_model
from donegate.errors import StoreGone
from donegate.harness.spec import TaskSpec
from donegate.store._outbox import Notification
from donegate.store.sql import SqlStore
from donegate.worker import Worker, submit
from donegate.worker.outbox import Courier, Delivery, deliver
from tests.worker.chaos import held_worker, python_worker, worker_env
from tests.worker.effects import DELAY_ENV
from tests.worker.helpers import task
from tests.worker.test_cli import db, run, write_task

__all__ = ["db"]  # the fixture, shared

FAST = Delivery(max_attempts=3, backoff_s=0.05, cap_s=0.2, timeout_s=1.0, poll_s=0.05)


class Receiver:
    """A webhook receiver on 127.0.0.1: records every POST; fails the first `fail` of them
    with a 500, or never answers in time when `hang`."""

    def __init__(self, *, fail: int = 0, hang: bool = False) -> None:
        self.fail = fail
        self.hang = hang
        self.got: list[tuple[str | None, dict[str, Any]]] = []
        self.release = threading.Event()
        me = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                me.got.append((self.headers.get("Idempotency-Key"), body))
                if me.hang:
                    me.release.wait(10)
                    return
                if me.fail > 0:
                    me.fail -= 1
                    self.send_response(500)
                else:
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def make(**kwargs: Any) -> Receiver:
        made.append(Receiver(**kwargs))
        return made[-1]

    yield make
    for r in made:
        r.close()


def _until(done: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _drive(store: SqlStore, until: Callable[[], bool]) -> None:
    courier = Courier(store, FAST)
    _until(lambda: courier.once() is not None and until())


def test_a_done_task_is_delivered_once_with_its_certificate_and_key(
    store: SqlStore, effect_log: Path, receiver: Callable[..., Receiver]
) -> None:
    r = receiver()
    submit(task("t1", effect_log.parent, notify=[{"webhook": {"url": r.url}}]), store)
    Worker(store, model_resolver=resolve_model, delivery=FAST, poll_s=0.05).run(until_idle=True)
    assert store.get("t1").status == "done"  # type: ignore[union-attr]
    [n] = store.outbox(task_id="t1")
    assert (n.state, n.attempts, n.key) == ("delivered", 1, "t1:final")
    [(key, body)] = r.got
    assert key == "t1:final" and body["idempotency_key"] == "t1:final"
    assert body["task_id"] == "t1" and body["status"] == "done"
    assert body["certificate"]["task_id"] == "t1" and "signature" in json.dumps(body)
    assert "escalation" not in body and body["continuations"] == 0
    Courier(store, FAST).drain()  # nothing is due any more: no second delivery
    assert len(r.got) == 1


def test_a_receiver_failing_twice_is_retried_then_delivered(
    store: SqlStore, effect_log: Path, receiver: Callable[..., Receiver]
) -> None:
    r = receiver(fail=2)
    submit(task("t2", effect_log.parent, notify=[{"webhook": {"url": r.url}}]), store)
    Worker(store, model_resolver=resolve_model, delivery=FAST, deliver_outbox=False).run(
        until_idle=True
    )
    _drive(store, lambda: store.outbox(task_id="t2")[0].state != "pending")
    [n] = store.outbox(task_id="t2")
    assert (n.state, n.attempts, n.last_error) == ("delivered", 3, None)
    assert [k for k, _ in r.got] == ["t2:final"] * 3


def test_a_task_failed_by_its_last_attempt_is_delivered_too(
    store: SqlStore, effect_log: Path, receiver: Callable[..., Receiver]
) -> None:
    """A worker error on the last attempt ends the task failed outside the runner's outcome;
    its notice is written in that same transaction and delivered like any other."""
    r = receiver()
    spec = task("t9", effect_log.parent, notify=[{"webhook": {"url": r.url}}])
    submit(spec, store, max_attempts=1)

    def broken(name: str, what: str) -> Any:
        raise RuntimeError("the model client cannot be built")

    Worker(store, model_resolver=broken, delivery=FAST, poll_s=0.05).run(until_idle=True)
    assert store.get("t9").status == "failed"  # type: ignore[union-attr]
    _drive(store, lambda: store.outbox(task_id="t9")[0].state != "pending")
    [n] = store.outbox(task_id="t9")
    assert (n.state, n.key) == ("delivered", "t9:final")
    [(key, body)] = r.got
    assert key == "t9:final" and body["status"] == "failed"
    assert "the model client cannot be built" in body["reason"]


def test_a_receiver_that_never_answers_ends_failed_and_the_outcome_stands(
    store: SqlStore, effect_log: Path, receiver: Callable[..., Receiver]
) -> None:
    r = receiver(hang=True)
    spec = task("t3", effect_log.parent, escalate=True, notify=[{"webhook": {"url": r.url}}])
    submit(spec, store)
    Worker(store, model_resolver=resolve_model, delivery=FAST, deliver_outbox=False).run(
        until_idle=True
    )
    _drive(store, lambda: store.outbox(task_id="t3")[0].state != "pending")
    [n] = store.outbox(task_id="t3")
    assert n.state == "failed" and n.attempts == 3
    assert n.last_error is not None and "timed out" in n.last_error
    assert store.get("t3").status == "escalated"  # type: ignore[union-attr]
    assert {b["status"] for _, b in r.got} == {"escalated"}
    assert r.got[0][1]["escalation"]["task_id"] == "t3"
    store.outbox_retry(n.id)  # `donegate outbox retry` sends it again, from zero attempts
    assert store.outbox(task_id="t3")[0].state == "pending"


def test_worker_default_targets_and_a_command(store: SqlStore, effect_log: Path) -> None:
    out = effect_log.parent / "command.out"
    script = f"import os,sys; open({str(out)!r},'w').write(os.environ['DONEGATE_IDEMPOTENCY_KEY']+' '+sys.argv[1]+' '+sys.stdin.read())"  # noqa: E501
    submit(task("t4", effect_log.parent), store)
    argv = [sys.executable, "-c", script, "{status}:{task_id}:{idempotency_key}"]
    Worker(store, model_resolver=resolve_model, notify=[{"command": argv}], delivery=FAST).run(
        until_idle=True
    )
    key, arg, body = out.read_text().split(" ", 2)
    assert (key, arg) == ("t4:final", "done:t4:t4:final")
    assert json.loads(body)["idempotency_key"] == "t4:final"
    assert store.outbox(task_id="t4")[0].state == "delivered"


def _spawn(
    env: dict[str, str], log: Path, *args: str, held: bool = False
) -> subprocess.Popen[bytes]:
    out = open(log, "ab")  # noqa: SIM115 - lives with the process
    command = held_worker(*args) if held else python_worker(*args)
    return subprocess.Popen(command, env=env, stdout=out, stderr=out)


@pytest.mark.slow
def test_sigkill_after_the_outcome_is_recorded_delivers_after_restart(
    store: SqlStore,
    store_url: str,
    tmp_path: Path,
    effect_log: Path,
    receiver: Callable[..., Receiver],
) -> None:
    r = receiver()
    submit(task("k1", tmp_path, notify=[{"webhook": {"url": r.url}}]), store)
    held = worker_env(tmp_path, effect_log)
    first = _spawn(held, tmp_path / "w1.log", "--db", store_url, "--poll", "0.1", held=True)
    try:
        _until(lambda: store.get("k1").status == "done")  # type: ignore[union-attr]
        assert store.outbox(task_id="k1")[0].state == "pending"
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert r.got == []
    env = worker_env(tmp_path, effect_log)
    second = _spawn(env, tmp_path / "w2.log", "--db", store_url, "--until-idle")
    assert second.wait(60) == 0
    _until(lambda: store.outbox(task_id="k1")[0].state == "delivered")
    assert [k for k, _ in r.got] == ["k1:final"]


@pytest.mark.slow
def test_sigkill_before_the_outcome_delivers_nothing_until_the_task_ends(
    store: SqlStore,
    store_url: str,
    tmp_path: Path,
    effect_log: Path,
    receiver: Callable[..., Receiver],
) -> None:
    r = receiver()
    submit(task("k2", tmp_path, notify=[{"webhook": {"url": r.url}}]), store)
    slow = worker_env(tmp_path, effect_log, **{DELAY_ENV: "30"})  # the send tool hangs
    first = _spawn(slow, tmp_path / "w1.log", "--db", store_url, "--lease", "1")
    try:
        _until(lambda: store.get("k2").status == "running")  # type: ignore[union-attr]
        time.sleep(0.5)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert store.outbox(task_id="k2") == [] and r.got == []
    time.sleep(1.5)  # the lease expires
    env = worker_env(tmp_path, effect_log)
    second = _spawn(env, tmp_path / "w2.log", "--db", store_url, "--until-idle", "--lease", "5")
    assert second.wait(60) == 0
    final = store.get("k2")
    assert final is not None and final.status in ("done", "escalated")
    _until(lambda: bool(r.got))
    [(key, body)] = r.got
    assert key == "k2:final" and body["status"] == final.status


def test_the_cli_notifies_lists_shows_and_retries(
    capsys: pytest.CaptureFixture[str],
    db: str,
    tmp_path: Path,
    receiver: Callable[..., Receiver],
) -> None:
    r = receiver()
    file = write_task(tmp_path, "c1")
    assert run(capsys, "submit", file, "--db", db)[0] == 0
    code, _, err = run(capsys, "worker", "--db", db, "--until-idle", "--notify-webhook", r.url)
    assert code == 0, err
    assert [k for k, _ in r.got] == ["c1:final"]
    code, out, _ = run(capsys, "outbox", "list", "--db", db, "--json")
    [row] = json.loads(out)
    assert (row["task_id"], row["state"], row["target"]) == ("c1", "delivered", r.url)
    code, out, _ = run(capsys, "tasks", "show", "c1", "--db", db)
    assert "notify" in out and "delivered" in out and "c1:final" in out
    assert run(capsys, "outbox", "retry", str(row["id"]), "--db", db)[1].endswith("again\n")
    assert run(capsys, "worker", "--db", db, "--until-idle")[0] == 0
    assert [k for k, _ in r.got] == ["c1:final"] * 2  # re-sent, with the same key
    code, _, err = run(capsys, "outbox", "retry", "99", "--db", db)
    assert (code, err) == (2, "donegate: no notification 99 in the outbox\n")
    code, _, err = run(capsys, "worker", "--db", db, "--notify-webhook", "ftp://x")
    assert code == 2 and "--notify-webhook" in err and err[-1] == "\n" and err.count("\n") == 1


def test_the_dispatch_guide_python_runs_and_its_receiver_dedupes() -> None:
    import re
    import sqlite3

    doc = Path(__file__).resolve().parents[2] / "docs" / "dispatch.md"
    namespace: dict[str, Any] = {"__name__": "docs_dispatch"}
    for block in re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
        exec(compile(block, str(doc), "exec"), namespace)
    db = sqlite3.connect(":memory:")
    once = namespace["record_once"]
    assert [once(db, "t:final", {}), once(db, "t:final", {}), once(db, "u:final", {})] == [
        True,
        False,
        True,
    ]


def test_a_1_mb_certificate_is_delivered_to_a_command_as_a_file(tmp_path: Path) -> None:
    # As argv text a certificate this size is E2BIG and the notice never arrives; as a file
    # path (and on stdin) it is delivered whole.
    certificate = {"kind": "donegate.certificate", "task_id": "big", "pad": "x" * (1 << 20)}
    out = tmp_path / "got.json"
    script = (
        "import json,shutil,sys; a=json.load(open(sys.argv[1])); b=json.load(sys.stdin); "
        f"shutil.copy(sys.argv[1], {str(out)!r}); assert a == b['certificate']"
    )
    n = Notification(
        id=1, task_id="big", generation=1, key="big:final",
        target={"command": [sys.executable, "-c", script, "{certificate_path}"]},
        body={"task_id": "big", "status": "done", "certificate": certificate},
        state="pending", attempts=0, max_attempts=1, next_at=0.0, last_error=None,
        created_at=0.0, delivered_at=None,
    )  # fmt: skip
    assert deliver(n, 60) is None
    assert json.loads(out.read_text()) == certificate and out.stat().st_size > 1 << 20


def test_a_document_in_a_command_argument_is_refused_at_load() -> None:
    with pytest.raises(pydantic.ValidationError, match=r"use \{certificate_path\}"):
        TaskSpec.model_validate(
            {"id": "t", "prompt": "p", "notify": [{"command": ["x", "{certificate}"]}]}
        )
    with pytest.raises(pydantic.ValidationError, match=r"use \{report_path\}"):
        TaskSpec.model_validate(
            {"id": "t", "prompt": "p", "notify": [{"command": ["x", "--r={report}"]}]}
        )


class _GoneStore:
    """An outbox store whose file was replaced: every read fails as the SQL store's does."""

    def __init__(self) -> None:
        self.reads = 0

    def outbox_due(self, now: float) -> list[Notification]:
        self.reads += 1
        raise StoreGone("the store file q.db was replaced under this process")


def test_a_store_fault_is_the_workers_to_report_not_a_second_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = _GoneStore()
    ended: list[Exception] = []

    def ends_delivery(exc: Exception) -> bool:
        ended.append(exc)
        return True

    courier = Courier(store, FAST, ends_delivery=ends_delivery)  # type: ignore[arg-type]
    stop = threading.Event()
    with caplog.at_level("WARNING", logger="donegate.worker.outbox"):
        thread = courier.start(stop)
        thread.join(5)
    alive = thread.is_alive()
    stop.set()
    assert not alive, "delivery went on after its owner took the fault"
    assert store.reads == 1 and [type(e) for e in ended] == [StoreGone]
    assert caplog.records == []
    # without an owner to take it, delivery pauses and says so, and reads again
    with caplog.at_level("WARNING", logger="donegate.worker.outbox"):
        Courier(store, FAST).drain()  # type: ignore[arg-type]
    assert ["outbox delivery paused" in r.getMessage() for r in caplog.records] == [True]


def test_a_worker_stops_on_the_fault_its_courier_met(store: SqlStore) -> None:
    worker = Worker(store)
    courier = worker.courier()
    assert courier.ends_delivery is not None
    assert courier.ends_delivery(StoreGone("the store file q.db was deleted")) is True
    assert isinstance(worker.fault, StoreGone)
    assert courier.ends_delivery(RuntimeError("not the store")) is False
