"""What a run produced: its `Status`, its `RunResult` and one `ToolCallRecord` per answered call.

These are the bottom-layer records every other layer carries (events, the harness's evidence,
the store's evidence rows, telemetry spans), so one fact has one type: a tool call is measured
once, where it runs, and its duration travels with the record.

The status vocabularies, one per level, and the one place each maps to the next:
```
Ending      how one model turn ended (donegate.messages)
  -> Status       how a run ended: `Status.from_ending` (the turn endings that end a run)
    -> TaskStatus   how a task ended: `task_status` (what the harness and the store record)
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, TypeAlias

from donegate.messages import Ending, Message, ToolCall, ToolResult, Turn, Usage

__all__ = [
    "TASK_OUTCOMES",
    "TASK_TERMINAL",
    "RunResult",
    "Status",
    "TaskOutcome",
    "TaskStatus",
    "ToolCallRecord",
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


TaskStatus: TypeAlias = Literal[
    "pending", "running", "done", "awaiting_review", "escalated", "failed", "cancelled"
]
"""How a task stands in the store: queued, claimed, or one of its ends."""

TASK_TERMINAL: frozenset[str] = frozenset(
    {"done", "awaiting_review", "escalated", "failed", "cancelled"}
)
"""Task statuses a task leaves only by a person's `retry`, `resolve` or `approve`."""

TaskOutcome: TypeAlias = Literal["done", "awaiting_review", "escalated", "failed"]
"""The task statuses a run ends in (what `task_status` gives; `cancelled` is a person's)."""

TASK_OUTCOMES: tuple[TaskOutcome, ...] = ("done", "awaiting_review", "escalated", "failed")
"""Every `TaskOutcome`, in the order reports and charts show them."""


def task_status(status: Status, *, human_closure: bool = False) -> TaskOutcome:
    """The task status a run's `Status` gives: the one Status -> TaskStatus table.

    A complete run is ``done`` (``awaiting_review`` when a person closes it); a run a gate
    stopped is ``escalated`` to a person; every other status is ``failed``.
    """
    if status is Status.COMPLETE:
        return "awaiting_review" if human_closure else "done"
    if status is Status.GATED:
        return "escalated"
    return "failed"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRecord:
    """One tool call and how it was answered, measured where it ran."""

    step: int
    """The model call that asked for it."""
    call: ToolCall
    """The call."""
    result: ToolResult
    """Its answer in the transcript."""
    executed: bool
    """False when the harness answered without running the tool (limit, malformed, replayed)."""
    idempotency_key: str | None = None
    """The key a side-effecting call ran under."""
    duration_s: float = 0.0
    """Wall time answering it took (monotonic clock); 0.0 when it was answered without a wait."""
    started_at: float | None = None
    """Unix time answering it began; None when not measured (answered by the loop itself)."""
    ended_at: float | None = None
    """Unix time it was answered; None when not measured."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunResult:
    """What a run produced and why it stopped."""

    status: Status
    """How the run ended; only `complete` means the answer is usable."""
    text: str
    """The last turn's visible text (partial when the run did not complete)."""
    output: Any = None
    """The finish tool's validated arguments, when it ended the run."""
    transcript: tuple[Message, ...] = ()
    """Every message, the system and user messages first."""
    model_calls: int = 0
    """Model calls made, each counted once."""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    """Every call answered, in order."""
    usage: Usage = field(default_factory=Usage)
    """Summed token usage."""
    ending: Ending | None = None
    """The last turn's ending."""
    reason: str = ""
    """Why the run ended, for people."""
    turns: tuple[Turn, ...] = ()
    """Every classified turn, in order."""

    @property
    def complete(self) -> bool:
        """True only for `Status.COMPLETE`."""
        return self.status is Status.COMPLETE

    @property
    def tool_counts(self) -> dict[str, int]:
        """Executions per tool name (calls answered without running are not counted)."""
        counts: dict[str, int] = {}
        for r in self.tool_calls:
            if r.executed:
                counts[r.call.name] = counts.get(r.call.name, 0) + 1
        return counts
