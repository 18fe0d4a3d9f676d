"""Rendering a canonical turn as the Messages API would answer it (the test kit's server side).

Non-streamed: one ``message`` object. Streamed: ``message_start``, then per block
``content_block_start`` / ``content_block_delta``... / ``content_block_stop`` (with a ``ping``
after the first start), then ``message_delta`` and ``message_stop``, each as ``event:`` plus
``data:``. Error statuses get Anthropic's ``{"type": "error", "error": {...}}`` bodies.
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Iterator, Mapping
from typing import Any

from donegate.errors import UnsupportedTurn
from donegate.messages import (
    Ending,
    ErrorInfo,
    MediaPart,
    Part,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
)
from donegate.models.anthropic_messages._parse import API, STREAM_CUT, TEXT_KEYS
from donegate.models.base import WireResponse

__all__ = ["render_response"]

_STOP: dict[Ending, str] = {
    Ending.COMPLETE: "end_turn",
    Ending.EMPTY: "end_turn",
    Ending.TOOL_USE: "tool_use",
    Ending.MALFORMED_TOOL_CALL: "tool_use",
    Ending.TRUNCATED: "max_tokens",
    Ending.PAUSED: "pause_turn",
    Ending.REFUSED: "refusal",
    Ending.CONTEXT_EXCEEDED: "model_context_window_exceeded",
}

_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "Not found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out."),
    529: ("overloaded_error", "Overloaded"),
}
_TYPES = frozenset(kind for kind, _ in _ERRORS.values())
_FILTERED = "Output blocked by content filtering policy"
_ALPHABET = string.ascii_letters + string.digits
_COMPACT = (",", ":")


def _id(prefix: str, length: int = 22) -> str:
    """An Anthropic-style id: ``msg_01`` plus base62 characters."""
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(length))


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=_COMPACT, ensure_ascii=False)


def _pieces(text: str, size: int = 24) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _error(status: int, error: ErrorInfo | None, message: str | None = None) -> WireResponse:
    kind, default = _ERRORS.get(status, ("api_error", "Internal server error"))
    if error is not None and error.type in _TYPES:
        kind = error.type
    text = message or (error.message if error is not None and error.message else default)
    request_id = _id("req_011C", 20)
    body = {"type": "error", "error": {"type": kind, "message": text}, "request_id": request_id}
    headers = {"request-id": request_id}
    if error is not None and error.retry_after is not None:
        after = error.retry_after
        headers["retry-after"] = str(int(after)) if after == int(after) else str(after)
    if kind == "overloaded_error":
        headers["x-should-retry"] = "true"
    return WireResponse(status=status, body=_dumps(body), headers=headers)


def _usage(usage: Usage) -> dict[str, Any]:
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    return {
        "input_tokens": max(usage.input_tokens - cached, 0),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


def _block(part: Part) -> dict[str, Any] | None:
    """The response block for a part (None for parts a response carries elsewhere)."""
    if isinstance(part, TextPart):
        block: dict[str, Any] = {"type": "text", "text": part.text}
        if part.provider_details:
            block.update((k, v) for k, v in part.provider_details.items() if k not in TEXT_KEYS)
        return block
    if isinstance(part, ThinkingPart):
        if part.redacted:
            return {"type": "redacted_thinking", "data": part.signature or ""}
        return {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}
    if isinstance(part, ToolCall):
        args = dict(part.arguments) if part.arguments is not None else {}
        return {
            "type": "tool_use",
            "id": part.id or _id("toolu_01"),
            "name": part.name,
            "input": args,
        }
    if isinstance(part, ServerToolPart):
        if isinstance(part.data.get("type"), str):
            return dict(part.data)
        ident = part.id or _id("srvtoolu_01")
        return {"type": "server_tool_use", "id": ident, "name": part.name, "input": {}}
    if isinstance(part, MediaPart):
        raise UnsupportedTurn(f"{API} responses cannot carry media output ({part.mime_type})")
    return None


def _stop_details(turn: Turn) -> dict[str, Any] | None:
    if turn.ending is not Ending.REFUSED:
        return None
    return {"type": "refusal", "category": turn.detail, "explanation": turn.refusal}


def _message(turn: Turn, content: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
    return {
        "model": turn.model or "claude-opus-5-5",
        "id": turn.response_id or _id("msg_01"),
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "stop_details": _stop_details(turn) if stop else None,
        "usage": _usage(turn.usage),
    }


def _event(name: str, data: Mapping[str, Any]) -> str:
    return f"event: {name}\ndata: {_dumps(data)}\n\n"


def _block_events(index: int, part: Part, block: dict[str, Any], close: bool) -> Iterator[str]:
    """The start / deltas / stop of one block, as the API streams it."""
    kind = block["type"]
    if kind == "text":
        yield _event(_START, _start(index, {"type": "text", "text": ""}))
        for citation in block.get("citations") or ():
            yield _event(_DELTA, _delta(index, {"type": "citations_delta", "citation": citation}))
        for piece in _pieces(block["text"]):
            yield _event(_DELTA, _delta(index, {"type": "text_delta", "text": piece}))
    elif kind == "thinking":
        yield _event(_START, _start(index, {"type": "thinking", "thinking": "", "signature": ""}))
        for piece in _pieces(block["thinking"]):
            yield _event(_DELTA, _delta(index, {"type": "thinking_delta", "thinking": piece}))
        signature = {"type": "signature_delta", "signature": block["signature"]}
        yield _event(_DELTA, _delta(index, signature))
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        yield _event(_START, _start(index, {**block, "input": {}}))
        # a client call streams its argument text exactly (cut off, for a truncated call)
        raw = part.arguments_raw if isinstance(part, ToolCall) else _dumps(block.get("input", {}))
        for piece in _pieces(raw):
            yield _event(_DELTA, _delta(index, {"type": "input_json_delta", "partial_json": piece}))
    else:  # redacted thinking and server tool results arrive whole in their start event
        yield _event(_START, _start(index, block))
    if close:
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})


_START, _DELTA = "content_block_start", "content_block_delta"


def _start(index: int, block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": _START, "index": index, "content_block": block}


def _delta(index: int, delta: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": _DELTA, "index": index, "delta": delta}


def _stream(turn: Turn, pairs: list[tuple[Part, dict[str, Any]]], stop: str | None) -> str:
    start = _message(turn, [], None)
    start["usage"] = {**start["usage"], "output_tokens": 1}
    out = [_event("message_start", {"type": "message_start", "message": start})]
    broken = stop is None  # an error event ends the stream mid-block
    ping = '{"type": "ping"}'
    for i, (part, block) in enumerate(pairs):
        out.extend(_block_events(i, part, block, close=not (broken and i == len(pairs) - 1)))
    # the API pings once, right after the first block opens (or after message_start)
    out.insert(2 if pairs else 1, f"event: ping\ndata: {ping}\n\n")
    if broken:
        error = turn.error
        kind = error.type if error is not None and error.type in _TYPES else "overloaded_error"
        message = error.message if error is not None and error.message else "Overloaded"
        payload = {"type": "error", "error": {"details": None, "type": kind, "message": message}}
        out.append(_event("error", payload))
    elif not (turn.ending is Ending.TRUNCATED and turn.detail == STREAM_CUT):
        delta = {"stop_reason": stop, "stop_sequence": None, "stop_details": _stop_details(turn)}
        usage = _usage(turn.usage)
        out.append(
            _event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
        )
        out.append(_event("message_stop", {"type": "message_stop"}))
    return "".join(out)


def render_response(turn: Turn, *, stream: bool = False) -> WireResponse:
    """What the Messages API would answer for `turn`."""
    if turn.error is not None and turn.error.status:
        return _error(turn.error.status, turn.error)
    if turn.ending is Ending.ERROR and not stream:
        return _error(500, turn.error)
    if turn.ending is Ending.FILTERED:
        return _error(400, turn.error, _FILTERED)
    if turn.ending is Ending.MALFORMED_TOOL_CALL and not stream:
        raise UnsupportedTurn(
            f"a {turn.ending.value} turn cannot be expressed in a non-streamed {API} body: "
            "tool_use input is always a JSON object"
        )
    stop = _STOP.get(turn.ending)
    if stop is None and turn.ending is not Ending.ERROR:
        raise UnsupportedTurn(f"a {turn.ending.value} turn cannot be expressed in {API}")
    pairs: list[tuple[Part, dict[str, Any]]] = []
    for part in turn.message.parts:
        block = None if isinstance(part, RefusalPart) else _block(part)
        if block is not None:
            pairs.append((part, block))
    if stream:
        return WireResponse(
            status=200, body=_stream(turn, pairs, stop), content_type="text/event-stream"
        )
    return WireResponse(status=200, body=_dumps(_message(turn, [b for _, b in pairs], stop)))
