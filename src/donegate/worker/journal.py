"""`JournalSink`: the event sink that writes a run's journal to the store as the loop goes.

Every `TurnAppended` is persisted before the loop takes its next step, together with the
evidence (`ToolCalled`) and checklist changes gathered since the last one, in one fenced write.
Unlike an ordinary sink, this one raises `LeaseLost` when the lease is gone (a heartbeat found it
claimed elsewhere, or a write was refused): the run must stop at once, not keep spending model
calls whose results could never be recorded.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from donegate.events import Event, RunEnded, ToolCalled, TurnAppended
from donegate.messages import Message, Turn
from donegate.models.base import Model, ModelRequest
from donegate.store import Evidence, Lease, LeaseLost

if TYPE_CHECKING:
    from donegate.store import TaskStore

__all__ = ["CHECKLIST_TOOL", "JournalSink", "JournaledModel"]

CHECKLIST_TOOL = "update_checklist"
"""The harness's checklist tool; its successful calls update the stored checklist."""


class JournalSink:
    """Persists one leased run's transcript, evidence and checklist, step by step."""

    def __init__(self, store: TaskStore, lease: Lease) -> None:
        self.store = store
        self.lease = lease
        self.lost = threading.Event()
        """Set by the worker's heartbeat when the lease is gone; the next event raises."""
        self.steps = 0
        """Writes made (one per appended turn)."""
        self._evidence: list[Evidence] = []
        self._checklist: list[tuple[str, str, str]] = []
        self._prompted = False
        self._prompt: Sequence[Message] = ()

    def prompt(self, messages: Sequence[Message]) -> None:
        """Note the transcript the run starts from; it is written with the first step's turn.

        One write fewer per task, and still before the second model call: a worker that dies
        during the first call restarts the task from its prompt anyway.
        """
        if not self._prompted:
            self._prompt = tuple(messages)
            self._prompted = True

    def __call__(self, event: Event) -> None:
        if self.lost.is_set():
            raise LeaseLost(self.lease.task_id, self.lease.epoch)
        if isinstance(event, ToolCalled):
            self._evidence.append(
                Evidence(
                    step=event.step,
                    call=event.call,
                    result=event.result,
                    executed=event.executed,
                    idempotency_key=event.idempotency_key,
                    duration_s=event.duration_s,
                )
            )
            if event.call.name == CHECKLIST_TOOL and not event.result.is_error:
                args = event.call.arguments or {}
                item, status = args.get("item"), args.get("status")
                if isinstance(item, str) and isinstance(status, str):
                    self._checklist.append((item, status, str(args.get("note") or "")))
        elif isinstance(event, TurnAppended):
            self._flush(event.step, event.messages)
        elif isinstance(event, RunEnded) and (self._prompt or self._evidence or self._checklist):
            self._flush(event.result.model_calls, [])

    def _flush(self, step: int, messages: Sequence[Message]) -> None:
        if self._prompt:
            messages = (*self._prompt, *messages)
        try:
            self.store.append_messages(self.lease, step, messages, self._evidence, self._checklist)
        except LeaseLost:
            self.lost.set()
            raise
        self._prompt = ()
        self._evidence = []
        self._checklist = []
        self.steps += 1


class JournaledModel:
    """A `Model` that hands its first request's messages to the journal before answering.

    The loop's events carry what each step appends; the prompt the run starts from is only in
    the first request, so this is where the journal gets it.
    """

    def __init__(self, model: Model, journal: JournalSink) -> None:
        self.model = model
        self.journal = journal

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.model.name

    def request(self, request: ModelRequest) -> Turn:
        """Journal the prompt, then call the model."""
        self.journal.prompt(request.messages)
        return self.model.request(request)

    async def arequest(self, request: ModelRequest) -> Turn:
        """Journal the prompt, then call the model."""
        self.journal.prompt(request.messages)
        return await self.model.arequest(request)

    def astream(self, request: ModelRequest) -> AsyncIterator[str | Turn]:
        """Journal the prompt, then stream."""
        self.journal.prompt(request.messages)
        return self.model.astream(request)
