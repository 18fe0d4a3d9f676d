"""The one JSON codec for the canonical values: messages, parts, turns, usage, errors, tool calls.

Each value becomes a JSON object whose fields are its dataclass fields, defaults left out (a
transcript stays small); a part carries its ``kind`` discriminator, which picks its class back.
Decoding takes what encoding wrote, and also a form with every default written out (what
certificates written before this codec embed), so ``x_from_json(x_to_json(v)) == v``.

The store (turns, transcripts, evidence, the effects ledger), certificates and escalation
reports all write these values through here; `to_data` is the one entry point for "whatever
this is, as JSON-ready data".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
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
from donegate.results import ToolCallRecord

__all__ = [
    "call_from_json",
    "canonical_json",
    "dumps",
    "error_from_json",
    "error_to_json",
    "loads",
    "message_from_json",
    "message_to_json",
    "messages_to_json",
    "part_from_json",
    "part_to_json",
    "record_from_json",
    "record_to_json",
    "result_from_json",
    "to_data",
    "turn_from_json",
    "turn_to_json",
    "usage_from_json",
    "usage_to_json",
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


_PART_TYPES = (TextPart, ThinkingPart, RefusalPart, MediaPart, ToolCall, ServerToolPart, ToolResult)


def dumps(value: Any) -> str:
    """Compact JSON; anything not JSON-native is stringified rather than lost."""
    return _ENCODER.encode(value)


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
"""`dumps`'s encoder, made once: `json.dumps` with options makes one per call, which costs more
than encoding a small value (the store encodes every journal row through `dumps`)."""


def loads(text: str | None) -> Any:
    """JSON text back to data (None stays None)."""
    return None if text is None else json.loads(text)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _fields(value: Any, *, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """A flat dataclass's fields as JSON data, those at their default left out."""
    out: dict[str, Any] = {}
    for name, default in _layout(type(value)):
        if name in skip:
            continue
        item = getattr(value, name)
        if default is not dataclasses.MISSING and item == default:
            continue
        out[name] = _plain(item)
    return out


_LAYOUTS: dict[type, tuple[tuple[str, Any], ...]] = {}


def _layout(cls: type) -> tuple[tuple[str, Any], ...]:
    """A dataclass's ``(name, default)`` pairs, read once per class (every message part of
    every journal write and certificate goes through `_fields`)."""
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = tuple((f.name, f.default) for f in dataclasses.fields(cls))
    return layout


def part_to_json(part: Part) -> dict[str, Any]:
    """One part as a JSON object: its ``kind`` first, defaults left out."""
    return {"kind": part.kind, **_fields(part, skip=("kind",))}


def part_from_json(data: Mapping[str, Any]) -> Part:
    """The inverse of `part_to_json`; an unknown ``kind`` is a `ValueError`."""
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
    return Message(role=data["role"], parts=tuple(part_from_json(p) for p in data["parts"]))


def messages_to_json(messages: Sequence[Message | Mapping[str, Any]]) -> list[Any]:
    """A transcript as a JSON list; entries that are JSON data already are kept as they are."""
    return [to_data(m) for m in messages]


def call_from_json(data: Mapping[str, Any]) -> ToolCall:
    """A `ToolCall` from `part_to_json` output."""
    part = part_from_json({**data, "kind": "tool_call"})
    assert isinstance(part, ToolCall)
    return part


def result_from_json(data: Mapping[str, Any]) -> ToolResult:
    """A `ToolResult` from `part_to_json` output."""
    part = part_from_json({**data, "kind": "tool_result"})
    assert isinstance(part, ToolResult)
    return part


def usage_to_json(usage: Usage) -> dict[str, Any]:
    """Token counts, zeros left out."""
    return _fields(usage)


def usage_from_json(data: Mapping[str, Any]) -> Usage:
    """The inverse of `usage_to_json`."""
    return Usage(**data)


def error_to_json(error: ErrorInfo) -> dict[str, Any]:
    """A provider error, defaults left out."""
    return _fields(error)


def error_from_json(data: Mapping[str, Any]) -> ErrorInfo:
    """The inverse of `error_to_json`."""
    return ErrorInfo(**data)


def turn_to_json(turn: Turn) -> dict[str, Any]:
    """A classified turn as a JSON object; every field kept, defaults left out.

    A `Turn` is stored losslessly (message, ending, raw reason, detail, usage, error, model,
    response id, wire format): a resumed run replays it in place of a model call.
    """
    out: dict[str, Any] = {"message": message_to_json(turn.message), "ending": turn.ending.value}
    for f in dataclasses.fields(turn):
        value = getattr(turn, f.name)
        if f.name in out or value is None:
            continue
        if isinstance(value, Usage):
            if usage := usage_to_json(value):
                out[f.name] = usage
        elif isinstance(value, ErrorInfo):
            out[f.name] = error_to_json(value)
        else:
            out[f.name] = _plain(value)
    return out


def turn_from_json(data: Mapping[str, Any]) -> Turn:
    """The inverse of `turn_to_json`."""
    fields = dict(data)
    message = message_from_json(fields.pop("message"))
    ending = Ending(fields.pop("ending"))
    usage = usage_from_json(fields.pop("usage", None) or {})
    error = fields.pop("error", None)
    return Turn(
        message=message,
        ending=ending,
        usage=usage,
        error=error_from_json(error) if error is not None else None,
        **fields,
    )


def record_to_json(record: ToolCallRecord) -> dict[str, Any]:
    """An answered tool call: its call and result as parts, its flags and times."""
    return {
        "call": part_to_json(record.call),
        "result": part_to_json(record.result),
        **_fields(record, skip=("call", "result")),
    }


def record_from_json(data: Mapping[str, Any]) -> ToolCallRecord:
    """The inverse of `record_to_json`."""
    fields = dict(data)
    return ToolCallRecord(
        call=call_from_json(fields.pop("call")),
        result=result_from_json(fields.pop("result")),
        **fields,
    )


def to_data(value: Any) -> Any:
    """Any canonical value (or mapping, sequence, other dataclass of them) as JSON-ready data."""
    if isinstance(value, Message):
        return message_to_json(value)
    if isinstance(value, Turn):
        return turn_to_json(value)
    if isinstance(value, ToolCallRecord):
        return record_to_json(value)
    if isinstance(value, Usage | ErrorInfo):
        return _fields(value)
    if isinstance(value, _PART_TYPES):
        return part_to_json(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_data(v) for v in value]
    return value


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)  # made once: `json.dumps` with options makes an encoder per call (several per tool call)


def canonical_json(value: Any) -> str:
    """The one canonical JSON text (sorted keys, compact separators, non-ASCII kept): what every
    digest and signature covers (certificates, evidence, hook state, notices)."""
    return _CANONICAL.encode(value)
