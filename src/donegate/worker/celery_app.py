"""The Celery engine: Redis carries "run task X" messages; the shared store decides who runs X.

Messages are acknowledged late (``acks_late``) and given back when a pool process dies
(``task_reject_on_worker_lost``), so a task whose worker was killed is delivered again. Redis
also redelivers a message whose task outlives the visibility timeout while its first worker is
still running it; that copy finds the task leased (`TaskStore.claim_task` returns None) and is
dropped. A lease, never a message, is what lets a worker run a task, so no two workers run one.

A message can still vanish (a copy dropped while the lease holder later dies, a flushed broker):
every worker process runs a reaper that returns expired leases to pending and sends a fresh
message for them, and for pending tasks nobody touched for a while. Beside it runs a `Courier`
that delivers the outbox (the notifications written with each outcome), as an embedded worker's
does.

Each pool process keeps one store (a pool of ``pool_size`` connections, enough for the pool's
threads plus the heartbeat, so no transaction opens a connection of its own) and one `Worker`.

Needs ``pip install "donegate[celery]"`` (``celery[redis]``) and, for several machines, a
PostgreSQL store they all reach.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from donegate.errors import MissingExtra
from donegate.spend import load_prices
from donegate.store import open_store
from donegate.worker.outbox import Courier, Delivery
from donegate.worker.service import ModelResolver, Observer, Worker, default_resolver

if TYPE_CHECKING:
    from celery import Celery

    from donegate.store.sql import SqlStore

__all__ = ["QUEUE", "TASK_NAME", "client", "enqueue", "make_app"]

log = logging.getLogger("donegate.worker.celery")

TASK_NAME = "donegate.run_task"
"""The Celery task that runs one stored task by id."""
QUEUE = "donegate"
"""The queue its messages go to."""


def _celery() -> tuple[Any, Any]:
    try:
        import celery
        from celery import signals
    except ImportError:
        raise MissingExtra("celery", "celery") from None
    return celery, signals


class _Process:
    """Per-process state: a pool process opens its own store after the fork, lazily."""

    def __init__(
        self,
        *,
        db: str,
        lease_s: float,
        resolver: ModelResolver,
        output_dir: str | None,
        observers: Sequence[Observer],
        patience_s: float = 0.0,
        pool_size: int = 5,
        notify: Sequence[Mapping[str, Any]] = (),
        delivery: Delivery | None = None,
    ) -> None:
        self.db, self.lease_s, self.resolver = db, lease_s, resolver
        self.output_dir, self.observers, self.patience_s = output_dir, observers, patience_s
        self.pool_size, self.notify, self.delivery = pool_size, notify, delivery or Delivery()
        self._pid: int | None = None
        self._worker: Worker | None = None
        self._lock = threading.Lock()

    def worker(self) -> Worker:
        with self._lock:
            if self._worker is not None and self._worker.fault is not None:
                log.error(
                    "worker %s stopped: %s; starting afresh", self._worker.id, self._worker.fault
                )
                self._worker.store.close()
                self._worker = None
            if self._worker is None or self._pid != os.getpid():
                store = open_store(self.db, patience_s=self.patience_s, pool_size=self.pool_size)
                self._worker = Worker(
                    store,
                    lease_s=self.lease_s,
                    model_resolver=self.resolver,
                    output_dir=self.output_dir,
                    observers=self.observers,
                    notify=self.notify,
                    delivery=self.delivery,
                    deliver_outbox=False,  # the process's courier does (`_Reaper`)
                )
                store.keep_reserve()
                load_prices()  # slow to import: before this process's first claim
                self._worker.start_heartbeat(threading.Event())
                self._pid = os.getpid()
            return self._worker


def make_app(
    *,
    broker: str,
    db: str,
    lease_s: float = 30.0,
    visibility_timeout: float | None = None,
    model_resolver: ModelResolver = default_resolver,
    output_dir: str | None = None,
    observers: Sequence[Observer] = (),
    reap_every_s: float | None = None,
    store_patience_s: float = 0.0,
    pool_size: int = 5,
    notify: Sequence[Mapping[str, Any]] = (),
    delivery: Delivery | None = None,
) -> Celery:
    """A Celery app whose one task runs stored tasks under the store's leases.

    `visibility_timeout` (default: 4 leases, at least 60 s) is how long Redis waits before it
    redelivers an unacknowledged message; keep it above `lease_s` so a killed worker's lease has
    expired by the time its message comes back. `store_patience_s` is how long each process
    retries a store that stopped answering; a process whose worker stopped on a fault opens a
    fresh one for its next message. `pool_size` is each process's store connections (its
    threads plus two); `notify` the targets of every task's end after the spec's own, delivered
    with `delivery`'s attempts and backoff.
    """
    _, signals = _celery()
    visibility = visibility_timeout or max(60.0, 4 * lease_s)
    app = client(broker, visibility_timeout=visibility)
    state = _Process(
        db=db,
        lease_s=lease_s,
        resolver=model_resolver,
        output_dir=output_dir,
        observers=observers,
        patience_s=store_patience_s,
        pool_size=pool_size,
        notify=notify,
        delivery=delivery,
    )

    @app.task(name=TASK_NAME, shared=False)  # type: ignore[untyped-decorator]
    def run_stored_task(task_id: str) -> str:
        worker = state.worker()
        lease = worker.store.claim_task(task_id, worker.id, lease_s)
        if lease is None:
            return "skipped: leased elsewhere or ended"
        outcome = worker.execute(lease)
        return outcome.status if outcome is not None else "lease lost"

    reaper = _Reaper(app, state, every_s=reap_every_s or lease_s, stale_s=visibility * 2)
    signals.worker_ready.connect(reaper.start, weak=False)
    return app


class _Reaper:
    """Sends a message for tasks whose lease expired or that sat pending with none; beside it,
    a `Courier` delivers the outbox."""

    def __init__(self, app: Celery, state: _Process, *, every_s: float, stale_s: float) -> None:
        self.app, self.state, self.every_s, self.stale_s = app, state, every_s, stale_s
        self.stop = threading.Event()

    def start(self, sender: Any = None, **_: Any) -> None:
        if getattr(sender, "app", self.app) is not self.app:
            return  # another app's worker became ready in this process
        threading.Thread(target=self._loop, daemon=True, name="donegate-reaper").start()
        threading.Thread(target=self._deliver, daemon=True, name="donegate-outbox").start()

    def _deliver(self) -> None:
        """Deliver the outbox until stopped (the store is opened, and retried, here)."""
        while not self.stop.is_set():
            try:
                store = open_store(self.state.db)
            except Exception:
                log.exception("the outbox courier cannot open the store; trying again")
                self.stop.wait(self.every_s)
                continue
            try:
                Courier(store, self.state.delivery).loop(self.stop)
            finally:
                store.close()

    def _loop(self) -> None:
        store: SqlStore | None = None
        while not self.stop.wait(self.every_s):
            try:
                store = store or open_store(self.state.db)
                for task_id in store.reap(pending_stale_s=self.stale_s):
                    enqueue(self.app, task_id)
            except Exception:
                log.exception("reaping failed; trying again")


def client(broker: str, *, visibility_timeout: float = 120.0) -> Celery:
    """A Celery app configured for donegate's messages, with no task of its own (senders)."""
    celery, _ = _celery()
    app: Celery = celery.Celery("donegate", broker=broker, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_default_queue=QUEUE,
        broker_transport_options={"visibility_timeout": visibility_timeout},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    return app


def enqueue(app: Celery, task_id: str) -> None:
    """Send the message that asks a worker to run stored task `task_id`."""
    app.send_task(TASK_NAME, args=[task_id], queue=QUEUE, task_id=f"{task_id}:{uuid.uuid4().hex}")
