"""What each caller of the store needs, a protocol apiece; `TaskStore` is all of them.

`donegate.store.sql.SqlStore` implements every one. A caller annotates with the narrowest it
uses, so what it depends on is what it reads:

- `TaskQueue`: tasks and the leases they run under (the worker's loop, `submit`, Celery).
- `Journal`: what a leased run writes as it goes and reads back on resume (`JournalSink`).
- `LedgerStore`: side effects by idempotency key, under a lease (`StoreLedger`).
- `ReviewQueue`: the human queue and the stop-reason telemetry (the CLI, the review UI).
- `WorkerStore`: the first three together, what `Worker` runs tasks on.
- `Reviewers`: the people who may act on the queue, each with a hashed secret.
- `BrowseStore`: a `TaskStore` that also serves the review UI's pages, records its actions and
  knows its reviewers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Unpack

if TYPE_CHECKING:
    from donegate.messages import Message, ToolCall, ToolResult, Turn
    from donegate.results import ToolCallRecord
    from donegate.store import base

__all__ = [
    "BrowseStore",
    "Journal",
    "LedgerStore",
    "ReviewQueue",
    "Reviewers",
    "TaskQueue",
    "TaskStore",
    "WorkerStore",
]


class TaskQueue(Protocol):
    """Durable tasks and the leases workers run them under."""

    url: str
    """Where the store lives, password masked."""
    patience_s: float
    """How long a call retries, with backoff, a store that stopped answering before it raises
    `StoreUnavailable` (0: at once). Workers set it; one-shot commands fail fast."""

    def submit(
        self, task_id: str, spec: Mapping[str, Any], *, type: str | None, max_attempts: int = 5
    ) -> tuple[base.TaskRecord, bool]:
        """Add a pending task; resubmitting the same id and spec returns it with False."""
        ...

    def get(self, task_id: str) -> base.TaskRecord | None:
        """The task, or None."""
        ...

    def list_tasks(self, *, status: str | None = None, limit: int = 100) -> list[base.TaskRecord]:
        """Newest first."""
        ...

    def cancel(self, task_id: str, reason: str = "cancelled") -> base.TaskRecord:
        """End a task that has not ended; a running worker is fenced out."""
        ...

    def retry(self, task_id: str, *, instructions: str | None = None) -> base.TaskRecord:
        """Put an ended task back in the queue as a new generation."""
        ...

    def claim(self, worker_id: str, lease_s: float) -> base.Lease | None:
        """Atomically lease the oldest runnable task (pending, or running with an expired lease)."""
        ...

    def claim_task(self, task_id: str, worker_id: str, lease_s: float) -> base.Lease | None:
        """Lease one named task if runnable now; None when leased elsewhere or ended."""
        ...

    def reap(self, *, pending_stale_s: float) -> list[str]:
        """Return expired leases to pending and touch stale pending tasks; their ids."""
        ...

    def heartbeat(self, leases: Sequence[base.Lease], lease_s: float) -> set[str]:
        """Extend the leases; returns the ids of tasks whose lease was lost."""
        ...

    def release(
        self,
        lease: base.Lease,
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


class Journal(Protocol):
    """A leased run's journal: turns, transcript, evidence, checklist, and its end."""

    def journal(self, lease: base.Lease, **rows: Unpack[base.JournalWrite]) -> None:
        """Persist, in one fenced write, what a run produced since its last write (`rows`)."""
        ...

    def turns(self, task_id: str, generation: int) -> list[Turn]:
        """The journaled turns of a task's generation: steps 1..K in order, stopping at a gap."""
        ...

    def append_messages(
        self,
        lease: base.Lease,
        step: int,
        messages: Sequence[Message],
        evidence: Sequence[ToolCallRecord] = (),
        checklist: Sequence[tuple[str, str, str]] = (),
    ) -> None:
        """Persist one step's messages, evidence and checklist changes (`journal`, no turn)."""
        ...

    def transcript(self, run_id: int) -> list[Message]:
        """A run's messages, in order."""
        ...

    def baseline(self, lease: base.Lease, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """The protected-file manifest the task's first run took (`manifest`, if this is it)."""
        ...

    def runs(self, task_id: str) -> list[base.RunRecord]:
        """A task's runs, oldest first."""
        ...

    def evidence(self, task_id: str) -> list[ToolCallRecord]:
        """Every tool call recorded for a task, in order."""
        ...

    def checklist(self, task_id: str) -> list[tuple[str, str, str]]:
        """``(item, status, note)`` rows."""
        ...

    def finish(
        self, lease: base.Lease, outcome: base.RunOutcome, **rows: Unpack[base.JournalWrite]
    ) -> None:
        """Record a run's end: task status, run row, escalation, stop-reason row, outbox rows.

        `rows` are what the run produced after its last `journal` write: they are written with
        the end, in one write.
        """
        ...


class LedgerStore(Protocol):
    """The store side of the effects ledger: side effects by idempotency key."""

    def effect_lookup(self, key: str, call: ToolCall) -> ToolResult | None:
        """The recorded result of `call` under `key`, if it finished.

        `EffectDivergence` when `key` was begun for another call (name or arguments).
        """
        ...

    def effect_open(
        self, lease: base.Lease, key: str, call: ToolCall, **rows: Unpack[base.JournalWrite]
    ) -> base.HeldEffect | None:
        """Begin `call` under `key` unless the key is held, in one fenced write with `rows`.

        None when it was begun now (it may run); otherwise what the key holds, learned from the
        insert's conflict: the caller checks it is the same call, and answers a done one from
        its result. `rows` (what the run produced since its last write, the turn asking for the
        call among them) commit with it, so the turn is durable before its effect starts.
        """
        ...

    def effects_open(
        self,
        lease: base.Lease,
        calls: Sequence[tuple[str, ToolCall]],
        **rows: Unpack[base.JournalWrite],
    ) -> list[base.HeldEffect | None]:
        """`effect_open` for each of `calls` (distinct keys), all in one fenced write with `rows`.

        For the side-effecting calls of one batch, which run side by side: one answer per call,
        in order.
        """
        ...

    def effect_begin(
        self, lease: base.Lease, key: str, call: ToolCall, *, reissue: bool = True
    ) -> bool:
        """Journal that a side effect is about to run; True when it may run.

        A key begun by an earlier lease and never recorded is re-issued under it (its issue
        count bumped) only with `reissue`; otherwise nothing is written and the answer is False
        (its outcome is unknown). `EffectDivergence` as for lookup.
        """
        ...

    def effect_record(self, lease: base.Lease, key: str, result: ToolResult) -> None:
        """Journal a side effect's result."""
        ...

    def effects(self, task_id: str) -> list[dict[str, Any]]:
        """The ledger rows of a task."""
        ...


class ReviewQueue(Protocol):
    """The human queue (escalations, reviews) and the stop-reason telemetry."""

    def escalations(self, *, status: str | None = "open") -> list[base.Escalation]:
        """The human queue, oldest first."""
        ...

    def escalation(self, escalation_id: int) -> base.Escalation | None:
        """One entry."""
        ...

    def resolve(
        self,
        escalation_id: int,
        *,
        note: str | None = None,
        requeue: bool = False,
        instructions: str | None = None,
        budget_extra: Mapping[str, float] | None = None,
        by: str | None = None,
    ) -> base.Escalation:
        """Close an escalation, or requeue its task with instructions; `by` is who did it.

        A review closed without requeue is a rejection: its task ends ``failed``.
        `budget_extra` (``{"usd": 0.5}``, ``{"tokens": 10000}``) raises the task's budget on a
        requeue.
        """
        ...

    def approve(
        self,
        escalation_id: int,
        *,
        by: str,
        note: str | None = None,
        certificate: str | None = None,
        channel: str | None = None,
        os_user: str | None = None,
    ) -> base.Escalation:
        """A person approves a review: its task, ``awaiting_review``, becomes ``done``.

        `certificate` is the approved certificate's path, kept in the task's result with who
        approved it, through which channel (``ui``, ``api``, ``cli``) and as which OS user.
        """
        ...

    def stop_rows(self, *, since: float) -> list[base.StopRow]:
        """Terminal telemetry rows since a time."""
        ...


class Reviewers(Protocol):
    """The people who may approve, resolve and requeue; the store keeps a hash of each secret."""

    def add_reviewer(self, name: str, secret_hash: str) -> base.Reviewer:
        """Keep a new reviewer; `UserError` when the name is taken."""
        ...

    def reviewer(self, name: str) -> base.Reviewer | None:
        """One reviewer, or None."""
        ...

    def reviewers(self) -> list[base.Reviewer]:
        """Every reviewer, by name."""
        ...

    def remove_reviewer(self, name: str) -> bool:
        """Forget a reviewer; False when there was none of that name."""
        ...


class WorkerStore(TaskQueue, Journal, LedgerStore, Protocol):
    """What a worker runs tasks on: the queue, the journal and the effects ledger."""


class TaskStore(WorkerStore, ReviewQueue, Protocol):
    """Durable tasks, leases, run journals, the effects ledger and the human queue."""


class BrowseStore(TaskStore, Reviewers, Protocol):
    """A `TaskStore` that also serves the review UI's pages and records its actions."""

    def task_page(
        self,
        *,
        status: str | None = None,
        type: str | None = None,
        text: str | None = None,
        after: tuple[float, str] | None = None,
        limit: int = 50,
    ) -> base.TaskPage:
        """Tasks newest first, filtered; `after` is the previous page's `TaskPage.next`.

        `text` matches a substring of the id or the reason, case-insensitively.
        """
        ...

    def task_types(self) -> list[str]:
        """Every task type submitted, sorted."""
        ...

    def queue_page(
        self, *, status: str | None = "open", after: int | None = None, limit: int = 50
    ) -> list[base.QueueRow]:
        """Queue entries oldest first; `after` is the last id of the previous page."""
        ...

    def queue_count(self, *, status: str = "open") -> int:
        """Entries with this status."""
        ...

    def task_escalations(self, task_id: str) -> list[int]:
        """Ids of a task's queue entries, oldest first."""
        ...

    def journals(self, task_id: str) -> list[base.RunJournal]:
        """A task's runs, oldest first, each with its turns and transcript."""
        ...

    def stop_rows_of(self, *, since: float, task_type: str | None = None) -> list[base.StopRow]:
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
    ) -> base.ReviewAction:
        """Keep who did what, and when."""
        ...

    def actions(self, *, task_id: str, limit: int = 50) -> list[base.ReviewAction]:
        """A task's actions, newest first."""
        ...
