"""`TaskWorkflow`: one donegate task as one Temporal workflow, its id the task id.

This module imports only the standard library and ``temporalio``; activities are named by
string (`RUN_ATTEMPT`, `TASK_STATE`), never imported, and are defined in
``donegate.worker.temporal.activities``.

The workflow is deterministic code over two activities:

1. ``donegate.run_attempt`` leases the task in donegate's store and runs it behind the gate (the
   gate's rounds, continuations, journal and effects ledger; see the activities module). A worker
   killed mid-run stops heartbeating; Temporal retries the activity on another worker after
   ``heartbeat_s``, which resumes the task from its journal under the same idempotency keys.
   The activity returns only once the task has ended, escalated or awaits review.
2. An escalated task (or one awaiting review) waits for a person: the ``resolve`` Update (sent by
   ``donegate escalations resolve|approve`` after they write the decision to the store) wakes it,
   and so does a recheck every ``recheck_s`` (a decision made where no Update could be sent).
   ``donegate.task_state`` then reads the store: a requeued task (pending again, with the
   reviewer's instructions) runs again from step 1; a task closed as done, failed or resolved
   ends the workflow with that status.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

__all__ = [
    "RUN_ATTEMPT",
    "RUN_RETRY",
    "STATE_RETRY",
    "TASK_STATE",
    "WAITING",
    "WORKFLOW",
    "Attempt",
    "Decision",
    "TaskArgs",
    "TaskWorkflow",
]

WORKFLOW = "donegate.task"
"""The workflow type every donegate task runs as."""
RUN_ATTEMPT = "donegate.run_attempt"
"""Activity: lease the task and run it behind the gate until it ends or waits for a person."""
TASK_STATE = "donegate.task_state"
"""Activity: the task's status in donegate's store."""
WAITING = ("escalated", "awaiting_review")
"""Statuses in which the workflow waits for a person's decision."""

RUN_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=0.5),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=5),
    maximum_attempts=0,  # unlimited: the store's own ``max_attempts`` fails a task that won't run
    non_retryable_error_types=["UnknownTask"],
)
"""A run attempt is retried while its task has not ended: after a worker died (heartbeat
timeout), while the dead worker's donegate lease has yet to expire (``Leased``), and while a task
given back with a backoff is not due (``NotDue``). donegate's store counts the attempts that
claimed the task and fails it once ``max_attempts`` are spent, so the retries are bounded there,
not here."""
STATE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=0,
    non_retryable_error_types=["UnknownTask"],
)
"""Reading the store is retried until it answers."""


@dataclass(kw_only=True)
class TaskArgs:
    """What a task's workflow is started with (the spec itself is in donegate's store)."""

    task_id: str
    """The stored task, and the workflow id."""
    heartbeat_s: float = 30.0
    """How long a run attempt may go without a heartbeat before Temporal retries it elsewhere;
    keep it near the workers' ``--lease``."""
    run_timeout_s: float = 24 * 3600.0
    """The longest one run attempt may take."""
    recheck_s: float = 60.0
    """While waiting for a person, how often the store is read anyway."""


@dataclass(kw_only=True)
class Attempt:
    """How a run attempt left the task."""

    status: str
    """The task's status in the store: done, failed, cancelled, escalated or awaiting_review."""
    reason: str = ""
    """Why (the store's one line)."""


@dataclass(kw_only=True)
class Decision:
    """A person's decision on an escalated task, as the ``resolve`` Update carries it."""

    action: str
    """``requeue``, ``resolve`` or ``approve`` (already written to the store)."""
    by: str = ""
    """Who decided."""
    escalation: int = 0
    """The escalation or review it closed."""


@workflow.defn(name=WORKFLOW, sandboxed=False)
class TaskWorkflow:
    """Runs one stored task to its end, waiting for a person whenever it escalates.

    Not sandboxed: Temporal's sandbox re-imports a workflow's modules for every workflow run,
    which on a busy worker cost more than the task itself (measured: seconds between tasks on
    two shared cores). This class reads no clock, no randomness and no I/O of its own (timers
    and activities only), which is what the sandbox would have checked.
    """

    def __init__(self) -> None:
        self._status = "pending"
        self._decisions: list[Decision] = []

    @workflow.run
    async def run(self, args: TaskArgs) -> str:
        """The task's final status."""
        while True:
            self._status = "running"
            attempt: Attempt = await workflow.execute_activity(
                RUN_ATTEMPT,
                args.task_id,
                result_type=Attempt,
                start_to_close_timeout=timedelta(seconds=args.run_timeout_s),
                heartbeat_timeout=timedelta(seconds=args.heartbeat_s),
                retry_policy=RUN_RETRY,
            )
            self._status = attempt.status
            if attempt.status not in WAITING:
                return attempt.status
            status: str = await self._wait_for_person(args)
            if status != "pending":  # closed by the person: done, failed, or resolved as is
                return status

    async def _wait_for_person(self, args: TaskArgs) -> str:
        """Wait for a decision (an Update, or a recheck); the task's status after it."""
        while True:
            seen = len(self._decisions)
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(
                    lambda seen=seen: len(self._decisions) > seen,  # type: ignore[misc]
                    timeout=timedelta(seconds=args.recheck_s),
                )
            state: Attempt = await workflow.execute_activity(
                TASK_STATE,
                args.task_id,
                result_type=Attempt,
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=STATE_RETRY,
            )
            if state.status not in WAITING:
                self._status = state.status
                return state.status

    @workflow.update(name="resolve")
    async def resolve(self, decision: Decision) -> str:
        """A person decided (the store already holds the decision): look again now."""
        self._decisions.append(decision)
        return self._status

    @resolve.validator
    def _check(self, decision: Decision) -> None:
        if decision.action not in ("requeue", "resolve", "approve"):
            raise ValueError(f"unknown decision {decision.action!r}")
        if self._status not in WAITING:
            raise ValueError(f"the task is {self._status}, not waiting for a person")

    @workflow.query(name="status")
    def status(self) -> str:
        """What the workflow last saw of the task."""
        return self._status
