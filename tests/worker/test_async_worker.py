"""`AsyncWorker`: many tasks in flight as coroutines on one event loop, with the thread worker's
journal, ledger and resume.

No clock is read: the in-flight test holds every model call at a barrier that opens only once
all the tasks are waiting on their models at the same time, on the same thread.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from donegate.cli import main
from donegate.cli._store import resolve_model
from donegate.models.base import Model
from donegate.store.sql import SqlStore, open_store
from donegate.testing.player import ScriptedModel
from donegate.testing.script import load_script, parse_script
from donegate.worker import ModelResolver, Worker, submit
from donegate.worker.aservice import AsyncWorker
from tests.worker.helpers import (
    SEND_SCRIPT,
    Killed,
    StepModel,
    effect_counts,
    task,
    text_turn,
    tool_turn,
)

IN_FLIGHT = 40


def slow_send() -> dict[str, object]:
    """The send script with both turns answered after 2 s (never slept here: see `barrier`)."""
    data = {"tools": {"send": {"returns": "sent", "side_effect": True}}}
    turns = load_script(SEND_SCRIPT).turns
    assert len(turns) == 2
    data["turns"] = [
        {"latency": 2, "tool_call": "send", "args": {"to": "ann"}},
        {"latency": 2, "text": "Sent the message to ann."},
    ]
    return data


class Barrier:
    """Every latency wait of the first turn parks here until `parties` runs are parked at once."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.waiting = 0
        self.threads: set[int] = set()
        self.opened: asyncio.Event | None = None
        self.most = 0

    async def wait(self, seconds: float) -> None:
        assert seconds == 2.0
        self.threads.add(threading.get_ident())
        if self.opened is None:
            self.opened = asyncio.Event()
        self.waiting += 1
        self.most = max(self.most, self.waiting)
        if self.waiting >= self.parties:
            self.opened.set()
        try:  # a worker that ran them one at a time never opens it: fail, don't hang
            await asyncio.wait_for(self.opened.wait(), 60)
        finally:
            self.waiting -= 1


def barrier_resolver(barrier: Barrier) -> ModelResolver:
    script = parse_script(slow_send(), source="slow-send.yaml")

    def resolve(name: str, what: str) -> Model:
        player = ScriptedModel(script, name="script:slow-send")
        player.asleep = barrier.wait
        player.sleep = lambda s: pytest.fail("a blocking sleep on the async worker")
        return player

    return resolve


def test_every_task_waits_on_its_model_at_once_on_one_thread(
    store: SqlStore, effect_log: Path
) -> None:
    for i in range(IN_FLIGHT):
        submit(task(f"t{i}", effect_log.parent), store)
    barrier = Barrier(IN_FLIGHT)
    worker = AsyncWorker(store, concurrency=IN_FLIGHT, model_resolver=barrier_resolver(barrier))
    stats = worker.run(until_idle=True)
    assert stats.finished == {"done": IN_FLIGHT}, stats
    assert barrier.most == IN_FLIGHT  # all in flight together
    assert len(barrier.threads) == 1  # ...as coroutines of one thread, not a thread each
    delivered, executed = effect_counts(effect_log)
    assert delivered == executed == {f"t{i}:1:0": 1 for i in range(IN_FLIGHT)}
    assert {r.status for t in store.list_tasks() for r in store.runs(t.id)} == {"done"}


def test_max_tasks_and_concurrency_bound_the_claims(store: SqlStore, effect_log: Path) -> None:
    for i in range(5):
        submit(task(f"t{i}", effect_log.parent), store)
    worker = AsyncWorker(store, concurrency=2, model_resolver=resolve_model)
    assert worker.run(until_idle=True, max_tasks=3).finished == {"done": 3}
    assert sorted(t.status for t in store.list_tasks()) == ["done"] * 3 + ["pending"] * 2


def test_a_task_killed_on_the_thread_worker_resumes_on_the_async_one(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    first = StepModel([tool_turn("send", {"to": "ann"}, "c1"), Killed()])
    with pytest.raises(Killed):
        Worker(store, lease_s=0.1, model_resolver=lambda n, w: first.model).run_one()
    time.sleep(0.15)  # the dead worker's lease runs out
    resumed = StepModel([text_turn("Sent.")], first=2)
    stats = AsyncWorker(store, model_resolver=lambda n, w: resumed.model).run(until_idle=True)
    assert stats.finished == {"done": 1}
    assert len(resumed.requests) == 1  # step 1 came from the journal, not the model
    delivered, executed = effect_counts(effect_log)
    assert delivered == executed == {"t:1:0": 1}  # the effect ran once, across both workers
    assert [r.status for r in store.runs("t")] == ["lost", "done"]


def test_a_task_it_cannot_run_fails_with_one_line(store: SqlStore, effect_log: Path) -> None:
    submit(task("t", effect_log.parent, model="script:/nowhere/none.yaml"), store)
    stats = AsyncWorker(store, model_resolver=resolve_model).run(until_idle=True)
    assert stats.finished == {"failed": 1}
    record = store.get("t")
    assert record is not None and record.status == "failed"
    assert "no such script file" in (record.reason or "") and "\n" not in (record.reason or "")


# -- the command -----------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path, effect_log: Path) -> Iterator[str]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield str(tmp_path / "queue.db")
    for s, handler in saved.items():
        signal.signal(s, handler)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def test_the_command_runs_thousands_in_async_mode_only(
    capsys: pytest.CaptureFixture[str], db: str, effect_log: Path
) -> None:
    code, err = run(capsys, "worker", "--db", db, "--concurrency", "2000", "--until-idle")
    assert code == 2 and err.count("\n") == 1 and "--mode async" in err, err
    code, err = run(capsys, "worker", "--db", db, "--mode", "async", "--engine", "celery")
    assert code == 2 and err.count("\n") == 1 and "--engine embedded" in err, err
    store = open_store(db)
    submit(task("t", effect_log.parent), store)
    args = ("worker", "--db", db, "--mode", "async", "--concurrency", "2000", "--until-idle")
    assert run(capsys, *args)[0] == 0
    record = store.get("t")
    assert record is not None and record.status == "done"
    store.close()
