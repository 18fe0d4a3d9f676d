"""A result answered from the ledger answers the call asking now, under that call's id."""

from __future__ import annotations

from typing import Any

import donegate
from donegate.messages import ToolResult
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
