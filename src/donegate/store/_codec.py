"""Messages, calls, results and whole turns as JSON: the `kind` discriminator picks parts back.

A `Turn` is stored losslessly (message, ending, raw reason, detail, usage, error, model,
response id, wire format): a resumed run replays it in place of a model call.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from donegate.messages import (
    Ending,
    ErrorInfo,
    MediaPart,
    Message,
    Part,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

__all__ = [
    "call_from_json",
    "dumps",
    "loads",
    "message_from_json",
    "message_to_json",
    "part_to_json",
    "result_from_json",
    "turn_from_json",
    "turn_to_json",
]

_PARTS: dict[str, type[Any]] = {
    "text": TextPart,
    "thinking": ThinkingPart,
    "refusal": RefusalPart,
    "media": MediaPart,
    "tool_call": ToolCall,
    "server_tool": ServerToolPart,
    "tool_result": ToolResult,
}


def dumps(value: Any) -> str:
    """Compact JSON; anything not JSON-native is stringified rather than lost."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def loads(text: str | None) -> Any:
    """JSON text back to data (None stays None)."""
    return None if text is None else json.loads(text)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def part_to_json(part: Part) -> dict[str, Any]:
    """One part as a JSON object (defaults left out to keep transcripts small)."""
    out: dict[str, Any] = {"kind": part.kind}
    for f in dataclasses.fields(part):
        if f.name == "kind":
            continue
        value = getattr(part, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        out[f.name] = _plain(value)
    return out


def _part_from_json(data: Mapping[str, Any]) -> Part:
    fields = dict(data)
    kind = fields.pop("kind")
    cls = _PARTS.get(kind)
    if cls is None:
        raise ValueError(f"unknown part kind {kind!r}")
    part: Part = cls(**fields)
    return part


def message_to_json(message: Message) -> dict[str, Any]:
    """A message as ``{"role": ..., "parts": [...]}``."""
    return {"role": message.role, "parts": [part_to_json(p) for p in message.parts]}


def message_from_json(data: Mapping[str, Any]) -> Message:
    """The inverse of `message_to_json`."""
    return Message(role=data["role"], parts=tuple(_part_from_json(p) for p in data["parts"]))


def call_from_json(data: Mapping[str, Any]) -> ToolCall:
    """A `ToolCall` from `part_to_json` output."""
    part = _part_from_json({**data, "kind": "tool_call"})
    assert isinstance(part, ToolCall)
    return part


def result_from_json(data: Mapping[str, Any]) -> ToolResult:
    """A `ToolResult` from `part_to_json` output."""
    part = _part_from_json({**data, "kind": "tool_result"})
    assert isinstance(part, ToolResult)
    return part


def _fields_to_json(value: Any) -> dict[str, Any]:
    """A flat dataclass (`Usage`, `ErrorInfo`) as an object, defaults left out."""
    return {
        f.name: _plain(getattr(value, f.name))
        for f in dataclasses.fields(value)
        if getattr(value, f.name) != f.default
    }


def turn_to_json(turn: Turn) -> dict[str, Any]:
    """A classified turn as a JSON object; every field kept, defaults left out."""
    out: dict[str, Any] = {"message": message_to_json(turn.message), "ending": turn.ending.value}
    for f in dataclasses.fields(turn):
        value = getattr(turn, f.name)
        if f.name in out or value is None:
            continue
        if isinstance(value, Usage | ErrorInfo):
            data = _fields_to_json(value)
            if data or isinstance(value, ErrorInfo):
                out[f.name] = data
        else:
            out[f.name] = _plain(value)
    return out


def turn_from_json(data: Mapping[str, Any]) -> Turn:
    """The inverse of `turn_to_json`."""
    fields = dict(data)
    message = message_from_json(fields.pop("message"))
    ending = Ending(fields.pop("ending"))
    usage = Usage(**fields.pop("usage", {}))
    error = fields.pop("error", None)
    return Turn(
        message=message,
        ending=ending,
        usage=usage,
        error=ErrorInfo(**error) if error is not None else None,
        **fields,
    )
