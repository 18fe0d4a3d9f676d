"""Task specs, models and effect-log readers shared by the worker tests."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

from donegate.messages import Ending, Message, TextPart, ToolCall, Turn
from donegate.models.base import ModelRequest
from donegate.models.function import FunctionModel

DATA = Path(__file__).parent / "data"
SEND_SCRIPT = DATA / "send.yaml"
SEND_TOOL = {"import": "tests.worker.effects:send", "side_effect": True}


def task(
    task_id: str,
    workdir: Path,
    *,
    escalate: bool = False,
    model: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A two-turn task: send one message, then claim completion (escalates when asked to)."""
    spec: dict[str, Any] = {
        "id": task_id,
        "prompt": f"send ann the news ({task_id})",
        "type": "mail",
        "model": model or f"script:{SEND_SCRIPT}",
        "tools": [SEND_TOOL],
        "workdir": str(workdir),
    }
    if escalate:
        spec.update(checks=[{"file_exists": "never-there.txt"}], max_continuations=0)
    spec.update(extra)
    return spec


def tool_turn(name: str, args: dict[str, Any], call_id: str = "c1") -> Turn:
    call = ToolCall.from_args(id=call_id, name=name, arguments=args)
    return Turn(message=Message(role="assistant", parts=(call,)), ending=Ending.TOOL_USE)


def text_turn(text: str) -> Turn:
    return Turn(
        message=Message(role="assistant", parts=(TextPart(text=text),)), ending=Ending.COMPLETE
    )


def send_then_claim(
    on_call: Callable[[int, ModelRequest], None] | None = None,
) -> FunctionModel:
    """The scripted two turns as a FunctionModel; `on_call(n, request)` runs before answering."""
    calls = 0

    def respond(request: ModelRequest) -> Turn:
        nonlocal calls
        calls += 1
        if on_call is not None:
            on_call(calls, request)
        return tool_turn("send", {"to": "ann"}) if calls == 1 else text_turn("Sent it.")

    return FunctionModel(respond, name="function:send")


def effect_counts(log: Path) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """``(deliveries, executions)`` per idempotency key, from the tool's own logs."""
    delivered = collections.Counter(line.split(" ", 1)[0] for line in _lines(log))
    executed = collections.Counter(_lines(log.with_name(log.name + ".calls")))
    return delivered, executed


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text().splitlines() if line]
    except FileNotFoundError:
        return []
