"""The `TaskStore` protocol and the plain records it reads and writes.

A store is the task record that lives outside the model's context (seed 002): the queue of
tasks, the journal of each run (every classified turn, transcript, evidence, checklist, effects
ledger), the human queue of escalations, and the stop-reason telemetry rows. Workers hold a
`Lease` on a task; every write a worker makes carries it, and a write under a lease that was
lost (expired and claimed elsewhere, or cancelled) raises `LeaseLost` instead of landing.

A store that fails under a running process raises a `StoreError`, one line naming the store:
```
StoreError            the store failed (not a misuse); a worker stops on it
├── StoreUnavailable  it stopped answering, and kept not answering for the store's patience
├── StoreGone         the SQLite file was deleted or replaced (another inode) under the process
└── DiskFull          no space left (or a file-size limit) where it writes
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from donegate.errors import DonegateError
from donegate.harness.escalation import EscalationReport
from donegate.harness.spec import TASK_ID
from donegate.messages import Message, ToolCall, ToolResult, Turn

__all__ = [
    "TASK_ID",
    "TERMINAL",
    "Action",
    "BrowseStore",
    "DiskFull",
    "Escalation",
    "Evidence",
    "HeldEffect",
    "JournalWrite",
    "Lease",
    "LeaseLost",
    "Outcome",
    "QueueRow",
    "RunJournal",
    "RunRecord",
    "StopRow",
    "StoreError",
    "StoreGone",
    "StoreUnavailable",
    "TaskPage",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
]

TaskStatus: TypeAlias = Literal[
    "pending", "running", "done", "awaiting_review", "escalated", "failed", "cancelled"
]
TERMINAL: frozenset[str] = frozenset(
    {"done", "awaiting_review", "escalated", "failed", "cancelled"}
)
"""Statuses a task leaves only by a person's `retry`, `resolve` or `approve`."""


class StoreError(DonegateError):
    """The store failed under a running process: not a misuse, and not the task's fault."""


class StoreUnavailable(StoreError):
    """The store stopped answering (refused or dropped connections, a server restarting)."""


class StoreGone(StoreError):
    """The SQLite file the store opened was deleted or replaced by another file (inode).

    Writing on would land in an unlinked file nobody will read, or in a file that is not the
    one the tasks were claimed from; the process must stop using it.
    """


class DiskFull(StoreError):
    """No space left, or a file-size limit hit, where the store (or the worker) writes."""


class LeaseLost(DonegateError):
    """A worker wrote under a lease it no longer holds; the write did not land."""

    def __init__(self, task_id: str, epoch: int) -> None:
        super().__init__(f"task {task_id}: lease epoch {epoch} is no longer held")
        self.task_id = task_id
        self.epoch = epoch


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


# An evidence row is the loop's one record of an answered call (its duration measured where the
# tool ran); `Evidence` is its old name here, kept as an alias.
from donegate.results import ToolCallRecord as Evidence  # noqa: E402  (kept beside its old place)


@dataclass(frozen=True, kw_only=True, slots=True)
class JournalWrite:
    """What a run produced since its last journal write, to ride with the next fenced write."""

    turn: tuple[int, Turn] | None = None
    """``(step, turn)``: a model call's classified turn, not yet journaled."""
    messages: Sequence[tuple[int, Message]] = ()
    """``(step, message)`` pairs appended since the last write."""
    evidence: Sequence[Evidence] = ()
    """Tool calls answered since the last write."""
    checklist: Sequence[tuple[str, str, str]] = ()
    """Checklist changes since the last write."""
    seq: int | None = None
    """The first message's position in the run's transcript (None: after the last stored)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HeldEffect:
    """What the effects ledger already holds under a key (learned from an insert's conflict)."""

    call: ToolCall
    """The call the key was begun for."""
    state: Literal["begun", "done"]
    """``done`` once its result was recorded."""
    result: ToolResult | None
    """The recorded result, when done."""
    epoch: int
    """The lease epoch that began (or last re-issued) it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    """What a worker records when a run ends."""

    status: Literal["done", "awaiting_review", "escalated", "failed"]
    """The task's terminal status (``awaiting_review`` waits for a person's `approve`)."""
    reason: str = ""
    """Why, for people."""
    ending: str | None = None
    """The last turn's ending (``complete``, ``truncated``...)."""
    loop_status: str | None = None
    """The loop's own status (``complete``, ``max_steps``, ``gated``...)."""
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
    status: str
    """``running``, ``done``, ``escalated``, ``failed``, ``lost`` or ``cancelled``."""
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
    status: Literal["open", "resolved", "requeued", "approved"]
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
    status: str
    """Terminal task status."""
    ending: str | None
    """Last turn's ending."""
    loop_status: str | None
    """The loop's status."""
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


class TaskStore(Protocol):
    """Durable tasks, leases, run journals, the effects ledger and the human queue."""

    url: str
    """Where the store lives, password masked."""
    patience_s: float
    """How long a call retries, with backoff, a store that stopped answering before it raises
    `StoreUnavailable` (0: at once). Workers set it; one-shot commands fail fast."""

    # -- dispatch ------------------------------------------------------------------------------
    def submit(
        self, task_id: str, spec: Mapping[str, Any], *, type: str | None, max_attempts: int = 5
    ) -> tuple[TaskRecord, bool]:
        """Add a pending task; resubmitting the same id and spec returns it with False."""
        ...

    def get(self, task_id: str) -> TaskRecord | None:
        """The task, or None."""
        ...

    def list_tasks(self, *, status: str | None = None, limit: int = 100) -> list[TaskRecord]:
        """Newest first."""
        ...

    def cancel(self, task_id: str, reason: str = "cancelled") -> TaskRecord:
        """End a task that has not ended; a running worker is fenced out."""
        ...

    def retry(self, task_id: str, *, instructions: str | None = None) -> TaskRecord:
        """Put an ended task back in the queue as a new generation."""
        ...

    # -- leases ----------------------------------------------------------------------------------
    def claim(self, worker_id: str, lease_s: float) -> Lease | None:
        """Atomically lease the oldest runnable task (pending, or running with an expired lease)."""
        ...

    def claim_task(self, task_id: str, worker_id: str, lease_s: float) -> Lease | None:
        """Lease one named task if runnable now; None when leased elsewhere or ended."""
        ...

    def reap(self, *, pending_stale_s: float) -> list[str]:
        """Return expired leases to pending and touch stale pending tasks; their ids."""
        ...

    def heartbeat(self, leases: Sequence[Lease], lease_s: float) -> set[str]:
        """Extend the leases; returns the ids of tasks whose lease was lost."""
        ...

    def release(
        self,
        lease: Lease,
        reason: str,
        *,
        delay_s: float = 0.0,
        charge: bool = True,
        notify: Mapping[str, Any] | None = None,
    ) -> None:
        """Give a task back after a worker error (pending again, or failed when out of attempts).

        `notify` is the notice to write to the outbox, in the same transaction, when this
        release spends the last attempt and so ends the task failed.

        With ``charge=False`` the task was not at fault (the worker's disk filled, it is
        stopping): the claim's attempt is handed back and the task is always pending again.
        """
        ...

    def waiting(self, worker_id: str) -> list[str]:
        """Tasks a worker must not leave behind when idle: pending ones (delayed or not), and
        running ones under a lease `worker_id` holds (an outcome it has not recorded)."""
        ...

    # -- the journal ---------------------------------------------------------------------------
    def journal(
        self,
        lease: Lease,
        *,
        turn: tuple[int, Turn] | None = None,
        messages: Sequence[tuple[int, Message]] = (),
        evidence: Sequence[Evidence] = (),
        checklist: Sequence[tuple[str, str, str]] = (),
        seq: int | None = None,
    ) -> None:
        """Persist, in one fenced write, what a run produced since its last write.

        `turn` is ``(step, turn)``: model call `step`'s classified response, written before any
        tool of that step runs; a resumed run replays it instead of calling the model again.
        `messages` are ``(step, message)`` pairs, each tagged with the model call it follows
        (0 for the prompt). `seq` is the first message's position in the run's transcript when
        the caller counts them (it saves a read); None appends after the last one stored.
        """
        ...

    def turns(self, task_id: str, generation: int) -> list[Turn]:
        """The journaled turns of a task's generation: steps 1..K in order, stopping at a gap."""
        ...

    def append_messages(
        self,
        lease: Lease,
        step: int,
        messages: Sequence[Message],
        evidence: Sequence[Evidence] = (),
        checklist: Sequence[tuple[str, str, str]] = (),
    ) -> None:
        """Persist one step's messages, evidence and checklist changes (`journal`, no turn)."""
        ...

    def transcript(self, run_id: int) -> list[Message]:
        """A run's messages, in order."""
        ...

    def runs(self, task_id: str) -> list[RunRecord]:
        """A task's runs, oldest first."""
        ...

    def evidence(self, task_id: str) -> list[Evidence]:
        """Every tool call recorded for a task, in order."""
        ...

    def checklist(self, task_id: str) -> list[tuple[str, str, str]]:
        """``(item, status, note)`` rows."""
        ...

    def effect_lookup(self, key: str, call: ToolCall) -> ToolResult | None:
        """The recorded result of `call` under `key`, if it finished.

        `EffectDivergence` when `key` was begun for another call (name or arguments).
        """
        ...

    def effect_begin(self, lease: Lease, key: str, call: ToolCall, *, reissue: bool = True) -> bool:
        """Journal that a side effect is about to run; True when it may run.

        A key begun by an earlier lease and never recorded is re-issued under it (its issue
        count bumped) only with `reissue`; otherwise nothing is written and the answer is False
        (its outcome is unknown). `EffectDivergence` as for lookup.
        """
        ...

    def effect_open(
        self, lease: Lease, key: str, call: ToolCall, *, rows: JournalWrite | None = None
    ) -> HeldEffect | None:
        """Begin `call` under `key` unless the key is held, in one fenced write with `rows`.

        None when it was begun now (it may run); otherwise what the key holds, learned from the
        insert's conflict: the caller checks it is the same call, and answers a done one from
        its result. `rows` (what the run journaled since its last write, the turn asking for
        the call among them) commit with it, so the turn is durable before its effect starts.
        """
        ...

    def effect_record(self, lease: Lease, key: str, result: ToolResult) -> None:
        """Journal a side effect's result."""
        ...

    def effects(self, task_id: str) -> list[dict[str, Any]]:
        """The ledger rows of a task."""
        ...

    def finish(
        self,
        lease: Lease,
        outcome: Outcome,
        *,
        turn: tuple[int, Turn] | None = None,
        messages: Sequence[tuple[int, Message]] = (),
        evidence: Sequence[Evidence] = (),
        checklist: Sequence[tuple[str, str, str]] = (),
        seq: int | None = None,
    ) -> None:
        """Record a run's end: task status, run row, escalation, stop-reason row.

        `turn`, `messages`, `evidence`, `checklist` and `seq` are what the run produced after its
        last `journal` write (as `journal` takes them): they are written with the end, in one
        write, with the outbox rows of its notification.
        """
        ...

    # -- people and telemetry ------------------------------------------------------------------
    def escalations(self, *, status: str | None = "open") -> list[Escalation]:
        """The human queue, oldest first."""
        ...

    def escalation(self, escalation_id: int) -> Escalation | None:
        """One entry."""
        ...

    def resolve(
        self,
        escalation_id: int,
        *,
        note: str | None = None,
        requeue: bool = False,
        instructions: str | None = None,
    ) -> Escalation:
        """Close an escalation, or requeue its task with instructions.

        A review closed without requeue is a rejection: its task ends ``failed``.
        """
        ...

    def approve(
        self,
        escalation_id: int,
        *,
        by: str,
        note: str | None = None,
        certificate: str | None = None,
    ) -> Escalation:
        """A person approves a review: its task, ``awaiting_review``, becomes ``done``.

        `certificate` is the approved certificate's path, kept in the task's result.
        """
        ...

    def stop_rows(self, *, since: float) -> list[StopRow]:
        """Terminal telemetry rows since a time."""
        ...

    def counts(self) -> dict[str, int]:
        """Tasks per status."""
        ...

    def keep_reserve(self, nbytes: int = ...) -> None:
        """Hold some disk that the store frees when its disk fills, so that a stopping worker's
        put-backs still fit (a SQLite file store; a no-op where the server owns the disk)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


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
    status: str
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
class Action:
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


class BrowseStore(TaskStore, Protocol):
    """A `TaskStore` that also serves the review UI's pages and records its actions."""

    def task_page(
        self,
        *,
        status: str | None = None,
        type: str | None = None,
        text: str | None = None,
        after: tuple[float, str] | None = None,
        limit: int = 50,
    ) -> TaskPage:
        """Tasks newest first, filtered; `after` is the previous page's `TaskPage.next`.

        `text` matches a substring of the id or the reason, case-insensitively.
        """
        ...

    def task_types(self) -> list[str]:
        """Every task type submitted, sorted."""
        ...

    def queue_page(
        self, *, status: str | None = "open", after: int | None = None, limit: int = 50
    ) -> list[QueueRow]:
        """Queue entries oldest first; `after` is the last id of the previous page."""
        ...

    def queue_count(self, *, status: str = "open") -> int:
        """Entries with this status."""
        ...

    def task_escalations(self, task_id: str) -> list[int]:
        """Ids of a task's queue entries, oldest first."""
        ...

    def journals(self, task_id: str) -> list[RunJournal]:
        """A task's runs, oldest first, each with its turns and transcript."""
        ...

    def stop_rows_of(self, *, since: float, task_type: str | None = None) -> list[StopRow]:
        """Stop rows since a time, of one task type or all, oldest first."""
        ...

    def stop_types(self) -> list[str]:
        """Task types that have stop rows, sorted."""
        ...

    def record_action(
        self,
        *,
        actor: str,
        action: str,
        task_id: str,
        escalation_id: int | None = None,
        detail: str | None = None,
    ) -> Action:
        """Keep who did what, and when."""
        ...

    def actions(self, *, task_id: str, limit: int = 50) -> list[Action]:
        """A task's actions, newest first."""
        ...
