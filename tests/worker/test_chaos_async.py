"""Chaos on the async worker: processes holding tens of tasks each, SIGKILLed at random.

The harness and the tasks are `test_chaos`'s (`tests.worker.chaos`); the workers run
``--mode async`` with many tasks in flight each, so one kill loses every run it held at once.
The invariants: no task lost (each ends done or escalated), no side effect delivered twice, every
task that ended done delivered its message exactly once, and no effect executed more often than
the ledger began it. A task escalated because its workers kept dying may not have sent (a kill
can land before its send): that one delivers at most once. ``bench/chaos_inflight.py`` runs the
1,000-task, 50-kill version.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from donegate.store.sql import SqlStore, open_store
from donegate.worker import submit
from tests.worker.chaos import Chaos, _group, _pid, python_worker, worker_env
from tests.worker.helpers import effect_counts, task

TASKS = 200
MIN_KILLS = 8


def check_invariants(store: SqlStore, effect_log: Path, total: int) -> dict[str, int]:
    """0 lost, 0 duplicate effects; the figures for the report."""
    tasks = {t.id: t for t in store.list_tasks(limit=total + 10)}
    assert len(tasks) == total  # 0 lost
    statuses = {t.status for t in tasks.values()}
    assert statuses <= {"done", "escalated"}, statuses
    delivered, executed = effect_counts(effect_log)
    assert max(delivered.values()) == 1  # 0 duplicate side effects
    for t in tasks.values():
        if t.status == "done":
            assert delivered[f"{t.id}:1:0"] == 1, t.id
        else:
            assert t.id.endswith("0") or "workers were lost" in (t.reason or ""), (t.id, t.reason)
    for task_id in tasks:
        for effect in store.effects(task_id):
            if effect["state"] == "done":
                assert 1 <= executed[effect["key"]] <= effect["issues"], effect
    runs = [r for t in tasks for r in store.runs(t)]
    return {
        "done": sum(1 for t in tasks.values() if t.status == "done"),
        "lost_runs": sum(1 for r in runs if r.status == "lost"),
        "replayed": sum(r.replayed_calls for r in runs),
    }


class BusyChaos(Chaos):
    """`Chaos` that kills only processes holding runs: a worker takes seconds to start on a
    loaded machine, and the harness's idle kills (15% of looks) kept every worker starting."""

    def _victim(self, store: SqlStore, rng: random.Random, *, owed: bool) -> int | None:
        alive = [i for i, p in enumerate(self.procs) if p.poll() is None]
        owners = {t.lease_owner for t in store.list_tasks(status="running", limit=50)}
        groups = {_group(_pid(o)) for o in owners if o}
        busy = [i for i in alive if self.procs[i].pid in groups]
        if busy and (owed or rng.random() < 0.3):
            return rng.choice(busy)
        return None


def submit_batch(store: SqlStore, workdir: Path, total: int, latency: float = 2.0) -> None:
    """`total` send tasks whose model takes `latency` s a turn, so a kill finds runs in flight."""
    script = workdir / "slow-send.yaml"
    script.write_text(
        f"tools:\n  send: {{returns: sent, side_effect: true}}\nturns:\n"
        f"  - {{latency: {latency}, tool_call: send, args: {{to: ann}}}}\n"
        f"  - {{latency: {latency}, text: Sent the message to ann.}}\n"
    )
    for i in range(total):
        spec = task(f"c{i:04}", workdir, escalate=i % 10 == 0, model=f"script:{script}")
        submit(spec, store)


def async_workers(db: Path, concurrency: int) -> list[str]:
    return python_worker(
        "--db", str(db), "--mode", "async", "--concurrency", str(concurrency),
        "--lease", "2", "--poll", "0.05",
    )  # fmt: skip


@pytest.mark.slow
def test_async_workers_killed_at_random(tmp_path: Path, effect_log: Path) -> None:
    db = tmp_path / "chaos.db"
    store = open_store(db)
    submit_batch(store, tmp_path, TASKS)
    chaos = BusyChaos(async_workers(db, 50), worker_env(tmp_path, effect_log), tmp_path / "logs")
    took = chaos.run(store, total=TASKS, max_kills=60, timeout_s=400, min_kills=MIN_KILLS)
    figures = check_invariants(store, effect_log, TASKS)
    assert chaos.kills >= MIN_KILLS and figures["lost_runs"] >= 3, (chaos.kills, figures)
    print(f"\nasync chaos: {TASKS} tasks in {took:.1f}s, {chaos.kills} kills, {figures}")
    store.close()
