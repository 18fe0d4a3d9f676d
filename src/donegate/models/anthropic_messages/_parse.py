"""Reading Anthropic Messages JSON: content blocks, stop reasons, usage and error bodies.

Shared by the non-streamed parser, the stream accumulator (which rebuilds the same blocks) and
`parse_request` (assistant history uses the same block shapes as a response).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import (
    Ending,
    Part,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
)
from donegate.models._error_body import error_object
from donegate.models._rules import (
    CUT_OFF,
    context_exceeded,
    error_turn,
    make_turn,
    missing_reason,
)
from donegate.models._values import exact_int

__all__ = [
    "API",
    "STREAM_CUT",
    "error_ending",
    "error_fields",
    "extras",
    "parse_block",
    "parse_error_body",
    "stop_turn",
    "usage_of",
]

API = "anthropic-messages"
STREAM_CUT = CUT_OFF
"""The detail of a stream that stopped before ``message_stop``."""

SIGNALS: dict[str, Ending] = {
    "end_turn": Ending.COMPLETE,
    "stop_sequence": Ending.COMPLETE,
    "tool_use": Ending.TOOL_USE,
    "max_tokens": Ending.TRUNCATED,
    "model_context_window_exceeded": Ending.CONTEXT_EXCEEDED,
    "pause_turn": Ending.PAUSED,
    "refusal": Ending.REFUSED,
}
"""Every documented ``stop_reason`` and the signal it gives."""

TEXT_KEYS = frozenset(("type", "text"))
THINKING_KEYS = frozenset(("type", "thinking", "signature"))
REDACTED_KEYS = frozenset(("type", "data"))
CALL_KEYS = frozenset(("type", "id", "name", "input"))

# No documented block field marks a progress update: Anthropic's thinking docs say that under
# ``thinking.display: "updates"`` every thinking block with non-empty text is one. A block that
# does carry an explicit marker (a proxy's annotation, a future field) is honoured too.
_PROGRESS_FLAGS = frozenset(("progress", "update", "is_progress", "is_update", "progress_update"))
_PROGRESS_VALUES = frozenset(("update", "updates", "progress", "progress_update"))

_FILTER_NEEDLES = ("content filtering policy", "blocked by content filter")


def _fail(path: str, message: str) -> WireFormatError:
    return WireFormatError(API, message, path=path)


def extras(block: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any] | None:
    """The block's fields beyond `known` (citations, caller, cache_control), or None."""
    if block.keys() <= known:
        return None
    out = {k: v for k, v in block.items() if k not in known and v is not None}
    return out or None


def _marks_progress(details: Mapping[str, Any] | None) -> bool:
    if not details:
        return False
    for key, value in details.items():
        if value is True and key in _PROGRESS_FLAGS:
            return True
        if isinstance(value, str) and value in _PROGRESS_VALUES:
            return True
    return False


def _str_or_none(block: Mapping[str, Any], key: str, path: str) -> str | None:
    value = block.get(key)
    if value is None or isinstance(value, str):
        return value or None
    raise _fail(f"{path}.{key}", f"expected a string, got {type(value).__name__}")


def parse_block(block: Any, path: str, *, updates: bool = False) -> Part:
    """One content block as a part; unknown and server-side blocks become `ServerToolPart`.

    `updates` says the request asked for ``thinking.display: "updates"``, where a thinking block
    with text is a progress update rather than reasoning.
    """
    if not isinstance(block, Mapping):
        raise _fail(path, f"a content block must be an object, got {type(block).__name__}")
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise _fail(f"{path}.text", "expected a string")
        return TextPart(text=text, provider_details=extras(block, TEXT_KEYS))
    if kind == "thinking":
        thinking = block.get("thinking")
        if thinking is not None and not isinstance(thinking, str):
            raise _fail(f"{path}.thinking", "expected a string")
        details = extras(block, THINKING_KEYS)
        return ThinkingPart(
            text=thinking or "",
            signature=_str_or_none(block, "signature", path),
            progress=(updates and bool(thinking)) or _marks_progress(details),
            provider_details=details,
        )
    if kind == "redacted_thinking":
        return ThinkingPart(
            text="",
            signature=_str_or_none(block, "data", path),
            redacted=True,
            provider_details=extras(block, REDACTED_KEYS),
        )
    if kind == "tool_use":
        return _tool_use(block, path)
    name = block.get("name")
    ident = block.get("id", block.get("tool_use_id"))
    return ServerToolPart(
        name=name if isinstance(name, str) else (kind if isinstance(kind, str) else "unknown"),
        id=ident if isinstance(ident, str) else None,
        data=block,
    )


def _tool_use(block: Mapping[str, Any], path: str) -> ToolCall:
    call_id, name, args = block.get("id"), block.get("name"), block.get("input")
    if not isinstance(call_id, str):
        raise _fail(f"{path}.id", "a tool_use block needs a string id")
    if not isinstance(name, str):
        raise _fail(f"{path}.name", "a tool_use block needs a string name")
    details = extras(block, CALL_KEYS)
    if args is None or isinstance(args, Mapping):
        return ToolCall.from_args(id=call_id, name=name, arguments=args, provider_details=details)
    if isinstance(args, str):  # not documented; some proxies forward the raw JSON text
        return ToolCall.from_raw(
            id=call_id, name=name, arguments_raw=args, provider_details=details
        )
    raise _fail(f"{path}.input", f"expected an object, got {type(args).__name__}")


def _count(raw: Mapping[str, Any], key: str, strict: bool) -> int:
    value = raw.get(key)
    number = exact_int(value)
    if number is not None:
        return number
    if value is None or not strict:
        return 0
    raise _fail(f"usage.{key}", f"expected an integer, got {type(value).__name__}")


def usage_of(raw: Any, *, strict: bool = True) -> Usage:
    """`Usage` from an Anthropic ``usage`` object; input counts cache reads and writes.

    Anthropic's ``input_tokens`` excludes cached tokens: the prompt is the sum of the three.
    """
    if raw is None:
        return Usage()
    if not isinstance(raw, Mapping):
        if strict:
            raise _fail("usage", "expected an object")
        return Usage()
    read = _count(raw, "cache_read_input_tokens", strict)
    write = _count(raw, "cache_creation_input_tokens", strict)
    details = raw.get("output_tokens_details")
    return Usage(
        input_tokens=_count(raw, "input_tokens", strict) + read + write,
        output_tokens=_count(raw, "output_tokens", strict),
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=(
            _count(details, "thinking_tokens", False) if isinstance(details, Mapping) else 0
        ),
    )


def stop_turn(
    *,
    parts: list[Part],
    stop_reason: Any,
    stop_details: Any,
    usage: Usage,
    model: str | None,
    response_id: str | None,
) -> Turn:
    """The turn for a finished message: the stop reason is the signal, the content decides.

    ``refusal`` puts ``stop_details.category`` in the detail and its explanation in a
    `RefusalPart`. A missing ``stop_reason`` is the shared rule's error ("no finish reason"),
    even beside a tool call: nothing says the call is whole; an unknown one is an error, kept raw.
    """
    detail: str | None = None
    if isinstance(stop_reason, str):
        signal = SIGNALS.get(stop_reason, Ending.ERROR)
        if signal is Ending.ERROR:
            detail = f"unknown stop_reason {stop_reason!r}"
    else:
        signal, detail = missing_reason(ended=True)
    if signal is Ending.REFUSED and isinstance(stop_details, Mapping):
        category = stop_details.get("category")
        detail = category if isinstance(category, str) else None
        explanation = stop_details.get("explanation")
        parts.append(RefusalPart(text=explanation if isinstance(explanation, str) else ""))
    return make_turn(
        api=API,
        signal=signal,
        parts=parts,
        raw_reason=stop_reason if isinstance(stop_reason, str) else None,
        detail=detail,
        usage=usage,
        model=model,
        response_id=response_id,
    )


def error_fields(body: Any) -> tuple[str | None, str]:
    """``(error type, message)`` from an error body of any shape.

    Anthropic: ``{"type": "error", "error": {"type", "message"}}``; Bedrock: ``{"message"}``;
    Vertex: ``{"error": {"code", "message", "status"}}``, sometimes inside a list; raw text.
    """
    body = error_object(body, limit=500)
    if isinstance(body, str):
        return None, body
    err = body.get("error", body)
    if isinstance(err, str):
        return None, err
    if not isinstance(err, Mapping):
        return None, ""
    kind = err.get("type")
    if not isinstance(kind, str) or kind == "error":
        kind = err.get("status", err.get("code"))
    message = err.get("message", err.get("Message"))
    if not isinstance(message, str):
        message = "" if message is None else str(message)
    return (kind if isinstance(kind, str) else None), message


def error_ending(kind: str | None, message: str) -> Ending:
    """What an error says: the prompt does not fit, output was filtered, or a plain error."""
    if context_exceeded(message, kind):
        return Ending.CONTEXT_EXCEEDED
    lowered = message.lower()
    if kind == "content_filter" or any(n in lowered for n in _FILTER_NEEDLES):
        return Ending.FILTERED
    return Ending.ERROR


def parse_error_body(
    status: int | None,
    body: Any,
    *,
    retry_after: float | None = None,
    parts: Sequence[Part] = (),
    usage: Usage | None = None,
) -> Turn:
    """The turn an error body (HTTP or in-band) or a stream's ``error`` event implies."""
    kind, message = error_fields(body)
    return error_turn(
        api=API,
        ending=error_ending(kind, message),
        status=status,
        type_=kind,
        message=message,
        raw_reason=None if status else (kind or "error"),
        retry_after=retry_after,
        parts=parts,
        usage=usage,
    )
