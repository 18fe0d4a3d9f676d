"""Messages, calls and results as JSON: the `kind` discriminator picks the part class back."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from donegate.messages import (
    MediaPart,
    Message,
    Part,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)

__all__ = [
    "call_from_json",
    "dumps",
    "loads",
    "message_from_json",
    "message_to_json",
    "part_to_json",
    "result_from_json",
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
