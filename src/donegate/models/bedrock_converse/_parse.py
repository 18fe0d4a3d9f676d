"""Converse response bodies and error bodies: content blocks, stop reasons, usage, errors."""

from __future__ import annotations

import json
from typing import Any

from donegate.messages import (
    Ending,
    MediaPart,
    Part,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
)
from donegate.models import _rules
from donegate.models._error_body import client_error, error_object
from donegate.models._values import as_int, wire_fail

API = "bedrock-converse"
fail = wire_fail(API)

_SIGNALS: dict[str, Ending] = {
    "end_turn": Ending.COMPLETE,
    "stop_sequence": Ending.COMPLETE,
    "tool_use": Ending.TOOL_USE,
    "max_tokens": Ending.TRUNCATED,
    "guardrail_intervened": Ending.FILTERED,
    "content_filtered": Ending.FILTERED,
    "model_context_window_exceeded": Ending.CONTEXT_EXCEEDED,
    "malformed_model_output": Ending.MALFORMED_TOOL_CALL,
    "malformed_tool_use": Ending.MALFORMED_TOOL_CALL,
}
"""Every documented ``stopReason``; anything else is an error, never a normal stop."""

_CONTEXT_NEEDLES = ("too many input tokens", "input tokens exceed", "input tokens exceeded")
"""Bedrock's own wordings (Nova, Titan) beyond the shared context-window phrases."""

_FILTER_NEEDLES = ("content filtering policy", "blocked by content filter")


def as_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise fail(path, f"expected a string, got {type(value).__name__}")
    return value


def parse_usage(raw: Any) -> Usage:
    """``inputTokens`` leaves out cache reads and writes; `Usage` counts every prompt token."""
    if not isinstance(raw, dict):
        return Usage()
    read = as_int(raw.get("cacheReadInputTokens"))
    write = as_int(raw.get("cacheWriteInputTokens"))
    return Usage(
        input_tokens=as_int(raw.get("inputTokens")) + read + write,
        output_tokens=as_int(raw.get("outputTokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def stop_signal(reason: Any) -> tuple[Ending, str | None, str | None]:
    """``(signal, raw_reason, detail)`` for a ``stopReason`` value."""
    return _rules.table_signal(reason, _SIGNALS, api=API, path="stopReason")


def _call(call_id: str, name: str, value: Any) -> ToolCall:
    """A client call from a ``toolUse.input`` value, which should be a JSON object."""
    if isinstance(value, dict):
        return ToolCall.from_args(id=call_id, name=name, arguments=value)
    if value is None:
        return ToolCall.from_args(id=call_id, name=name, arguments={})
    raw = value if isinstance(value, str) else json.dumps(value)
    return ToolCall.from_raw(id=call_id, name=name, arguments_raw=raw)


def _tool_use(block: dict[str, Any], raw: Any, path: str) -> Part:
    if not isinstance(raw, dict):
        raise fail(path, f"expected an object, got {type(raw).__name__}")
    call_id = as_str(raw.get("toolUseId"), f"{path}.toolUseId")
    name = as_str(raw.get("name"), f"{path}.name")
    if raw.get("type") == "server_tool_use":
        return ServerToolPart(name=name, id=call_id, data=block)
    return _call(call_id, name, raw.get("input"))


def _reasoning(raw: Any, path: str) -> ThinkingPart:
    if not isinstance(raw, dict):
        raise fail(path, f"expected an object, got {type(raw).__name__}")
    text_block = raw.get("reasoningText")
    if isinstance(text_block, dict):
        text = text_block.get("text", "")
        signature = text_block.get("signature")
        if not isinstance(text, str):
            raise fail(f"{path}.reasoningText.text", "expected a string")
        if signature is not None and not isinstance(signature, str):
            raise fail(f"{path}.reasoningText.signature", "expected a string")
        return ThinkingPart(text=text, signature=signature or None)
    redacted = raw.get("redactedContent")
    if isinstance(redacted, str):
        return ThinkingPart(text="", signature=redacted, redacted=True)
    return ThinkingPart(text="", provider_details={"reasoningContent": raw})


def parse_block(block: Any, path: str) -> Part | None:
    """One output content block (a union: exactly one key says which kind)."""
    if not isinstance(block, dict):
        raise fail(path, f"a content block must be an object, got {type(block).__name__}")
    if "text" in block:
        return TextPart(text=as_str(block["text"], f"{path}.text"))
    if "toolUse" in block:
        return _tool_use(block, block["toolUse"], f"{path}.toolUse")
    if "reasoningContent" in block:
        return _reasoning(block["reasoningContent"], f"{path}.reasoningContent")
    cited = block.get("citationsContent")
    if isinstance(cited, dict) and isinstance(cited.get("content"), list):
        text = "".join(
            c["text"]
            for c in cited["content"]
            if isinstance(c, dict) and isinstance(c.get("text"), str)
        )
        return TextPart(text=text, provider_details={"citationsContent": cited})
    image = block.get("image")
    if isinstance(image, dict):
        source = image.get("source")
        data = source.get("bytes") if isinstance(source, dict) else None
        return MediaPart(
            mime_type=f"image/{image.get('format', 'png')}",
            data=data if isinstance(data, str) else None,
        )
    for key in block:  # unknown or server-side block: kept whole for the record
        return ServerToolPart(name=str(key), data=block)
    return None


def parse_parts(content: Any, path: str) -> list[Part]:
    if not isinstance(content, list):
        raise fail(path, f"expected a list, got {type(content).__name__}")
    parts: list[Part] = []
    for i, block in enumerate(content):
        part = parse_block(block, f"{path}[{i}]")
        if part is not None:
            parts.append(part)
    return parts


# --- errors -------------------------------------------------------------------------------------


def _error_fields(body: Any) -> tuple[str | None, str]:
    """``(type, message)`` of an error body in any shape: dict, list, JSON text, HTML, None."""
    body = error_object(body)
    if isinstance(body, str):
        return None, body
    nested = body.get("Error", body.get("error"))
    inner: dict[str, Any] = nested if isinstance(nested, dict) else {}
    message = next(
        (
            m
            for m in (
                body.get("message"),
                body.get("Message"),
                inner.get("Message"),
                inner.get("message"),
                nested,
            )
            if isinstance(m, str)
        ),
        "",
    )
    kind = next(
        (
            t
            for t in (body.get("__type"), inner.get("Code"), inner.get("code"), body.get("code"))
            if isinstance(t, str)
        ),
        None,
    )
    if kind is not None and "#" in kind:  # com.amazon.coral.validate#ValidationException
        kind = kind.rsplit("#", 1)[1]
    return kind, message


def _error_ending(status: int | None, kind: str | None, message: str) -> Ending:
    """What an error body means: the prompt too long, a content filter, or a plain error.

    Throttling says "Too many tokens, please wait" about the rate, not the context window, so
    rate-limit and server errors are never read for the context phrases.
    """
    if not client_error(status):
        return Ending.ERROR
    if kind is not None and "throttl" in kind.lower():
        return Ending.ERROR
    lowered = message.lower()
    if _rules.context_exceeded(message, kind) or any(n in lowered for n in _CONTEXT_NEEDLES):
        return Ending.CONTEXT_EXCEEDED
    if any(n in lowered for n in _FILTER_NEEDLES):
        return Ending.FILTERED
    return Ending.ERROR


def error_turn(status: int | None, body: Any, retry_after: float | None) -> Turn:
    kind, message = _error_fields(body)
    return _rules.error_turn(
        api=API,
        ending=_error_ending(status, kind, message),
        status=status,
        type_=kind,
        message=message,
        retry_after=retry_after,
    )
