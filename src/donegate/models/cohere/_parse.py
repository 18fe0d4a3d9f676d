"""Cohere chat bodies (v2, and v1 where one turns up) and error bodies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.messages import (
    Ending,
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
from donegate.models._function_calls import arguments_raw, parse_tool_calls
from donegate.models._values import as_int, wire_fail

API = "cohere"
fail = wire_fail(API)

TOOL_PLAN: Mapping[str, Any] = {"cohere": "tool_plan"}
"""``provider_details`` of the `ThinkingPart` that holds a message's ``tool_plan``."""

_SIGNALS: dict[str, Ending] = {
    "COMPLETE": Ending.COMPLETE,
    "STOP_SEQUENCE": Ending.COMPLETE,
    "TOOL_CALL": Ending.TOOL_USE,
    "MAX_TOKENS": Ending.TRUNCATED,
    "ERROR_TOXIC": Ending.FILTERED,
    "ERROR_LIMIT": Ending.CONTEXT_EXCEEDED,  # v1: the context limit was reached
    "ERROR": Ending.ERROR,
    "TIMEOUT": Ending.ERROR,
    "USER_CANCEL": Ending.ERROR,
}
"""Every documented ``finish_reason`` (v2 and v1); anything else is an error."""


def parse_usage(raw: Any) -> Usage:
    """``tokens`` counts what the model saw; ``billed_units`` only what was billed (fallback)."""
    if not isinstance(raw, dict):
        return Usage()
    tokens = raw.get("tokens")
    if not isinstance(tokens, dict):
        tokens = raw.get("billed_units")
    if not isinstance(tokens, dict):
        tokens = {}
    return Usage(
        input_tokens=as_int(tokens.get("input_tokens")),
        output_tokens=as_int(tokens.get("output_tokens")),
        cache_read_tokens=as_int(raw.get("cached_tokens")),
    )


def stop_signal(reason: Any, path: str) -> tuple[Ending, str | None, str | None]:
    """``(signal, raw_reason, detail)`` for a ``finish_reason`` value."""
    return _rules.table_signal(reason, _SIGNALS, api=API, path=path, fold=str.upper)


def parse_content(content: Any, path: str) -> list[Part]:
    """``content``: a string, or a list of ``text`` / ``thinking`` items."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(text=content)] if content else []
    if isinstance(content, dict):  # a single item where a list is expected (v2 accepts it)
        content = [content]
    if not isinstance(content, list):
        raise fail(path, f"expected a string or a list, got {type(content).__name__}")
    parts: list[Part] = []
    for i, item in enumerate(content):
        if not isinstance(item, dict):
            raise fail(f"{path}[{i}]", f"expected an object, got {type(item).__name__}")
        kind = item.get("type")
        if kind == "text":
            text = item.get("text", "")
            if not isinstance(text, str):
                raise fail(f"{path}[{i}].text", "expected a string")
            if text:
                parts.append(TextPart(text=text))
        elif kind == "thinking":
            thinking = item.get("thinking", "")
            if not isinstance(thinking, str):
                raise fail(f"{path}[{i}].thinking", "expected a string")
            parts.append(ThinkingPart(text=thinking))
        else:
            parts.append(ServerToolPart(name=str(kind), data=item))
    return parts


def message_parts(message: dict[str, Any], path: str) -> list[Part]:
    """A v2 message in reading order: the tool plan, the content, then the calls."""
    parts: list[Part] = []
    plan = message.get("tool_plan")
    if plan is not None and not isinstance(plan, str):
        raise fail(f"{path}.tool_plan", "expected a string")
    if plan:
        parts.append(ThinkingPart(text=plan, provider_details=TOOL_PLAN))
    parts.extend(parse_content(message.get("content"), f"{path}.content"))
    parts.extend(parse_tool_calls(message, path, fail))
    return parts


def v1_parts(body: dict[str, Any]) -> list[Part]:
    """A v1 ``/chat`` body: ``text`` plus ``tool_calls`` of ``{name, parameters}`` (no ids)."""
    parts: list[Part] = []
    text = body.get("text")
    if text is not None and not isinstance(text, str):
        raise fail("text", "expected a string")
    if text:
        parts.append(TextPart(text=text))
    calls = body.get("tool_calls")
    for i, call in enumerate(calls if isinstance(calls, list) else ()):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise fail(f"tool_calls[{i}]", "expected an object with a name")
        params = call.get("parameters")
        name = call["name"]
        if isinstance(params, dict) or params is None:
            parts.append(ToolCall.from_args(id=f"{name}_{i}", name=name, arguments=params))
        else:
            parts.append(
                ToolCall.from_raw(id=f"{name}_{i}", name=name, arguments_raw=arguments_raw(params))
            )
    return parts


# --- errors -------------------------------------------------------------------------------------


def error_fields(body: Any) -> tuple[str | None, str]:
    """``(type, message)`` of an error body in any shape: dict, list, JSON text, HTML, None."""
    body = error_object(body)
    if isinstance(body, str):
        return None, body
    nested = body.get("error")
    if isinstance(nested, dict):  # an OpenAI-style envelope from a gateway in front of Cohere
        body = nested
    message = body.get("message")
    if not isinstance(message, str):
        message = nested if isinstance(nested, str) else ""
    kind = body.get("type", body.get("code"))
    return (
        str(kind) if isinstance(kind, str | int) and not isinstance(kind, bool) else None
    ), message


def _context_exceeded(message: str, kind: str | None) -> bool:
    """Cohere's "too many tokens: ..." covers the prompt and the output limit; only the first
    is the context window ("max tokens must be less than or equal to ..." is a bad setting)."""
    lowered = message.lower()
    if "max tokens must" in lowered or "maximum output" in lowered:
        return False
    return _rules.context_exceeded(message, kind)


def error_turn(status: int | None, body: Any, retry_after: float | None) -> Turn:
    kind, message = error_fields(body)
    ending = (
        Ending.CONTEXT_EXCEEDED
        if client_error(status) and _context_exceeded(message, kind)
        else Ending.ERROR
    )
    return _rules.error_turn(
        api=API,
        ending=ending,
        status=status,
        type_=kind,
        message=message,
        retry_after=retry_after,
    )
