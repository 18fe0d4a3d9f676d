"""Queue-driven workers: `submit` a task, run `Worker`s that lease, run and record tasks.

The embedded engine is `Worker` (threads in one process; run several processes on one store for
more), or `AsyncWorker` (every task a coroutine on one event loop: thousands in flight).
``donegate.worker.celery_app`` runs the same `Worker.execute` under Celery with a Redis broker
and a shared PostgreSQL store; the store's lease, not the broker, decides who runs a task.
"""

from __future__ import annotations

from donegate.worker.aservice import AsyncWorker
from donegate.worker.journal import JournalSink
from donegate.worker.service import ModelResolver, Worker, WorkerStats, default_resolver
from donegate.worker.tasks import outcome_of, spec_for, submit

__all__ = [
    "AsyncWorker",
    "JournalSink",
    "ModelResolver",
    "Worker",
    "WorkerStats",
    "default_resolver",
    "outcome_of",
    "spec_for",
    "submit",
]
