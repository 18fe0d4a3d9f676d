"""`JournalSink` and `JournaledModel`: a leased run's journal, written as the loop goes and replayed
on resume.

The sink makes one fenced write per model call, at `ModelCalled`: that call's classified turn
(so it is durable before any tool of its step runs), together with the messages, evidence and
checklist changes the loop produced since the previous write (the first write also carries the
task's protected-file baseline when this is its first run). A turn that calls a side-effecting
tool (`effect_tools`) waits instead for the ledger: it rides with its first effect's begin
(`ride`, one transaction), so it is still durable before any effect of its step starts; if no
effect takes it, it is written when its step's tools have answered. What the last step appends
rides with the run's outcome (`JournalSink.finish`), so a task costs one write per model call
plus its end. An ``error`` turn is not journaled: it is the provider failing, not the model
answering, and a retry asks again at that step.

On resume the model is wrapped in a `JournaledModel` holding the turns journaled so far: it
answers the run's first requests with them, in order (no model call, no cost), and calls the
model from the first step past them. The loop re-derives the transcript by acting on the replayed
turns, so their side-effecting calls get the same idempotency keys, and are the same calls. A
model that keeps its own place (a script player: `ReplayAware`) is told which requests the
journal answered for it.

Unlike an ordinary sink, this one raises `LeaseLost` when the lease is gone (a heartbeat found it
claimed elsewhere, or a write was refused): the run must stop at once, not keep spending model
calls whose results could never be recorded. It raises `Halted` when its worker is stopping on
a fault (a full disk, a store gone): the run stops at its next event and the task is put back.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from donegate.events import Event, ModelCalled, ToolCalled, TurnAppended
from donegate.messages import Ending, Message, Turn
from donegate.models.base import Model, ModelRequest
from donegate.records.checklist import CHECKLIST_TOOL, ChecklistUpdate
from donegate.results import ToolCallRecord
from donegate.store import JournalWrite, Lease, LeaseLost, RunOutcome

if TYPE_CHECKING:
    from donegate.store import Journal

__all__ = ["CHECKLIST_TOOL", "Halted", "JournalSink", "JournaledModel", "ReplayAware"]

R = TypeVar("R")


class Halted(Exception):
    """The worker is stopping on `fault`; a run in hand stops at its next event."""

    def __init__(self, fault: Exception) -> None:
        super().__init__(str(fault))
        self.fault = fault


class JournalSink:
    """Persists one leased run's turns, transcript, evidence and checklist, one write per call."""

    def __init__(self, store: Journal, lease: Lease) -> None:
        self.store = store
        self.lease = lease
        self.lost = threading.Event()
        """Set by the worker's heartbeat when the lease is gone; the next event raises."""
        self.halted: Exception | None = None
        """Set by the worker when it stops on a fault; the next event raises `Halted`."""
        self.replaying = 0
        """Model calls answered from the journal (set by `JournaledModel`); not written again."""
        self.writes = 0
        """Journal writes made: one per live model call (the outcome's write not counted)."""
        self.effect_tools: Collection[str] = ()
        """Names of the run's side-effecting tools: a turn calling one rides with its begin."""
        self._turn: tuple[int, Turn] | None = None  # a turn waiting to ride with its effect
        self._messages: list[tuple[int, Message]] = []
        self._evidence: list[ToolCallRecord] = []
        self._checklist: list[tuple[str, str, str]] = []
        self._prompted = False
        self._baseline: dict[str, Any] | None = None
        self._seq = 0  # messages written: this sink is the only writer of its run's transcript
        self._lock = threading.Lock()  # effects of one step begin on several threads

    def prompt(self, messages: Sequence[Message]) -> None:
        """Note the transcript the run starts from; it is written with the first write."""
        if not self._prompted:
            self._messages[:0] = [(0, m) for m in messages]
            self._prompted = True

    def baseline(self, manifest: Mapping[str, Any]) -> None:
        """Note the task's protected-file manifest (its first run's); written with the first
        write, so it is stored before any tool of the run has run, at no commit of its own."""
        self._baseline = dict(manifest)

    def __call__(self, event: Event) -> None:
        if self.lost.is_set():
            raise LeaseLost(self.lease.task_id, self.lease.epoch)
        if self.halted is not None:
            raise Halted(self.halted)
        if isinstance(event, ToolCalled):
            self._evidence.append(event.record)  # the one record, measured where it ran
            update = ChecklistUpdate.applied(event.call, event.result)
            if update is not None:
                self._checklist.append((update.item, update.status, update.note))
            if self._turn is not None:  # no effect took the turn: its tools have answered
                self._write()
        elif isinstance(event, TurnAppended):
            self._messages.extend((event.step, m) for m in event.messages)
        elif (
            isinstance(event, ModelCalled)
            and event.step > self.replaying  # a replayed turn is journaled already
            and event.turn.ending is not Ending.ERROR
        ):
            if self._turn is not None:
                self._write()
            self._turn = (event.step, event.turn)
            if not any(c.name in self.effect_tools for c in event.turn.tool_calls):
                self._write()

    def ride(self, write: Callable[[JournalWrite], R]) -> R:
        """Call `write` with what is not written yet (empty: nothing); then that is written.

        The ledger's begin calls this, so a step's turn commits with its first effect's begin.
        Writes are serialized: an effect begun on another thread waits for the turn to commit.
        """
        with self._lock:
            rows = self._rows()
            try:
                answer = write(rows)
            except LeaseLost:
                self.lost.set()
                raise
            if rows:
                self.writes += 1
                self._written(rows)
            return answer

    def finish(self, outcome: RunOutcome) -> None:
        """Record the run's end with what it appended after the last write, in one write."""
        self._write(outcome=outcome)

    def flush(self) -> None:
        """Write what is pending, if anything (before a task is given back)."""
        if self._turn or self._messages or self._evidence or self._checklist or self._baseline:
            self._write()

    def _rows(self) -> JournalWrite:
        rows = JournalWrite()
        if self._turn is not None:
            rows["turn"] = self._turn
        if self._messages:
            rows["messages"] = self._messages
            rows["seq"] = self._seq
        if self._evidence:
            rows["evidence"] = self._evidence
        if self._checklist:
            rows["checklist"] = self._checklist
        if self._baseline is not None:
            rows["baseline"] = self._baseline
        return rows

    def _written(self, rows: JournalWrite) -> None:
        self._seq += len(rows.get("messages", ()))
        self._turn = None
        self._messages = []
        self._evidence = []
        self._checklist = []
        self._baseline = None

    def _write(self, *, outcome: RunOutcome | None = None) -> None:
        with self._lock:
            rows = self._rows()
            try:
                if outcome is not None:
                    self.store.finish(self.lease, outcome, **rows)
                else:
                    self.store.journal(self.lease, **rows)
                    self.writes += 1
            except LeaseLost:
                self.lost.set()
                raise
            self._written(rows)


@runtime_checkable
class ReplayAware(Protocol):
    """A model that answers by position (a script player), so must hear of replayed requests."""

    def replayed(self, request: ModelRequest, turn: Turn) -> None:
        """`request` was answered with `turn` from the journal, in this model's place."""
        ...


class JournaledModel:
    """A `Model` that replays a resumed run's journaled turns, then calls the wrapped model.

    Requests 1..K are answered with the K `replay` turns, in order, without calling the model;
    request K+1 on goes to the model. It also hands the first request's messages (the prompt) to
    the journal: the loop's events carry what each step appends, but not what the run starts
    from.
    """

    def __init__(self, model: Model, journal: JournalSink, replay: Sequence[Turn] = ()) -> None:
        self.model = model
        self.journal = journal
        self.replay = tuple(replay)
        self.replayed_calls = 0
        """Requests answered from the journal so far."""
        self.live_calls = 0
        """Requests passed to the model so far."""
        journal.replaying = len(self.replay)  # their turns are journaled already
        self._aware = model if isinstance(model, ReplayAware) else None

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.model.name

    def _from_journal(self, request: ModelRequest) -> Turn | None:
        self.journal.prompt(request.messages)
        if self.replayed_calls < len(self.replay):
            turn = self.replay[self.replayed_calls]
            self.replayed_calls += 1
            if self._aware is not None:
                self._aware.replayed(request, turn)
            return turn
        self.live_calls += 1
        return None

    def request(self, request: ModelRequest) -> Turn:
        """The next journaled turn, else the model's answer."""
        turn = self._from_journal(request)
        return turn if turn is not None else self.model.request(request)

    async def arequest(self, request: ModelRequest) -> Turn:
        """The next journaled turn, else the model's answer."""
        turn = self._from_journal(request)
        return turn if turn is not None else await self.model.arequest(request)

    def astream(self, request: ModelRequest) -> AsyncIterator[str | Turn]:
        """The next journaled turn (no text deltas), else the model's stream."""
        turn = self._from_journal(request)
        return _once(turn) if turn is not None else self.model.astream(request)


async def _once(turn: Turn) -> AsyncIterator[str | Turn]:
    yield turn
