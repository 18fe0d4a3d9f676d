"""Starting task workflows, running a worker process, and waking an escalated task.

Needs ``pip install "donegate[temporal]"`` (``temporalio``); every name here imports it lazily,
so ``import donegate.worker`` never does.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from donegate.errors import MissingExtra, UserError
from donegate.store import TaskRecord

if TYPE_CHECKING:
    from temporalio.client import Client

    from donegate.store.sql import SqlStore
    from donegate.worker.outbox import Delivery
    from donegate.worker.service import ModelResolver, Observer, SinkFactory

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TASK_QUEUE",
    "ENGINE_KEY",
    "Target",
    "connect",
    "run_worker",
    "send_decision",
    "start_task",
]

log = logging.getLogger("donegate.worker.temporal")

DEFAULT_ADDRESS = "127.0.0.1:7233"
"""Temporal's own default frontend address."""
DEFAULT_NAMESPACE = "default"
DEFAULT_TASK_QUEUE = "donegate"
ENGINE_KEY = "temporal"
"""The outcome summary's key naming where the task's workflow runs (address, namespace, id):
``donegate escalations`` reads it to send the ``resolve`` Update."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where task workflows run: a Temporal frontend, a namespace and a task queue."""

    address: str = DEFAULT_ADDRESS
    """``host:port`` of the Temporal frontend."""
    namespace: str = DEFAULT_NAMESPACE
    """The namespace the workflows live in."""
    task_queue: str = DEFAULT_TASK_QUEUE
    """The task queue the workers poll."""

    def as_data(self) -> dict[str, str]:
        """As the outcome summary records it."""
        return {"address": self.address, "namespace": self.namespace, "task_queue": self.task_queue}


def _require() -> None:
    try:
        import temporalio  # noqa: F401
    except ImportError:
        raise MissingExtra("temporalio", "temporal") from None


async def connect(target: Target) -> Client:
    """A client of `target`; an unreachable frontend is one `UserError` line."""
    _require()
    from temporalio.client import Client

    try:
        return await Client.connect(target.address, namespace=target.namespace)
    except Exception as exc:
        why = " ".join(str(exc).split())[:200]
        raise UserError(f"cannot reach Temporal at {target.address}: {why}") from None


async def start_task(
    client: Client,
    task_id: str,
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    heartbeat_s: float = 30.0,
    recheck_s: float = 60.0,
) -> bool:
    """Start the workflow of stored task `task_id` (its id the task id); False if it exists.

    A workflow with that id that is running, or that ran before, is left alone: submitting a
    task twice starts it once.
    """
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from donegate.worker.temporal.workflow import TaskArgs, TaskWorkflow

    try:
        await client.start_workflow(
            TaskWorkflow.run,
            TaskArgs(task_id=task_id, heartbeat_s=heartbeat_s, recheck_s=recheck_s),
            id=task_id,
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
        )
    except WorkflowAlreadyStartedError:
        return False
    return True


def send_decision(
    record: TaskRecord | None, action: str, *, by: str = "", escalation: int = 0
) -> str | None:
    """Wake the workflow of a task that ran on Temporal after a person decided on it.

    The decision is already in the store (written by the caller, as for any engine); the
    ``resolve`` Update makes the waiting workflow read it now rather than at its next recheck.
    Returns a one-line note of what happened, or None for a task that did not run on Temporal.
    The task goes on even if no Update reaches it: the workflow rechecks the store by itself.
    """
    engine = (record.result or {}).get(ENGINE_KEY) if record is not None else None
    if not isinstance(engine, Mapping) or record is None:
        return None
    target = Target(
        address=str(engine.get("address") or DEFAULT_ADDRESS),
        namespace=str(engine.get("namespace") or DEFAULT_NAMESPACE),
    )
    workflow_id = str(engine.get("workflow_id") or record.id)
    try:
        asyncio.run(_update(target, workflow_id, action, by, escalation))
    except Exception as exc:
        why = " ".join(str(exc).split())[:200]
        return f"workflow {workflow_id} not woken ({why}); it reads the store at its next recheck"
    return f"workflow {workflow_id} on {target.address} woken"


async def _update(target: Target, workflow_id: str, action: str, by: str, escalation: int) -> None:
    from donegate.worker.temporal.workflow import Decision, TaskWorkflow

    client = await connect(target)
    handle = client.get_workflow_handle(workflow_id)
    await handle.execute_update(  # type: ignore[unused-coroutine]  # the SDK types the result as the handler
        TaskWorkflow.resolve,
        Decision(action=action, by=by, escalation=escalation),
        rpc_timeout=timedelta(seconds=30),
    )


def run_worker(
    store: SqlStore,
    target: Target,
    *,
    concurrency: int = 1,
    lease_s: float = 30.0,
    model_resolver: ModelResolver | None = None,
    worker_id: str | None = None,
    output_dir: str | None = None,
    observers: Sequence[Observer] = (),
    sink_factory: SinkFactory | None = None,
    notify: Sequence[Mapping[str, Any]] = (),
    delivery: Delivery | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Poll `target`'s task queue and run donegate task workflows until `stop` is set.

    At most `concurrency` run attempts at once; beside them this process keeps every held
    donegate lease alive and delivers the store's outbox, as an embedded worker does.
    """
    _require()
    from donegate.worker.outbox import Courier
    from donegate.worker.service import default_resolver
    from donegate.worker.temporal.activities import TemporalWorker

    stop = stop or threading.Event()
    worker = TemporalWorker(
        store,
        concurrency=concurrency,
        lease_s=lease_s,
        model_resolver=model_resolver or default_resolver,
        worker_id=worker_id,
        output_dir=output_dir,
        observers=observers,
        sink_factory=sink_factory,
        notify=notify,
        delivery=delivery,
        temporal=target.as_data(),
    )
    store.keep_reserve()
    beat = worker.start_heartbeat(stop)
    courier = Courier(store, worker.delivery).start(stop) if hasattr(store, "outbox_due") else None
    try:
        asyncio.run(_serve(worker, target, concurrency, stop))
    finally:
        stop.set()
        beat.join()
        if courier is not None:
            courier.join()


async def _serve(worker: Any, target: Target, concurrency: int, stop: threading.Event) -> None:
    from temporalio.worker import Worker as TemporalPoller

    from donegate.worker.temporal.activities import TaskActivities
    from donegate.worker.temporal.workflow import TaskWorkflow

    client = await connect(target)
    acts = TaskActivities(worker)
    poller = TemporalPoller(
        client,
        task_queue=target.task_queue,
        workflows=[TaskWorkflow],
        activities=[acts.run_attempt, acts.task_state],
        max_concurrent_activities=concurrency,
        identity=worker.id,
    )
    log.info("worker %s polls %s on %s", worker.id, target.task_queue, target.address)
    async with poller:
        while not stop.is_set() and worker.fault is None:
            await asyncio.sleep(0.2)
    if worker.fault is not None:
        raise worker.fault
