"""A result answered from the ledger answers the call asking now, under that call's id."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

import donegate
from donegate.messages import ToolCall, ToolResult
from donegate.testing.player import ScriptedModel, unanswered
from donegate.testing.script import parse_script
from donegate.tools import MemoryLedger, tool

SENT: list[str] = []


@tool(side_effect=True)
def send(to: str) -> str:
    """Send a message."""
    SENT.append(to)
    return f"sent to {to}"


def test_a_recorded_result_is_rebound_to_the_new_calls_id() -> None:
    # a resumed run's model gave the call a new id; the ledger holds the old run's result
    ledger = MemoryLedger()
    ledger.record("run:1:0", ToolResult(call_id="call_old", name="send", content="sent to ann"))
    raw: dict[str, Any] = {
        "prompt": "tell ann",
        "turns": [{"tool_call": "send", "args": {"to": "ann"}}, {"text": "Told ann."}],
    }
    player = ScriptedModel(parse_script(raw, source="s.yaml"))
    SENT.clear()
    result = donegate.run("tell ann", model=player, tools=[send], ledger=ledger)
    assert result.status == "complete", result.reason
    assert SENT == []  # answered from the ledger, not sent again
    [record] = result.tool_calls
    assert record.executed is False and record.result.call_id == record.call.id != "call_old"
    assert record.result.content == "sent to ann"
    assert unanswered(result.transcript) == []
    player.assert_exhausted()  # the second request's history answered every call


class BatchingLedger(MemoryLedger):
    """A `BatchLedger`: notes each batch it is asked to look up."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def lookup_batch(self, calls: Sequence[tuple[str, ToolCall]]) -> None:
        self.batches.append([key for key, _ in calls])


@tool
def look(path: str) -> str:
    """Read something (no side effect)."""
    return f"looked at {path}"


def _sends(*steps: list[str]) -> dict[str, Any]:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"tool": name, "args": {"to": "x"} if name == "send" else {"path": "p"}}
                        for name in step]}
        for step in steps
    ]  # fmt: skip
    return {"prompt": "go", "turns": [*turns, {"text": "Done."}]}


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_batch_ledger_looks_up_each_step_s_side_effects_together(driver: str) -> None:
    # step 1: two sends and a look (the sends together); step 2: one send (looked up alone)
    raw = _sends(["send", "look", "send"], ["send"])
    ledger = BatchingLedger()
    player = ScriptedModel(parse_script(raw, source="s.yaml"))
    SENT.clear()
    options: dict[str, Any] = {"model": player, "tools": [send, look], "ledger": ledger}
    if driver == "sync":
        result = donegate.run("go", **options)
    else:
        result = asyncio.run(donegate.arun("go", **options))
    assert result.status == "complete", result.reason
    [batch] = ledger.batches
    assert [key.split(":", 1)[1] for key in batch] == ["1:0", "1:2"]
    assert SENT == ["x", "x", "x"]  # each call still looked up, begun and recorded
    assert sorted(key.split(":", 1)[1] for key in ledger.results) == ["1:0", "1:2", "2:0"]
