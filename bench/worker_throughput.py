"""Worker throughput (embedded SQLite; Celery + PostgreSQL + Redis against bare Celery) and
SIGKILL-to-resume latency, with zero-latency scripted models.

Two tasks (`--task`):

* ``realistic`` (the target's task): the task offers the four built-in tools (``read_file``,
  ``write_file``, ``list_dir``, ``run_command``) and has one ``run: true`` check; the scripted
  model (``bench/data/realistic.yaml``) calls each tool once over two turns (``run_command``
  runs ``true``), then claims completion; the gate runs the check and a signed certificate is
  written. Each task has a workdir of its own holding the ``notes.txt`` it reads.
* ``minimal``: two turns, one side-effecting user tool that does nothing, no check (the task
  the previous rounds measured): the worker's own overhead with little harness work.

    .venv/bin/python bench/worker_throughput.py                    # embedded SQLite
    .venv/bin/python bench/worker_throughput.py --postgres URL --redis URL   # + Celery

The Celery cases flush the Redis database they are given: on a Redis that tests share, pass a
database of the bench's own (``--redis redis://HOST:PORT/13``).

Figures printed (steady state: timed from the first task done to the last, for donegate's
worker and its baselines alike, over the tasks done in that window):
* embedded SQLite: tasks/s with N worker processes (`--processes`, default 2) x M threads
  (`--threads`, default 2),
  against the target of 300/s for the realistic task;
* Celery: a bare Celery round trip (a trivial task on the same broker, same app settings, same
  pool, processes and concurrency, that only counts itself in Redis), then donegate's minimal
  and realistic tasks through ``donegate worker --engine celery`` on PostgreSQL, then bare again;
  each donegate rate as a ratio of the mean bare rate (target >= 0.6x); and, as an extra line,
  each task's agent work run in a bare Celery task with no store (`celery_agent`: ``run_task``
  on the spec the message carries), which says what donegate's worker layer itself costs;
* resume latency: a worker holding a task is SIGKILLed; seconds until another worker has
  claimed it (the lease timeout plus the claim poll), against the target of lease + 2 s.

CPU figures are the worker processes' user + system time per task over the same steady state,
the programs they ran (``run_command``, the check) included.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from donegate.store import open_store  # noqa: E402 - after the path set-up above
from donegate.store.sql import SqlStore  # noqa: E402
from donegate.tools import tool  # noqa: E402
from donegate.worker import submit  # noqa: E402

SEND = ROOT / "tests" / "worker" / "data" / "send.yaml"
REALISTIC = ROOT / "bench" / "data" / "realistic.yaml"
BARE_TASK = "bench.bare_round_trip"
AGENT_TASK = "bench.agent_in_celery"
COUNTER = "bench:bare:done"
CELERY_THREADS = 4


@tool(side_effect=True)
def send(to: str, idempotency_key: str | None = None) -> str:
    """A zero-latency side effect: the bench measures the worker, not a service."""
    return f"sent to {to} ({idempotency_key})"


def _spec(kind: str, task_id: str, work: Path, tool_path: str = "") -> dict[str, object]:
    if kind == "minimal":
        return {
            "id": task_id,
            "prompt": "send ann the news",
            "type": "bench",
            "model": f"script:{SEND}",
            "tools": [{"import": tool_path or "bench.worker_throughput:send", "side_effect": True}],
            "workdir": str(work),
            "closure": "model",
        }
    workdir = work / "workdirs" / task_id
    workdir.mkdir(parents=True)
    (workdir / "notes.txt").write_text("the release is on Friday\n")
    return {
        "id": task_id,
        "prompt": "Summarise notes.txt into out.txt.",
        "type": "bench",
        "model": f"script:{REALISTIC}",
        "tools": ["read_file", "write_file", "list_dir", "run_command"],
        "checks": [{"run": "true"}],
        "workdir": str(workdir),
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


def _cpu(procs: list[subprocess.Popen[bytes]], last: dict[int, float]) -> float:
    """CPU seconds the worker processes used so far, the programs they ran and reaped included.

    A process that exited keeps the last figure read (`last`, by pid).
    """
    for p in procs:
        try:
            t = psutil.Process(p.pid).cpu_times()
        except psutil.Error:
            continue
        last[p.pid] = t.user + t.system + t.children_user + t.children_system
    return sum(last.values())


class Rate:
    """Tasks per second over the steady state, and the workers' CPU per task over it."""

    def __init__(self, n: int, started: float, ended: float, cpu_s: float) -> None:
        self.n, self.per_s, self.cpu_ms = n, n / (ended - started), cpu_s / n * 1000

    def __str__(self) -> str:
        cores = os.cpu_count() or 1
        ceiling = cores / (self.cpu_ms / 1000) if self.cpu_ms > 0 else float("inf")
        return (
            f"{self.per_s:.0f} tasks/s, {self.cpu_ms:.1f} ms CPU/task "
            f"(CPU-bound ceiling on {cores} idle cores: {ceiling:.0f}/s)"
        )


def _measure(
    done: Callable[[], int], n: int, procs: list[subprocess.Popen[bytes]], timeout: float = 60
) -> Rate:
    """Rate from the first count seen to the n-th done, with the CPU between, over the tasks
    counted in that window (`n` less the count at its start)."""
    last: dict[int, float] = {}
    started: float | None = None
    cpu, first = 0.0, 0
    seen, moved = -1, time.monotonic()
    while time.monotonic() - moved < timeout:  # no progress for `timeout` seconds: give up
        count = done()
        if count != seen:
            seen, moved = count, time.monotonic()
        if started is None and count:
            started, cpu, first = time.monotonic(), _cpu(procs, last), count
        if count >= n:
            ended = time.monotonic()
            return Rate(max(n - first, 1), started or ended, ended, _cpu(procs, last) - cpu)
        time.sleep(0.01)
    raise SystemExit(f"no progress for {timeout:g} s at {seen} of {n} done")


def _finished(store: SqlStore) -> Callable[[], int]:
    """Tasks ended, plus 1 while the first is merely running (the steady state starts there)."""

    def count() -> int:
        counts = store.counts()
        ended = counts.get("done", 0) + counts.get("escalated", 0) + counts.get("failed", 0)
        return ended or min(1, counts.get("running", 0))

    return count


def _ended(store: SqlStore) -> Callable[[], int]:
    """Tasks ended: the worker cases' counter, started where their like-for-like baselines'
    counters start (at the first task done), so neither window holds the other's warm-up (a
    process's first task parses the script and imports the run path)."""

    def count() -> int:
        counts = store.counts()
        return counts.get("done", 0) + counts.get("escalated", 0) + counts.get("failed", 0)

    return count


def _check_done(store: SqlStore, kind: str, n: int, home: Path) -> None:
    counts = store.counts()
    if counts.get("done", 0) != n:
        raise SystemExit(f"not every task was done: {counts}")
    certificates = len(list((home / "certificates").glob("*.json")))
    if kind == "realistic" and certificates < n:
        raise SystemExit(f"{certificates} certificates for {n} tasks")


def embedded(kind: str, n: int, processes: int, work: Path, threads: int = 2) -> Rate:
    db = str(work / f"embedded-{kind}.db")
    store = open_store(db)
    for i in range(n):
        submit(_spec(kind, f"e{kind[0]}{i}", work), store)
    procs = [
        subprocess.Popen(
            _worker(db, "--concurrency", str(threads), "--poll", "0.01", "--until-idle"),
            env=_env(work, DONEGATE_HOME=str(work / f"home-embedded-{kind}")),
            stderr=subprocess.DEVNULL,
        )
        for _ in range(processes)
    ]
    rate = _measure(_ended(store), n, procs)
    for p in procs:
        p.wait(60)
    _check_done(store, kind, n, work / f"home-embedded-{kind}")
    store.close()
    return rate


def _celery_args(broker: str) -> list[str]:
    return ["--broker", broker, "--pool", "threads", "--concurrency", str(CELERY_THREADS)]


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait(60)


def celery_donegate(
    kind: str, n: int, processes: int, work: Path, *, postgres: str, redis_url: str
) -> Rate:
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
        record, _ = submit(_spec(kind, f"c{kind[0]}{i}", work), store)
        enqueue(sender, record.id)
    args = ["--engine", "celery", *_celery_args(redis_url)]
    procs = [
        subprocess.Popen(
            _worker(url, *args),
            env=_env(work, DONEGATE_HOME=str(work / f"home-celery-{kind}")),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(processes)
    ]
    try:
        rate = _measure(_ended(store), n, procs)
    finally:
        _stop(procs)
    try:
        _check_done(store, kind, n, work / f"home-celery-{kind}")
        return rate
    finally:
        store.close()
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def bare_app(broker: str) -> Any:
    """donegate's Celery settings (`client`) with two tasks of the bench's own: one trivial,
    that only counts itself in Redis; one that runs a task's agent work in process, with no
    store (`donegate.harness.run_task` on the spec the message carries), then counts itself."""
    import redis

    from donegate.worker.celery_app import client

    app = client(broker)
    counter = redis.Redis.from_url(broker)

    @app.task(name=BARE_TASK, shared=False)  # type: ignore[untyped-decorator]
    def bare(i: int) -> None:
        counter.incr(COUNTER)

    @app.task(name=AGENT_TASK, shared=False)  # type: ignore[untyped-decorator]
    def agent(spec: dict[str, Any]) -> None:
        run_agent_work(spec)
        counter.incr(COUNTER)

    return app


def run_agent_work(spec: dict[str, Any]) -> None:
    """A task's agent work with no worker layer: `run_task` on the spec, which must end done."""
    from donegate.cli._store import resolve_model
    from donegate.harness import run_task
    from donegate.harness.spec import validate_task

    task = validate_task(spec)
    assert task.model is not None
    result = run_task(task, model=resolve_model(task.model))
    if result.status != "done":
        raise RuntimeError(f"task {task.id}: {result.status}: {result.reason}")


def bare_worker(broker: str) -> None:
    """The bare worker process: the same `worker_main` arguments ``donegate worker`` passes."""
    from donegate.worker.celery_app import QUEUE

    bare_app(broker).worker_main(
        [
            "worker",
            f"--concurrency={CELERY_THREADS}",
            "--pool=threads",
            f"--queues={QUEUE}",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )


def celery_bare(n: int, processes: int, work: Path, redis_url: str) -> Rate:
    import redis

    from donegate.worker.celery_app import QUEUE

    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    sender = bare_app(redis_url)
    for i in range(n):  # as `enqueue` sends donegate's messages
        sender.send_task(BARE_TASK, args=[i], queue=QUEUE, task_id=f"b{i}:{uuid.uuid4().hex}")
    command = [sys.executable, __file__, "--bare-worker", redis_url]
    procs = [
        subprocess.Popen(
            command, env=_env(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(processes)
    ]
    try:
        rate = _measure(lambda: int(r.get(COUNTER) or 0), n, procs)
    finally:
        _stop(procs)
    return rate


def celery_agent(kind: str, n: int, processes: int, work: Path, redis_url: str) -> Rate:
    """The like-for-like baseline: the same agent work in a bare Celery task, no worker layer.

    Each message carries the task's spec; the bare worker (`bare_app`, same settings, pool,
    processes and threads) runs it with `run_task` (certificates under its own data directory)
    and counts it. What donegate adds on top of this is its worker layer: the store (claim,
    journal, ledger, outcome), leases and heartbeats, the outbox.
    """
    import redis

    from donegate.worker.celery_app import QUEUE

    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    sender = bare_app(redis_url)
    for i in range(n):
        spec = _spec(kind, f"a{kind[0]}{i}", work)
        sender.send_task(AGENT_TASK, args=[spec], queue=QUEUE, task_id=f"a{i}:{uuid.uuid4().hex}")
    home = work / f"home-agent-{kind}"
    command = [sys.executable, __file__, "--bare-worker", redis_url]
    procs = [
        subprocess.Popen(
            command,
            env=_env(work, DONEGATE_HOME=str(home)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(processes)
    ]
    try:
        rate = _measure(lambda: int(r.get(COUNTER) or 0), n, procs)
    finally:
        _stop(procs)
    certificates = len(list((home / "certificates").glob("*.json")))
    if certificates < n:
        raise SystemExit(f"{certificates} certificates for {n} tasks run in bare Celery")
    return rate


def embedded_agent(kind: str, n: int, processes: int, work: Path, threads: int = 2) -> Rate:
    """The embedded like-for-like baseline: the same agent work, no worker layer.

    The same processes and threads as `embedded` run the same tasks' agent work with
    `run_task` (certificates under their own data directory), each process its share of the
    specs, with no store: no claim, journal, ledger, outcome, lease or outbox. Each task done
    appends a byte to a counter file.
    """
    specs = [_spec(kind, f"l{kind[0]}{i}", work) for i in range(n)]
    shares = work / f"agent-{kind}.json"
    shares.write_text(json.dumps([specs[i::processes] for i in range(processes)]))
    counter = work / f"agent-{kind}.count"
    counter.write_bytes(b"")
    home = work / f"home-embedded-agent-{kind}"
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--agent-worker", f"{shares}:{i}:{threads}:{counter}"],
            env=_env(work, DONEGATE_HOME=str(home)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(processes)
    ]
    try:
        rate = _measure(lambda: counter.stat().st_size, n, procs)
    finally:
        for p in procs:
            p.wait(60)
    if (certificates := len(list((home / "certificates").glob("*.json")))) < n:
        raise SystemExit(f"{certificates} certificates for {n} tasks run with no store")
    return rate


def agent_worker(argument: str) -> None:
    """One process of `embedded_agent`: its share of the specs on `threads` threads."""
    from concurrent.futures import ThreadPoolExecutor

    shares, index, threads, counter = argument.split(":")
    specs = json.loads(Path(shares).read_text())[int(index)]
    fd = os.open(counter, os.O_WRONLY | os.O_APPEND)

    def one(spec: dict[str, Any]) -> None:
        run_agent_work(spec)
        os.write(fd, b".")

    with ThreadPoolExecutor(int(threads)) as pool:
        list(pool.map(one, specs))


def resume_latency(work: Path, lease_s: float) -> float:
    """SIGKILL a worker mid-task; seconds until another worker has the task."""
    db = str(work / "resume.db")
    store = open_store(db)
    submit(_spec("minimal", "r", work, "tests.worker.effects:send"), store)
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


def _celery_report(args: argparse.Namespace, work: Path, kinds: list[str]) -> None:
    n, procs = args.tasks, args.processes
    shape = f"{n} tasks, {procs} workers x {CELERY_THREADS} threads"
    before = celery_bare(n, procs, work, args.redis)
    print(f"bare Celery round trip (before): {before} ({shape})", flush=True)
    rates = {
        k: celery_donegate(k, n, procs, work, postgres=args.postgres, redis_url=args.redis)
        for k in kinds
    }
    agents = {k: celery_agent(k, n, procs, work, args.redis) for k in kinds}
    after = celery_bare(n, procs, work, args.redis)
    print(f"bare Celery round trip (after): {after}")
    bare = (before.per_s + after.per_s) / 2
    for kind, rate in rates.items():
        print(
            f"Celery + PostgreSQL, {kind} task: {rate} ({shape}) = {rate.per_s / bare:.2f}x "
            f"the bare round trip ({bare:.0f}/s; target >= 0.6x)"
        )
    for kind, agent in agents.items():
        rate = rates[kind]
        print(
            f"like-for-like: the {kind} task's agent work in a bare Celery task (run_task, no "
            f"store): {agent}; donegate's worker = {rate.per_s / agent.per_s:.2f}x its rate, "
            f"{rate.cpu_ms - agent.cpu_ms:+.1f} ms CPU/task for the worker layer"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2, help="Embedded: threads per process.")
    parser.add_argument("--lease", type=float, default=5.0)
    parser.add_argument("--task", choices=["realistic", "minimal", "both"], default="both")
    parser.add_argument("--postgres", default=os.environ.get("DONEGATE_TEST_POSTGRES_URL"))
    parser.add_argument("--redis", default=os.environ.get("DONEGATE_TEST_REDIS_URL"))
    parser.add_argument("--no-resume", action="store_true", help="Skip the SIGKILL case.")
    parser.add_argument("--no-embedded", action="store_true", help="Skip the embedded case.")
    parser.add_argument("--bare-worker", metavar="BROKER", help=argparse.SUPPRESS)
    parser.add_argument("--agent-worker", metavar="SHARE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_worker:
        bare_worker(args.bare_worker)
        return
    if args.agent_worker:
        agent_worker(args.agent_worker)
        return
    kinds = ["realistic", "minimal"] if args.task == "both" else [args.task]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for kind in [] if args.no_embedded else kinds:
            rate = embedded(kind, args.tasks, args.processes, work, args.threads)
            target = " (target >= 300/s)" if kind == "realistic" else ""
            print(
                f"embedded SQLite, {kind} task: {rate}{target} "
                f"({args.tasks} tasks, {args.processes} processes x {args.threads} threads, "
                f"{os.cpu_count()} cores)",
                flush=True,
            )
            agent = embedded_agent(kind, args.tasks, args.processes, work, args.threads)
            print(
                f"  like-for-like: the same agent work with no store (run_task, same processes "
                f"and threads): {agent}; donegate's worker = {rate.per_s / agent.per_s:.2f}x "
                f"its rate, {rate.cpu_ms - agent.cpu_ms:+.1f} ms CPU/task for the worker layer",
                flush=True,
            )
        if args.postgres and args.redis:
            _celery_report(args, work, kinds)
        else:
            print("Celery + PostgreSQL: skipped (pass --postgres URL --redis URL)")
        if not args.no_resume:
            latency = resume_latency(work, args.lease)
            print(
                f"SIGKILL to resume: {latency:.2f} s with a {args.lease:g} s lease "
                f"(target: lease + 2 s = {args.lease + 2:g} s)"
            )


if __name__ == "__main__":
    main()
