"""The loop's dispatch driven directly (no driver): every `Ending` has a handler and a status."""

from __future__ import annotations

from typing import Any

import pytest

from donegate.actions import CallModel, RunTools
from donegate.events import Event, RunEnded, ToolCalled
from donegate.loop import LoopConfig, Policies, RunResult, Status, ToolCallRecord, agent_loop
from donegate.messages import Ending, Message, TextPart, ToolCall, ToolResult, Turn
from donegate.models.base import ModelSettings
from donegate.testing.player import ScriptedModel
from donegate.tools import Tool

# What one turn of each ending does to a run allowed one model call, with no retries left.
FIRST_TURN_ENDS: dict[Ending, Status] = {
    Ending.COMPLETE: Status.COMPLETE,
    Ending.TOOL_USE: Status.MAX_STEPS,  # the call is never run on the last allowed step
    Ending.TRUNCATED: Status.TRUNCATED,
    Ending.FILTERED: Status.FILTERED,
    Ending.REFUSED: Status.REFUSED,
    Ending.PAUSED: Status.MAX_STEPS,
    Ending.CONTEXT_EXCEEDED: Status.CONTEXT_EXCEEDED,
    Ending.EMPTY: Status.EMPTY,
    Ending.ERROR: Status.PROVIDER_ERROR,
    Ending.MALFORMED_TOOL_CALL: Status.MALFORMED_TOOL_CALL,
}

NO_RETRIES = Policies(truncation="fail", malformed_retries=0, pause_retries=0)


def echo(text: str) -> str:
    """Say it back."""
    return text


def turn_of(ending: Ending) -> Turn:
    parts: tuple[Any, ...] = (TextPart(text="done"),)
    if ending is Ending.TOOL_USE:
        parts = (ToolCall.from_args(id="c1", name="echo", arguments={"text": "hi"}),)
    return Turn(message=Message(role="assistant", parts=parts), ending=ending)


def drive(config: LoopConfig, turns: list[Turn]) -> tuple[RunResult, list[Any]]:
    """Run the generator by hand: turns answer model calls, tools are answered 'ok'."""
    loop = agent_loop(config, [Message.user("go")])
    actions: list[Any] = []
    outcome: Any = None
    while True:
        try:
            action = loop.send(outcome)
        except StopIteration as stop:
            return stop.value, actions
        actions.append(action)
        if isinstance(action, CallModel):
            outcome = turns.pop(0)
        elif isinstance(action, RunTools):
            outcome = [
                ToolCallRecord(
                    step=action.step,
                    call=call,
                    result=ToolResult(call_id=call.id, name=call.name, content="ok"),
                    executed=True,
                )
                for call, _, _ in action.calls
            ]
        else:
            raise AssertionError(f"no gate was configured, yet the loop asked {action}")


def config(*, max_steps: int, events: list[Event] | None = None) -> LoopConfig:
    extra: dict[str, Any] = {} if events is None else {"sink": events.append}
    return LoopConfig(
        model=ScriptedModel([]),
        tools={"echo": Tool.from_function(echo)},
        settings=ModelSettings(),
        max_steps=max_steps,
        policies=NO_RETRIES,
        **extra,
    )


def test_the_table_names_every_ending() -> None:
    assert set(FIRST_TURN_ENDS) == set(Ending)


@pytest.mark.parametrize("ending", list(Ending))
def test_every_ending_ends_a_run_with_its_own_status_without_a_sink(ending: Ending) -> None:
    result, actions = drive(config(max_steps=1), [turn_of(ending)])
    assert result.status is FIRST_TURN_ENDS[ending]
    assert result.model_calls == 1 and result.ending is ending
    assert [type(a) for a in actions] == [CallModel]  # nothing ran


def test_a_tool_turn_runs_its_calls_then_the_next_turn_ends_it() -> None:
    events: list[Event] = []
    result, actions = drive(
        config(max_steps=3, events=events), [turn_of(Ending.TOOL_USE), turn_of(Ending.COMPLETE)]
    )
    assert result.status is Status.COMPLETE and result.model_calls == 2
    assert [type(a) for a in actions] == [CallModel, RunTools, CallModel]
    ran = [e for e in events if isinstance(e, ToolCalled)]
    assert [(e.step, e.call.name, e.result.content, e.executed) for e in ran] == [
        (1, "echo", "ok", True)
    ]
    assert isinstance(events[-1], RunEnded) and events[-1].result is result
