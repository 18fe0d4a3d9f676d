"""Mistral chat completion bodies and error bodies: content chunks, tool calls, errors."""

from __future__ import annotations

from typing import Any

from donegate.messages import (
    Ending,
    Part,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    Turn,
    Usage,
)
from donegate.models import _rules
from donegate.models._error_body import client_error, error_object
from donegate.models._function_calls import parse_tool_calls
from donegate.models._values import as_int, opt_str, url_media, wire_fail

API = "mistral"
fail = wire_fail(API)

_SIGNALS: dict[str, Ending] = {
    "stop": Ending.COMPLETE,
    "tool_calls": Ending.TOOL_USE,
    "length": Ending.TRUNCATED,
    "model_length": Ending.TRUNCATED,
    "error": Ending.ERROR,
}
"""Every documented ``finish_reason``; anything else is an error, never a normal stop."""


def parse_usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=as_int(raw.get("prompt_tokens")),
        output_tokens=as_int(raw.get("completion_tokens")),
        cache_read_tokens=as_int(cached if cached is not None else raw.get("num_cached_tokens")),
    )


def stop_signal(reason: Any, path: str) -> tuple[Ending, str | None, str | None]:
    """``(signal, raw_reason, detail)`` for a ``finish_reason`` value."""
    return _rules.table_signal(reason, _SIGNALS, api=API, path=path)


def thinking_text(value: Any) -> str:
    """A thinking chunk's ``thinking``: a list of text chunks (or, leniently, a string)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            c["text"] for c in value if isinstance(c, dict) and isinstance(c.get("text"), str)
        )
    return ""


def _chunk(chunk: Any, path: str) -> Part | None:
    """One content chunk of a message (or of a streamed delta)."""
    if not isinstance(chunk, dict):
        raise fail(path, f"a content chunk must be an object, got {type(chunk).__name__}")
    kind = chunk.get("type")
    if kind == "text":
        text = chunk.get("text", "")
        if not isinstance(text, str):
            raise fail(f"{path}.text", "expected a string")
        return TextPart(text=text) if text else None
    if kind == "thinking":
        return ThinkingPart(text=thinking_text(chunk.get("thinking")))
    if kind == "image_url":
        image = chunk.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        return url_media(url) if isinstance(url, str) else None
    return ServerToolPart(name=str(kind), data=chunk)  # references and future chunk kinds


def parse_content(content: Any, path: str) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(text=content)] if content else []
    if not isinstance(content, list):
        raise fail(path, f"expected a string or a list, got {type(content).__name__}")
    parts = (_chunk(c, f"{path}[{i}]") for i, c in enumerate(content))
    return [p for p in parts if p is not None]


def message_parts(message: dict[str, Any], path: str) -> list[Part]:
    """The content chunks, then the calls (Mistral may send ``arguments`` as the object itself)."""
    parts = parse_content(message.get("content"), f"{path}.content")
    parts.extend(parse_tool_calls(message, path, fail, object_arguments=True))
    return parts


# --- errors -------------------------------------------------------------------------------------


def _detail_text(detail: Any) -> str:
    """FastAPI validation ``detail``: a string, or a list of ``{loc, msg}`` objects."""
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        lines = []
        for item in detail:
            if isinstance(item, dict):
                loc = item.get("loc")
                where = ".".join(str(x) for x in loc) if isinstance(loc, list) else ""
                lines.append(f"{where}: {item.get('msg', '')}" if where else str(item.get("msg")))
        return "; ".join(lines)
    return ""


def error_fields(body: Any) -> tuple[str | None, str]:
    """``(type or code, message)`` of an error body in any shape."""
    body = error_object(body)
    if isinstance(body, str):
        return None, body
    nested = body.get("error")
    if isinstance(nested, dict):  # an OpenAI-style envelope from a gateway in front of Mistral
        body = nested
    message = body.get("message")
    if isinstance(message, dict):
        text = _detail_text(message.get("detail"))
    elif isinstance(message, str):
        text = message
    else:
        text = _detail_text(body.get("detail")) or (nested if isinstance(nested, str) else "")
    kind = opt_str(body.get("type")) or (
        str(body["code"]) if isinstance(body.get("code"), str | int) else None
    )
    return kind, text


def error_turn(status: int | None, body: Any, retry_after: float | None) -> Turn:
    kind, message = error_fields(body)
    ending = Ending.ERROR
    if client_error(status) and _rules.context_exceeded(message, kind):
        ending = Ending.CONTEXT_EXCEEDED
    return _rules.error_turn(
        api=API,
        ending=ending,
        status=status,
        type_=kind,
        message=message,
        retry_after=retry_after,
    )


def is_error_body(body: dict[str, Any]) -> bool:
    return body.get("object") == "error" or (
        "choices" not in body and any(k in body for k in ("error", "detail", "message"))
    )
