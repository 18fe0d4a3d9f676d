"""Typed run events and the `EventSink` protocol that storage, telemetry and UIs listen on.

The loop emits, in order: `ModelCalled` after every model response (classified), `ToolCalled`
for every call answered (executed or not), `TextDelta`/`Progress` while streaming, and exactly
one `RunEnded` carrying the `RunResult`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

from donegate.messages import Ending, Message, ToolCall, ToolResult, Turn
from donegate.results import RunResult, ToolCallRecord

__all__ = [
    "Event",
    "EventSink",
    "ModelCalled",
    "Progress",
    "RunEnded",
    "TextDelta",
    "ToolCalled",
    "TurnAppended",
    "fan_out",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCalled:
    """A model call returned and was classified."""

    step: int
    """1-based model-call number in this run."""
    model: str
    """``provider:model``."""
    turn: Turn
    """The classified turn."""
    duration_s: float
    """Wall time of the call."""
    kind: Literal["model_called"] = "model_called"


@dataclass(frozen=True, kw_only=True, slots=True, init=False)
class ToolCalled:
    """A tool call was answered; `record` is the one record of it, measured where it ran.

    ``ToolCalled(record=r)`` is the form to use; the record's fields (`step`, `call`, `result`,
    `executed`, `idempotency_key`, `duration_s`) read through, and may still be passed one by
    one to build the record (as before the record existed).
    """

    record: ToolCallRecord
    """The answered call: what was asked, the answer, whether it ran, how long it took."""
    kind: Literal["tool_called"] = field(default="tool_called")

    def __init__(
        self,
        *,
        record: ToolCallRecord | None = None,
        step: int | None = None,
        call: ToolCall | None = None,
        result: ToolResult | None = None,
        executed: bool | None = None,
        idempotency_key: str | None = None,
        duration_s: float = 0.0,
    ) -> None:
        if record is None:
            if step is None or call is None or result is None or executed is None:
                raise TypeError("ToolCalled needs a record, or step, call, result and executed")
            record = ToolCallRecord(
                step=step,
                call=call,
                result=result,
                executed=executed,
                idempotency_key=idempotency_key,
                duration_s=duration_s,
            )
        object.__setattr__(self, "record", record)
        object.__setattr__(self, "kind", "tool_called")

    @property
    def step(self) -> int:
        """The model call that asked for it."""
        return self.record.step

    @property
    def call(self) -> ToolCall:
        """The call."""
        return self.record.call

    @property
    def result(self) -> ToolResult:
        """The answer appended to the transcript."""
        return self.record.result

    @property
    def executed(self) -> bool:
        """False when the harness answered without running the tool (limit, malformed, replayed)."""
        return self.record.executed

    @property
    def idempotency_key(self) -> str | None:
        """The key passed to a side-effecting tool."""
        return self.record.idempotency_key

    @property
    def duration_s(self) -> float:
        """Wall time of the execution (the record's, measured where the tool ran)."""
        return self.record.duration_s


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnAppended:
    """Messages were appended to the transcript (persist them before the next step)."""

    step: int
    """The model call the messages follow."""
    messages: Sequence[Message]
    """The new messages, in order."""
    kind: Literal["turn_appended"] = "turn_appended"


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta:
    """Visible text arriving on a streamed call."""

    step: int
    """The model call streaming."""
    text: str
    """The new text."""
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, kw_only=True, slots=True)
class Progress:
    """A progress update the model wrote in a thinking block: narration, never an answer."""

    step: int
    """The model call that carried it."""
    text: str
    """The update."""
    kind: Literal["progress"] = "progress"


@dataclass(frozen=True, kw_only=True, slots=True)
class RunEnded:
    """The run ended; always the last event."""

    result: RunResult
    """The run's result."""
    ending: Ending | None = None
    """The last turn's ending."""
    kind: Literal["run_ended"] = "run_ended"


Event: TypeAlias = ModelCalled | ToolCalled | TurnAppended | TextDelta | Progress | RunEnded


class EventSink(Protocol):
    """Anything that takes run events."""

    def __call__(self, event: Event) -> None:
        """Handle one event; must not raise."""
        ...


def fan_out(*sinks: EventSink | None) -> EventSink | None:
    """One sink feeding several (None entries dropped); None when there are none."""
    live = [s for s in sinks if s is not None]
    if not live:
        return None
    if len(live) == 1:
        return live[0]

    def emit(event: Event) -> None:
        for sink in live:
            sink(event)

    return emit


class NullSink:
    """A sink that drops every event: the default, so the loop never asks whether it has one."""

    def __call__(self, event: Event) -> None:
        """Drop `event`."""
