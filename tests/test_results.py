"""The run's records: a tool call is measured where it runs, and its duration reaches the events."""

from __future__ import annotations

import asyncio
import time

import pytest

import donegate
from donegate.events import Event, ToolCalled
from donegate.messages import Ending, Message, TextPart, ToolCall, ToolResult, Turn
from donegate.models.base import ModelRequest
from donegate.models.function import FunctionModel
from donegate.records.status import _TERMINAL, Status, task_status
from donegate.results import ToolCallRecord

NAP = 0.2


def nap() -> str:
    """Sleep a fifth of a second."""
    time.sleep(NAP)
    return "rested"


async def anap() -> str:
    """Sleep a fifth of a second, without blocking the loop."""
    await asyncio.sleep(NAP)
    return "rested"


def _calls_then_ends(name: str) -> FunctionModel:
    def answer(request: ModelRequest) -> Turn:
        if any(m.role == "tool" for m in request.messages):
            part = TextPart(text="done")
            return Turn(message=Message(role="assistant", parts=(part,)), ending=Ending.COMPLETE)
        call = ToolCall.from_args(id="c1", name=name, arguments={})
        return Turn(message=Message(role="assistant", parts=(call,)), ending=Ending.TOOL_USE)

    return FunctionModel(answer)


def _tool_events(events: list[Event]) -> list[ToolCalled]:
    return [e for e in events if isinstance(e, ToolCalled)]


def _assert_measured(record: ToolCallRecord, before: float, after: float) -> None:
    assert record.executed
    assert abs(record.duration_s - NAP) < 0.05, record.duration_s
    assert record.started_at is not None and record.ended_at is not None
    assert before <= record.started_at < record.ended_at <= after
    assert record.ended_at - record.started_at == pytest.approx(record.duration_s)


def test_a_sleeping_tool_reports_its_real_duration() -> None:
    events: list[Event] = []
    before = time.time()
    result = donegate.run("rest", model=_calls_then_ends("nap"), tools=[nap], events=events.append)
    after = time.time()
    assert result.complete
    [event] = _tool_events(events)
    assert abs(event.duration_s - NAP) < 0.05, event.duration_s
    assert event.record is result.tool_calls[0]  # the event carries the run's one record
    _assert_measured(event.record, before, after)


def test_an_async_sleeping_tool_reports_its_real_duration() -> None:
    events: list[Event] = []
    before = time.time()
    result = asyncio.run(
        donegate.arun("rest", model=_calls_then_ends("anap"), tools=[anap], events=events.append)
    )
    after = time.time()
    [event] = _tool_events(events)
    assert (event.step, event.call.name, event.result.content) == (1, "anap", "rested")
    _assert_measured(event.record, before, after)
    assert result.tool_calls == (event.record,)


def test_an_unknown_tool_is_answered_without_running() -> None:
    events: list[Event] = []
    donegate.run("rest", model=_calls_then_ends("missing"), tools=[nap], events=events.append)
    [event] = _tool_events(events)
    assert not event.executed and event.result.is_error
    assert "unknown tool 'missing'" in event.result.content


def test_tool_called_still_builds_from_its_fields() -> None:
    call = ToolCall.from_args(id="c1", name="nap", arguments={})
    result = ToolResult(call_id="c1", name="nap", content="ok")
    event = ToolCalled(step=2, call=call, result=result, executed=True, idempotency_key="k")
    assert event.record == ToolCallRecord(
        step=2, call=call, result=result, executed=True, idempotency_key="k"
    )
    assert (event.step, event.idempotency_key, event.duration_s, event.kind) == (
        2, "k", 0.0, "tool_called",
    )  # fmt: skip
    with pytest.raises(TypeError, match="needs a record"):
        ToolCalled(step=2, call=call)


def test_each_terminal_ending_maps_to_its_own_status_and_the_rest_to_none() -> None:
    mapped = {e: Status.from_ending(e) for e in Ending}
    assert {e for e, s in mapped.items() if s is not None} == set(_TERMINAL)
    assert mapped[Ending.ERROR] is Status.PROVIDER_ERROR
    assert mapped[Ending.COMPLETE] is None and mapped[Ending.TOOL_USE] is None
    terminal = [s for s in mapped.values() if s is not None]
    assert len(set(terminal)) == len(terminal)


ESCALATED = (Status.GATED, Status.BUDGET_EXCEEDED)  # a person decides: stop, or grant more


def test_the_status_to_task_status_table() -> None:
    assert {s: task_status(s) for s in Status} == {
        s: "done" if s is Status.COMPLETE else "escalated" if s in ESCALATED else "failed"
        for s in Status
    }
    assert task_status(Status.COMPLETE, human_closure=True) == "awaiting_review"
    assert task_status(Status.GATED, human_closure=True) == "escalated"
