"""The plain records the store reads and writes; its protocols and errors, re-exported.

A store is the task record that lives outside the model's context (seed 002): the queue of
tasks, the journal of each run (every classified turn, transcript, evidence, checklist, effects
ledger), the human queue of escalations, and the stop-reason telemetry rows. Workers hold a
`Lease` on a task; every write a worker makes carries it, and a write under a lease that was
lost (expired and claimed elsewhere, or cancelled) raises `LeaseLost` instead of landing.

The protocols callers annotate with (`TaskStore` and the narrower `TaskQueue`, `Journal`,
`LedgerStore`, `ReviewQueue`, `BrowseStore`) live in `donegate.store.protocols`; the store's
errors (`StoreError` and its kinds, `LeaseLost`) in `donegate.errors`. Both are importable from
here too, where they were first defined.
"""

# ruff: noqa: PLC0414 - `X as X`: the protocols and errors are re-exported from their first home

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from donegate.errors import DiskFull as DiskFull
from donegate.errors import LeaseLost as LeaseLost
from donegate.errors import StoreError as StoreError
from donegate.errors import StoreGone as StoreGone
from donegate.errors import StoreUnavailable as StoreUnavailable
from donegate.messages import Ending, Message, ToolCall, ToolResult, Turn
from donegate.records.report import EscalationReport
from donegate.records.status import (
    AttemptStatus,
    EffectStatus,
    EscalationStatus,
    LoopStatus,
    TaskOutcome,
    TaskStatus,
)
from donegate.results import ToolCallRecord
from donegate.store.protocols import BrowseStore as BrowseStore
from donegate.store.protocols import Journal as Journal
from donegate.store.protocols import LedgerStore as LedgerStore
from donegate.store.protocols import ReviewQueue as ReviewQueue
from donegate.store.protocols import TaskQueue as TaskQueue
from donegate.store.protocols import TaskStore as TaskStore
from donegate.store.protocols import WorkerStore as WorkerStore

__all__ = [
    "Escalation",
    "HeldEffect",
    "JournalWrite",
    "Lease",
    "QueueRow",
    "ReviewAction",
    "Reviewer",
    "RunJournal",
    "RunOutcome",
    "RunRecord",
    "StopRow",
    "TaskPage",
    "TaskRecord",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class TaskRecord:
    """A task as stored."""

    id: str
    """The client-supplied (or spec) id; submitting it again is a no-op."""
    spec: Mapping[str, Any]
    """The task spec as JSON data."""
    type: str | None
    """The task type telemetry breaks stop reasons out by."""
    status: TaskStatus
    """Where the task is."""
    attempts: int
    """Claims so far, across generations."""
    max_attempts: int
    """Claims allowed before a task whose workers keep dying is escalated."""
    generation: int
    """Bumped by `retry` and requeue: a new run with fresh idempotency keys."""
    instructions: str | None
    """Extra instructions a reviewer gave on requeue."""
    lease_owner: str | None
    """The worker holding the lease, while running."""
    lease_epoch: int
    """The fencing token: bumped by every claim and by cancel."""
    lease_expires: float | None
    """Epoch seconds after which another worker may claim the task."""
    heartbeat_at: float | None
    """The holder's last heartbeat."""
    created_at: float
    """Submission time."""
    updated_at: float
    """Last change."""
    finished_at: float | None
    """When it reached a terminal status."""
    reason: str | None
    """Why it ended (or why it was cancelled or retried)."""
    result: Mapping[str, Any] | None
    """The outcome summary written by the worker."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Lease:
    """A worker's claim on a task; every journal write carries it."""

    task_id: str
    """The task claimed."""
    epoch: int
    """The fencing token; writes under an older epoch are refused."""
    worker_id: str
    """Who holds it."""
    run_id: int
    """The run row this claim opened."""
    attempt: int
    """1 for the first claim, 2 after one lost lease, ..."""
    generation: int
    """The task's generation (see `TaskRecord.generation`)."""
    spec: Mapping[str, Any]
    """The task spec as JSON data."""
    instructions: str | None = None
    """Reviewer instructions to add to the prompt."""
    expires: float = 0.0
    """When the lease runs out unless heartbeated."""


class JournalWrite(TypedDict, total=False):
    """What a run produced since its last journal write, to ride with the next fenced write.

    `journal`, `finish` and `effect_open` take these as keywords (each optional).
    """

    turn: tuple[int, Turn] | None
    """``(step, turn)``: model call `step`'s classified turn, written before any tool of that
    step runs; a resumed run replays it instead of calling the model again."""
    messages: Sequence[tuple[int, Message]]
    """``(step, message)`` pairs, each tagged with the model call it follows (0: the prompt)."""
    evidence: Sequence[ToolCallRecord]
    """Tool calls answered since the last write."""
    checklist: Sequence[tuple[str, str, str]]
    """Checklist changes since the last write, as ``(item, status, note)``."""
    seq: int | None
    """The first message's position in the run's transcript when the caller counts them (it
    saves a read); None appends after the last one stored."""
    baseline: Mapping[str, Any]
    """The protected-file manifest the task's first run took, stored with this write unless
    one is stored already (the first stored wins; see `Journal.baseline`)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HeldEffect:
    """What the effects ledger already holds under a key (learned from an insert's conflict)."""

    call: ToolCall
    """The call the key was begun for."""
    state: EffectStatus
    """``done`` once its result was recorded."""
    result: ToolResult | None
    """The recorded result, when done."""
    epoch: int
    """The lease epoch that began (or last re-issued) it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunOutcome:
    """What a worker records when a run ends."""

    status: TaskOutcome
    """The task's terminal status (``awaiting_review`` waits for a person's `approve`)."""
    reason: str = ""
    """Why, for people."""
    ending: Ending | None = None
    """The last turn's ending (``complete``, ``truncated``...)."""
    loop_status: LoopStatus | None = None
    """The loop's own status (``complete``, ``max_steps``, ``gated``...), or
    ``outcome_unknown``."""
    model_calls: int = 0
    """Model calls (turns) in the run, replayed ones included."""
    replayed_calls: int = 0
    """Of `model_calls`, those a resumed run answered from the journal (no call, no cost)."""
    continuations: int = 0
    """Automatic continuations the gate sent."""
    input_tokens: int = 0
    """Summed prompt tokens."""
    output_tokens: int = 0
    """Summed output tokens."""
    duration_s: float = 0.0
    """Wall time of the run."""
    checklist: Sequence[tuple[str, str, str]] = ()
    """Final checklist items as ``(item, status, note)``."""
    report: EscalationReport | None = None
    """The escalation report, when escalated."""
    report_md: str | None = None
    """The escalation report as Markdown."""
    summary: Mapping[str, Any] = field(default_factory=dict)
    """Anything else worth keeping with the task (certificate path, checks...)."""
    notify: Mapping[str, Any] | None = None
    """The final notification the worker composed (``key``, ``body``, ``targets``,
    ``max_attempts``): `finish` writes one outbox row per target in the outcome's transaction."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunRecord:
    """One claim of a task and how it ended."""

    id: int
    """The run row id."""
    task_id: str
    """Its task."""
    attempt: int
    """The claim number."""
    worker_id: str
    """Who ran it."""
    started_at: float
    """Claim time."""
    ended_at: float | None
    """End time (None while running or when the worker died)."""
    status: AttemptStatus
    """Running, the outcome it recorded, or how it was cut short (lost, error, cancelled)."""
    reason: str | None
    """Why it ended."""
    model_calls: int
    """Turns, replayed ones included."""
    replayed_calls: int = 0
    """Of `model_calls`, those answered from the journal of an earlier claim."""
    continuations: int
    """Automatic continuations."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Escalation:
    """An entry in the human queue."""

    id: int
    """Its id (``donegate escalations show ID``)."""
    task_id: str
    """The task escalated."""
    status: EscalationStatus
    """Open until a person resolves, requeues or (a review) approves it."""
    reason: str
    """Why the task is stuck, one line."""
    report: EscalationReport
    """The full report (what was attempted, what is left, the state)."""
    report_md: str
    """The same report for people."""
    created_at: float
    """When it was escalated."""
    resolved_at: float | None = None
    """When a person acted on it."""
    note: str | None = None
    """The resolver's note."""
    instructions: str | None = None
    """Instructions given with a requeue."""
    kind: Literal["escalation", "review"] = "escalation"
    """``review``: a ``closure: human`` task whose claim passed every gate, to approve."""
    resolved_by: str | None = None
    """Who approved, resolved or requeued it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StopRow:
    """One run's terminal telemetry: the stop-reason breakdown is a count over these."""

    task_id: str
    """The task."""
    task_type: str | None
    """Its type."""
    status: TaskOutcome
    """Terminal task status."""
    ending: Ending | None
    """Last turn's ending."""
    loop_status: LoopStatus | None
    """The loop's status (or ``outcome_unknown``)."""
    open_items: int
    """Checklist items still open at the end."""
    turns: int
    """Model calls, replayed ones included."""
    replayed_turns: int = 0
    """Of `turns`, those answered from the journal (a resumed run); the rest were live."""
    continuations: int
    """Automatic continuations."""
    duration_s: float
    """Wall time."""
    at: float
    """When the run ended."""
    spend_usd: float = 0.0
    """What the run's own model calls cost (0 when unpriced, or recorded before r0009)."""


# -- the review UI (``donegate serve``): pages over the store, and who acted ---------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class TaskPage:
    """One page of tasks, newest first."""

    tasks: list[TaskRecord]
    """The page's tasks."""
    next: tuple[float, str] | None
    """The next (older) page's cursor: the last task's ``(created_at, id)``; None at the end."""


@dataclass(frozen=True, kw_only=True, slots=True)
class QueueRow:
    """An entry of the human queue as a list shows it (the report stays in the store)."""

    id: int
    """The escalation's id."""
    task_id: str
    """The task escalated."""
    task_type: str | None
    """Its type."""
    kind: str
    """``escalation`` (a stuck task), or ``review`` where the store knows reviews."""
    status: EscalationStatus
    """``open``, ``resolved``, ``requeued``..."""
    reason: str
    """Why the task is stuck, one line."""
    created_at: float
    """When it was escalated (time waiting is measured from here)."""
    continuations: int | None
    """Automatic continuations the escalated run spent (None when no run ended it)."""
    model_calls: int | None
    """Model calls of that run."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReviewAction:
    """Something a person did from the review UI."""

    id: int
    """Its id."""
    at: float
    """When."""
    actor: str
    """Who: the name of the token the request carried (``local`` on a tokenless loopback)."""
    action: str
    """``resolve``, ``requeue`` or ``retry``."""
    task_id: str
    """The task acted on."""
    escalation_id: int | None = None
    """The queue entry acted on, if any."""
    detail: str | None = None
    """The note or the instructions given."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Reviewer:
    """A person who may approve, resolve and requeue (``donegate reviewers add``)."""

    name: str
    """Recorded as who acted, in the queue and in an approved certificate."""
    secret_hash: str
    """The KDF hash of the reviewer's secret (`donegate.review.reviewers`); never the secret."""
    created_at: float
    """When the reviewer was added."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunJournal:
    """One run (claim) of a task with its journal: the turns it made and its transcript."""

    run: RunRecord
    """The run row."""
    generation: int
    """The task generation it ran (bumped by requeue and retry)."""
    ending: str | None
    """The last turn's ending, once the run ended."""
    turns: Mapping[int, Turn] = field(default_factory=dict)
    """Classified turns this run journaled, by step (a resumed run's replayed ones stay with the
    run that made them)."""
    messages: Sequence[tuple[int, Message]] = ()
    """``(step, message)`` pairs of the run's transcript, in order."""
