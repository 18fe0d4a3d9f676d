"""Every status vocabulary, one type each, and the one place each maps to the next.

The store's status columns hold these values (a CHECK constraint per column lists them, from the
``*_VALUES`` tuples here), the harness and the hooks record them, reports and the JSON API show
them. Each is declared once; every other module names it from here.
```
Ending        how one model turn ended (donegate.messages)
  -> Status       how a run ended: `Status.from_ending` (the turn endings that end a run)
    -> TaskStatus   how a task stands: `task_status` (what the harness and the store record)
ItemStatus        a checklist (todo) item: open, done or blocked
EscalationStatus  an entry of the human queue
OutboxStatus      a notification's delivery
EffectStatus      a side effect in the effects ledger
AttemptStatus     a run row (one claim of a task): running, its outcome, lost or error
LoopStatus        what a run's stop row records of the loop: a `Status`, or OUTCOME_UNKNOWN
```
Each is a `StrEnum`: its members are the very strings stored in a row or written to JSON, so
the values read back compare equal to them; a row's mapper parses its column into the enum (an
unknown value fails there, and the database's CHECK constraint refuses it before that). Each
stored vocabulary has a ``*_VALUES`` tuple of its strings for the CHECK constraints.
`TaskOutcome` is no vocabulary of its own but the `Literal` of the `TaskStatus` members a run
ends in; `LoopStatus` is `Status` plus the one value a worker records when it cannot know how a
run ended (`OUTCOME_UNKNOWN`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, TypeAlias

from donegate.messages import Ending

__all__ = [
    "ATTEMPT_VALUES",
    "EFFECT_VALUES",
    "ENDING_VALUES",
    "ESCALATION_VALUES",
    "ITEM_VALUES",
    "LOOP_VALUES",
    "OUTBOX_VALUES",
    "OUTCOME_UNKNOWN",
    "TASK_OUTCOMES",
    "TASK_TERMINAL",
    "TASK_VALUES",
    "AttemptStatus",
    "EffectStatus",
    "EscalationStatus",
    "ItemStatus",
    "LoopStatus",
    "OutboxStatus",
    "Status",
    "TaskOutcome",
    "TaskStatus",
    "loop_status",
    "task_outcome",
    "task_status",
]


class Status(StrEnum):
    """How a run ended."""

    COMPLETE = "complete"
    TRUNCATED = "truncated"
    FILTERED = "filtered"
    REFUSED = "refused"
    EMPTY = "empty"
    CONTEXT_EXCEEDED = "context_exceeded"
    MALFORMED_TOOL_CALL = "malformed_tool_call"
    PROVIDER_ERROR = "provider_error"
    MAX_STEPS = "max_steps"
    BUDGET_EXCEEDED = "budget_exceeded"
    GATED = "gated"
    """A completion gate stopped the run without accepting it (the harness escalates)."""

    @classmethod
    def from_ending(cls, ending: Ending) -> Status | None:
        """The status a turn's ending ends the run with by itself; None when the loop acts on it.

        ``complete``, ``tool_use``, ``truncated``, ``malformed_tool_call``, ``paused`` and
        ``refused`` are decided by the loop's policies (claim, retry, resend, fall back); the
        four others end the run at once, each as its own status.
        """
        return _TERMINAL.get(ending)


_TERMINAL: dict[Ending, Status] = {
    Ending.FILTERED: Status.FILTERED,
    Ending.CONTEXT_EXCEEDED: Status.CONTEXT_EXCEEDED,
    Ending.EMPTY: Status.EMPTY,
    Ending.ERROR: Status.PROVIDER_ERROR,
}
"""Turn endings that end the run by themselves (the loop's last branch), and their status."""

ENDING_VALUES: tuple[str, ...] = tuple(Ending)
"""Every `Ending` value (the events table's ``ending`` CHECK constraint)."""

OUTCOME_UNKNOWN: Literal["outcome_unknown"] = "outcome_unknown"
"""The loop status a worker records for a run whose side effect's outcome it cannot know (the
run stopped inside an effect: `donegate.worker.tasks.outcome_unknown`). No loop ends this way."""

LoopStatus: TypeAlias = Status | Literal["outcome_unknown"]
"""A run's recorded loop status (``events.loop_status``): the loop's own `Status`, or
`OUTCOME_UNKNOWN`."""

LOOP_VALUES: tuple[str, ...] = (*tuple(Status), OUTCOME_UNKNOWN)
"""Every `LoopStatus` value (the events table's ``loop_status`` CHECK constraint)."""


def loop_status(value: str | None) -> LoopStatus | None:
    """Parse a stored loop status (None stays None); an unknown value raises ValueError."""
    if value is None:
        return None
    return OUTCOME_UNKNOWN if value == OUTCOME_UNKNOWN else Status(value)


class TaskStatus(StrEnum):
    """How a task stands in the store: queued, claimed, or one of its ends."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    AWAITING_REVIEW = "awaiting_review"
    ESCALATED = "escalated"
    FAILED = "failed"
    CANCELLED = "cancelled"


TASK_VALUES: tuple[str, ...] = tuple(TaskStatus)
"""Every `TaskStatus` value (the tasks table's CHECK constraint)."""

TASK_TERMINAL: frozenset[TaskStatus] = frozenset(
    {
        TaskStatus.DONE,
        TaskStatus.AWAITING_REVIEW,
        TaskStatus.ESCALATED,
        TaskStatus.FAILED,
        TaskStatus.CANCELLED,
    }
)
"""Task statuses a task leaves only by a person's `retry`, `resolve` or `approve`."""

TaskOutcome: TypeAlias = Literal[
    TaskStatus.DONE, TaskStatus.AWAITING_REVIEW, TaskStatus.ESCALATED, TaskStatus.FAILED
]
"""The task statuses a run ends in (what `task_status` gives; `cancelled` is a person's): a
subset of `TaskStatus`, not a vocabulary of its own."""

TASK_OUTCOMES: tuple[TaskOutcome, ...] = (
    TaskStatus.DONE,
    TaskStatus.AWAITING_REVIEW,
    TaskStatus.ESCALATED,
    TaskStatus.FAILED,
)
"""Every `TaskOutcome`, in the order reports and charts show them."""


def task_outcome(value: object) -> TaskOutcome:
    """A stored or sent value as a `TaskOutcome`; a `ValueError` names any other value."""
    for outcome in TASK_OUTCOMES:
        if outcome == value:
            return outcome
    raise ValueError(f"not a task outcome: {value!r} (one of {', '.join(TASK_OUTCOMES)})")


def task_status(status: Status, *, human_closure: bool = False) -> TaskOutcome:
    """The task status a run's `Status` gives: the one Status -> TaskStatus table.

    A complete run is ``done`` (``awaiting_review`` when a person closes it); a run a gate
    stopped, or whose budget was exhausted, is ``escalated`` to a person; every other status is
    ``failed``.
    """
    if status is Status.COMPLETE:
        return TaskStatus.AWAITING_REVIEW if human_closure else TaskStatus.DONE
    if status in (Status.GATED, Status.BUDGET_EXCEEDED):  # a person grants more, or stops it
        return TaskStatus.ESCALATED
    return TaskStatus.FAILED


class AttemptStatus(StrEnum):
    """A run row's (one claim's) status: running, then the outcome it recorded, or how it was
    cut short (``lost``: its lease expired; ``error``: its worker reported a failure)."""

    RUNNING = "running"
    DONE = "done"
    AWAITING_REVIEW = "awaiting_review"
    ESCALATED = "escalated"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LOST = "lost"
    ERROR = "error"


ATTEMPT_VALUES: tuple[str, ...] = tuple(AttemptStatus)
"""Every `AttemptStatus` value (the runs table's CHECK constraint)."""


class ItemStatus(StrEnum):
    """A checklist item's (an agent CLI's todo's) status."""

    OPEN = "open"
    DONE = "done"
    BLOCKED = "blocked"


ITEM_VALUES: tuple[str, ...] = tuple(ItemStatus)
"""Every `ItemStatus` value, in the order a checklist shows them."""


class EscalationStatus(StrEnum):
    """An entry of the human queue: open until a person resolves, requeues or approves it."""

    OPEN = "open"
    RESOLVED = "resolved"
    REQUEUED = "requeued"
    APPROVED = "approved"


ESCALATION_VALUES: tuple[str, ...] = tuple(EscalationStatus)
"""Every `EscalationStatus` value."""


class OutboxStatus(StrEnum):
    """A notification's delivery: pending until delivered or given up on."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


OUTBOX_VALUES: tuple[str, ...] = tuple(OutboxStatus)
"""Every `OutboxStatus` value."""


class EffectStatus(StrEnum):
    """A side effect in the effects ledger: ``done`` once its result is recorded."""

    BEGUN = "begun"
    DONE = "done"


EFFECT_VALUES: tuple[str, ...] = tuple(EffectStatus)
"""Every `EffectStatus` value."""
