"""The task workflow's activities: a run attempt under donegate's lease, and the task's state.

A run attempt is the embedded worker's own path (`Worker.execute`): it leases the task in
donegate's store, runs it behind the completion gate with the run's `JournalSink` (one fenced
write per model call, before any tool of its step runs) and the store's effects ledger, whose
keys are ``<workflow id>:<step>:<call>`` (the workflow id is the task id; a requeued generation
runs as ``<task>~<generation>``), and records the outcome, certificate and outbox rows in the
store, so ``tasks``, ``stats``, ``serve`` and notifications see it as any other task. Checks run
where the existing path runs them: in the clean room, on this worker host.

When a worker dies mid-run its heartbeats stop; Temporal schedules the attempt again on another
worker, which claims the task as soon as the dead worker's donegate lease has expired and
resumes it from the journal: journaled turns answer the first model calls, so every
side-effecting call comes back with the same key, and a recorded one is answered from the
ledger, never run again. Until the lease expires the claim is refused and the attempt fails
with ``Leased`` (Temporal retries it with backoff), so no two workers ever run one task.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from donegate.store import Lease, RunOutcome
from donegate.worker.service import Worker
from donegate.worker.temporal.engine import ENGINE_KEY
from donegate.worker.temporal.workflow import RUN_ATTEMPT, TASK_STATE, WAITING, Attempt

__all__ = ["TaskActivities", "TemporalWorker"]

log = logging.getLogger("donegate.worker.temporal")


_ENDED = ("done", "failed", "cancelled", *WAITING)


class TemporalWorker(Worker):
    """The embedded `Worker`, its outcomes marked with the Temporal workflow that ran them."""

    def __init__(self, *args: Any, temporal: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.temporal = dict(temporal)

    def _run(self, lease: Lease, *args: Any, **kwargs: Any) -> RunOutcome:
        outcome = super()._run(lease, *args, **kwargs)
        engine = {**self.temporal, "workflow_id": lease.task_id}
        return dataclasses.replace(outcome, summary={**outcome.summary, ENGINE_KEY: engine})


class TaskActivities:
    """The activities of `TaskWorkflow`, bound to one worker process's store and `Worker`."""

    def __init__(self, worker: TemporalWorker, *, heartbeat_every_s: float = 1.0) -> None:
        self.worker = worker
        self.heartbeat_every_s = heartbeat_every_s
        """At most this long between heartbeats (and a quarter of the attempt's timeout)."""

    @activity.defn(name=RUN_ATTEMPT)
    async def run_attempt(self, task_id: str) -> Attempt:
        """Lease `task_id` and run it to its end (or until it waits for a person)."""
        worker = self.worker
        lease = await asyncio.to_thread(worker.store.claim_task, task_id, worker.id, worker.lease_s)
        if lease is None:
            return await self._not_claimed(task_id)
        log.info("task %s: temporal attempt %d", task_id, activity.info().attempt)
        run = asyncio.ensure_future(asyncio.to_thread(worker.execute, lease))
        timeout = activity.info().heartbeat_timeout
        every = self.heartbeat_every_s
        if timeout is not None:
            every = min(every, timeout.total_seconds() / 4)
        while not run.done():  # Temporal's heartbeat; donegate's lease has its own thread
            activity.heartbeat()
            await asyncio.wait({run}, timeout=every)
        outcome = run.result()
        if outcome is None:  # the lease was lost, or the task given back after an error
            record = await asyncio.to_thread(worker.store.get, task_id)
            if record is not None and record.status in _ENDED:
                return Attempt(status=record.status, reason=record.reason or "")
            raise ApplicationError(f"task {task_id}: given back; it runs again", type="GivenBack")
        return Attempt(status=outcome.status, reason=outcome.reason)

    async def _not_claimed(self, task_id: str) -> Attempt:
        record = await asyncio.to_thread(self.worker.store.get, task_id)
        if record is None:
            raise ApplicationError(f"no task {task_id} in the store", type="UnknownTask")
        if record.status in _ENDED:
            return Attempt(status=record.status, reason=record.reason or "")
        if record.status == "running":
            raise ApplicationError(
                f"task {task_id}: leased by {record.lease_owner} until its lease expires",
                type="Leased",
            )
        raise ApplicationError(f"task {task_id}: {record.status}, not due yet", type="NotDue")

    @activity.defn(name=TASK_STATE)
    async def task_state(self, task_id: str) -> Attempt:
        """The task's status in the store."""
        record = await asyncio.to_thread(self.worker.store.get, task_id)
        if record is None:
            raise ApplicationError(f"no task {task_id} in the store", type="UnknownTask")
        return Attempt(status=record.status, reason=record.reason or "")
