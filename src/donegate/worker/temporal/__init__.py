"""donegate on Temporal: each task a workflow whose id is the task id (extra ``temporal``).

`TaskWorkflow` (``workflow``) is the deterministic part: run attempts, and the wait for a
person on an escalation. `TaskActivities` (``activities``) run a task behind the gate under
donegate's lease, journal and effects ledger, and record it in donegate's store. ``engine``
starts workflows (`start_task`), runs a worker process (`run_worker`) and wakes an escalated
task's workflow (`send_decision`). Nothing here is imported by ``import donegate``.
"""

from __future__ import annotations

from donegate.worker.temporal.engine import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    Target,
    connect,
    run_worker,
    send_decision,
    start_task,
)

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TASK_QUEUE",
    "Target",
    "connect",
    "run_worker",
    "send_decision",
    "start_task",
]
