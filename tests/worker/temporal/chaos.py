"""Temporal chaos: worker processes SIGKILLed mid-task and the dev server restarted once.

`storm` submits a batch of the worker tests' two-turn tasks (every tenth one escalates), starts
each one's workflow, runs `size` ``donegate worker --engine temporal`` processes under the
shared chaos harness with `BusyChaos`'s choice of victim (every kill on a process holding a run,
paced by progress), and SIGKILLs the dev server once, mid-run, starting it again on the same
database. `check` then asserts the invariants from the store, the tool's own effect log and the
certificates, and returns figures for the report. The slow test runs the issue's full size (200
tasks, >= 30 kills); ``bench/temporal.py`` measures throughput and resume latency.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from donegate.harness.certificate import verify_certificate
from donegate.records.status import TASK_TERMINAL as TERMINAL
from donegate.store.sql import SqlStore
from donegate.worker import submit
from tests.worker.chaos import Chaos, _marks, _pid, worker_env
from tests.worker.effects import inside_folder
from tests.worker.helpers import effect_counts, task
from tests.worker.temporal.helpers import temporal_worker
from tests.worker.temporal.server import DevServer


class BusyChaos(Chaos):
    """The chaos harness, killing only a worker that holds a lease, only when a kill is owed.

    A Temporal worker process takes seconds to start on a loaded machine (imports, connecting,
    its first poll); the shared harness's occasional kill of any process would spend the storm
    on workers still starting. Here every kill lands on a run in progress: one inside its side
    effect (between the ledger's begin and its record) where there is one, else one past its
    first journal write, else any; and a run on its first attempt before a resumed one, so the
    storm tests resumes that finish rather than one task's workers lost again and again. Kills
    are paced by progress alone (`min_kills` by 60% of the batch, at most one per `gap_s`): the
    shared harness's extra unowed kills would spend the storm in its first seconds, every
    worker restarting at once, while the first tasks had yet to end.
    """

    gap_s: float = 1.0
    _last: float = 0.0

    def _victim(self, store: SqlStore, rng: random.Random, *, owed: bool) -> int | None:
        if not owed or time.monotonic() - self._last < self.gap_s:
            return None
        alive = [i for i, p in enumerate(self.procs) if p.poll() is None]
        running = [t for t in store.list_tasks(status="running", limit=50) if t.lease_owner]
        fresh = {_pid(t.lease_owner) for t in running if t.attempts <= 1}
        journaled = {_pid(t.lease_owner) for t in running if store.turns(t.id, t.generation)}
        inside = {int(m.name.split("-")[0]) for m in _marks(self.inside)} if self.inside else set()
        busy = [i for i in alive if self.procs[i].pid in {_pid(t.lease_owner) for t in running}]
        for wanted in (inside & fresh, journaled & fresh, fresh):
            pick = [i for i in busy if self.procs[i].pid in wanted]
            if pick:
                break
        else:
            pick = busy
        if not pick:
            return None
        self._last = time.monotonic()
        return rng.choice(pick)


@dataclass(kw_only=True)
class Storm:
    """What a storm did."""

    chaos: Chaos
    took_s: float
    restarted_at: int | None = None
    """Tasks ended when the server was restarted (None: it never was)."""


def start_workflows(address: str, queue: str, ids: list[str], heartbeat_s: float) -> None:
    async def start() -> None:
        from donegate.worker.temporal import Target, connect, start_task

        client = await connect(Target(address=address, task_queue=queue))
        for task_id in ids:
            await start_task(client, task_id, task_queue=queue, heartbeat_s=heartbeat_s)

    asyncio.run(start())


def storm(
    store: SqlStore,
    server: DevServer,
    tmp_path: Path,
    effect_log: Path,
    *,
    total: int,
    min_kills: int,
    max_kills: int,
    timeout_s: float,
    queue: str = "donegate-chaos",
    concurrency: int = 4,
    lease_s: float = 1.0,
    effect_delay_s: float = 1.0,
) -> Storm:
    ids = [f"c{i:03}" for i in range(total)]
    for i, task_id in enumerate(ids):
        submit(task(task_id, tmp_path, escalate=i % 10 == 0), store)
    start_workflows(server.address, queue, ids, heartbeat_s=2 * lease_s)
    chaos = BusyChaos(
        temporal_worker(
            store.url,
            server.address,
            queue,
            "--lease",
            str(lease_s),
            "--concurrency",
            str(concurrency),
        ),
        # a task spends most of its time inside its effect: a kill of a busy worker lands there
        worker_env(tmp_path, effect_log, DONEGATE_TEST_EFFECT_DELAY=str(effect_delay_s)),
        tmp_path / "logs",
        inside=inside_folder(effect_log),
    )
    result = Storm(chaos=chaos, took_s=0.0)
    done = threading.Event()

    def restart_once() -> None:  # the server goes down once, at about 40% of the batch
        while not done.wait(0.2):
            ended = sum(n for s, n in store.counts().items() if s in TERMINAL)
            if ended >= 0.4 * total:
                result.restarted_at = ended
                server.restart()
                return

    restarter = threading.Thread(target=restart_once, daemon=True)
    restarter.start()
    try:
        result.took_s = chaos.run(
            store, total=total, max_kills=max_kills, timeout_s=timeout_s, min_kills=min_kills
        )
    finally:
        done.set()
        restarter.join()
    return result


def check(store: SqlStore, effect_log: Path, result: Storm, total: int) -> dict[str, float]:
    """The invariants: 0 lost, 0 duplicate executions, every certificate verifying."""
    tasks = {t.id: t for t in store.list_tasks(limit=total + 10)}
    assert len(tasks) == total  # 0 lost
    for i in range(total):
        t = tasks[f"c{i:03}"]
        if i % 10 == 0:
            assert t.status == "escalated", (t.id, t.status, t.reason)
        else:
            assert t.status == "done" or (
                t.status == "escalated" and "workers were lost" in (t.reason or "")
            ), (t.id, t.status, t.reason)
    delivered, executed = effect_counts(effect_log)
    keys = {f"c{i:03}:1:0": f"c{i:03}" for i in range(total)}
    assert set(delivered) <= set(keys), set(delivered) - set(keys)
    assert all(n == 1 for n in delivered.values()), delivered.most_common(3)  # none twice
    # none missing: a task's message was delivered unless its workers were all lost before it
    # sent (the store escalates a task after max_attempts lost runs)
    lost = {k for k, t in keys.items() if "workers were lost" in (tasks[t].reason or "")}
    assert set(keys) - set(delivered) <= lost, set(keys) - set(delivered) - lost
    reissued = 0
    for task_id in tasks:
        for effect in store.effects(task_id):
            if f"{task_id}:1:0" in lost and effect["state"] == "begun":  # died inside it, last
                assert executed[effect["key"]] <= effect["issues"], effect
                continue
            assert effect["state"] == "done", effect
            assert 1 <= executed[effect["key"]] <= effect["issues"], effect
            reissued += effect["issues"] - 1
    duplicate_executions = sum(n - 1 for n in executed.values())
    # an execution repeats only as the ledger's re-issue of a call begun and never recorded
    # (under the same key, so the service delivered it once); never a recorded one
    assert duplicate_executions <= reissued, (duplicate_executions, reissued)
    certificates = 0
    for t in tasks.values():
        if t.status == "done":
            assert t.result is not None and t.result.get("certificate"), t.id
            ok, problems = verify_certificate(t.result["certificate"])
            assert ok, (t.id, problems)
            certificates += 1
    runs = [r for t in tasks for r in store.runs(t)]
    lost_runs = sum(1 for r in runs if r.status == "lost")
    assert result.restarted_at is not None, "the dev server was never restarted"
    return {
        "tasks": total,
        "took_s": round(result.took_s, 1),
        "kills": result.chaos.kills,
        "lost_runs": lost_runs,
        "reissued": reissued,
        "duplicate_deliveries": sum(n - 1 for n in delivered.values()),
        "repeated_executions": duplicate_executions,
        "lost_workers_escalations": len(lost),
        "replayed": sum(r.replayed_calls for r in runs),
        "certificates_verified": certificates,
        "restarted_at_ended": result.restarted_at,
        "done": sum(1 for t in tasks.values() if t.status == "done"),
        "escalated": sum(1 for t in tasks.values() if t.status == "escalated"),
    }


def wait_quiet(seconds: float) -> None:
    time.sleep(seconds)
