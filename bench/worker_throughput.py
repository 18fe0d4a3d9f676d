"""Worker throughput and SIGKILL-to-resume latency, with a zero-latency scripted model.

Each task is two turns (one side-effecting tool call, then a text-only claim the gate accepts),
so a task costs: a claim, two journal writes (one per model call, each carrying that call's turn;
the prompt rides with the first), a ledger lookup, begin and record, the gate, a certificate,
and the outcome write (carrying the last step's messages). The side effect
itself takes no time, so the figure is the worker's own overhead.

    .venv/bin/python bench/worker_throughput.py                    # embedded SQLite
    .venv/bin/python bench/worker_throughput.py --postgres URL --redis URL   # + Celery

Figures printed:
* embedded SQLite: tasks/s with N worker processes (`--processes`, default 2) x 2 threads;
* Celery + PostgreSQL: tasks/s with N Celery workers (threads pool);
* resume latency: a worker holding a task is SIGKILLed; seconds until another worker has
  claimed it (the lease timeout plus the claim poll), against the target of lease + 2 s.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from donegate.store import open_store  # noqa: E402 - after the path set-up above
from donegate.store.sql import SqlStore  # noqa: E402
from donegate.tools import tool  # noqa: E402
from donegate.worker import submit  # noqa: E402

SCRIPT = ROOT / "tests" / "worker" / "data" / "send.yaml"


@tool(side_effect=True)
def send(to: str, idempotency_key: str | None = None) -> str:
    """A zero-latency side effect: the bench measures the worker, not a service."""
    return f"sent to {to} ({idempotency_key})"


def _spec(
    task_id: str, workdir: str, tool_path: str = "bench.worker_throughput:send"
) -> dict[str, object]:
    return {
        "id": task_id,
        "prompt": "send ann the news",
        "type": "bench",
        "model": f"script:{SCRIPT}",
        "tools": [{"import": tool_path, "side_effect": True}],
        "workdir": workdir,
    }


def _env(work: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DONEGATE_TEST_EFFECT_LOG": str(work / "effects.log"),
        "DONEGATE_HOME": str(work / "home"),
        **extra,
    }


def _worker(db: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "donegate", "worker", "--db", db, *args]


def _wait_all(store: SqlStore, n: int, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        counts = store.counts()
        if counts.get("done", 0) + counts.get("escalated", 0) + counts.get("failed", 0) >= n:
            return time.monotonic()
        time.sleep(0.01)
    raise SystemExit(f"timed out: {store.counts()}")


def _first_claim(store: SqlStore) -> None:
    while not store.list_tasks(status="running", limit=1) and not store.counts().get("done"):
        time.sleep(0.002)


def embedded(n: int, processes: int, work: Path) -> float:
    db = str(work / "embedded.db")
    store = open_store(db)
    for i in range(n):
        submit(_spec(f"e{i}", str(work)), store)
    procs = [
        subprocess.Popen(
            _worker(db, "--concurrency", "2", "--poll", "0.01", "--until-idle"),
            env=_env(work),
            stderr=subprocess.DEVNULL,
        )
        for _ in range(processes)
    ]
    _first_claim(store)  # measure steady state, not interpreter start-up
    started = time.monotonic()
    ended = _wait_all(store, n, 120)
    for p in procs:
        p.wait(30)
    store.close()
    return n / (ended - started)


def celery(n: int, processes: int, work: Path, postgres: str, redis_url: str) -> float:
    import redis
    import sqlalchemy as sa

    from donegate.worker.celery_app import client, enqueue

    schema = f"bench_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(postgres)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = f"{postgres}{'&' if '?' in postgres else '?'}options=-csearch_path%3D{schema}"
    redis.Redis.from_url(redis_url).flushdb()
    store = open_store(url)
    sender = client(redis_url)
    for i in range(n):
        record, _ = submit(_spec(f"c{i}", str(work)), store)
        enqueue(sender, record.id)
    args = ["--engine", "celery", "--broker", redis_url, "--pool", "threads", "--concurrency", "4"]
    procs = [
        subprocess.Popen(
            _worker(url, *args),
            env=_env(work),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(processes)
    ]
    try:
        _first_claim(store)
        started = time.monotonic()
        ended = _wait_all(store, n, 300)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(30)
        store.close()
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    return n / (ended - started)


def resume_latency(work: Path, lease_s: float) -> float:
    """SIGKILL a worker mid-task; seconds until another worker has the task."""
    db = str(work / "resume.db")
    store = open_store(db)
    submit(_spec("r", str(work), "tests.worker.effects:send"), store)
    slow = _env(work, DONEGATE_TEST_EFFECT_DELAY="60")  # the effect hangs: kill it mid-effect
    first = subprocess.Popen(
        _worker(db, "--lease", str(lease_s), "--poll", "0.05"),
        env=slow,
        start_new_session=True,
        stderr=subprocess.DEVNULL,
    )
    second = None
    try:
        while not store.effects("r"):
            time.sleep(0.01)
        epoch = store.get("r").lease_epoch  # type: ignore[union-attr]
        second = subprocess.Popen(
            _worker(db, "--lease", str(lease_s), "--poll", "0.05"),
            env=_env(work),
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)  # let the second worker start up before the crash
        os.killpg(first.pid, signal.SIGKILL)
        killed = time.monotonic()
        while (record := store.get("r")) is not None and record.lease_epoch == epoch:
            time.sleep(0.005)
        return time.monotonic() - killed
    finally:
        first.wait()
        if second is not None:
            second.terminate()
            second.wait(30)
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--lease", type=float, default=5.0)
    parser.add_argument("--postgres", default=os.environ.get("DONEGATE_TEST_POSTGRES_URL"))
    parser.add_argument("--redis", default=os.environ.get("DONEGATE_TEST_REDIS_URL"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rate = embedded(args.tasks, args.processes, work)
        print(
            f"embedded SQLite: {rate:.0f} tasks/s "
            f"({args.tasks} two-turn tasks, {args.processes} processes x 2 threads, "
            f"{os.cpu_count()} cores)"
        )
        if args.postgres and args.redis:
            rate = celery(args.tasks, args.processes, work, args.postgres, args.redis)
            print(
                f"Celery + PostgreSQL: {rate:.0f} tasks/s "
                f"({args.tasks} tasks, {args.processes} workers x 4 threads)"
            )
        else:
            print("Celery + PostgreSQL: skipped (pass --postgres URL --redis URL)")
        latency = resume_latency(work, args.lease)
        print(
            f"SIGKILL to resume: {latency:.2f} s with a {args.lease:g} s lease "
            f"(target: lease + 2 s = {args.lease + 2:g} s)"
        )


if __name__ == "__main__":
    main()
