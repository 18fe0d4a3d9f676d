"""Rendering a canonical turn as Chat Completions would answer it (the test kit's server side)."""

from __future__ import annotations

import json
import time
from typing import Any

from donegate.errors import UnsupportedTurn
from donegate.messages import Ending, Turn
from donegate.models import _openai_common as common
from donegate.models.base import WireResponse
from donegate.models.openai_chat._parse import API
from donegate.models.openai_chat._request import render_call

_FINISH: dict[Ending, str] = {
    Ending.COMPLETE: "stop",
    Ending.EMPTY: "stop",
    Ending.REFUSED: "stop",
    Ending.TOOL_USE: "tool_calls",
    Ending.MALFORMED_TOOL_CALL: "tool_calls",
    Ending.TRUNCATED: "length",
    Ending.FILTERED: "content_filter",
}


_SERVER_ERROR = "The server had an error while processing your request."
_REFUSAL = "I'm sorry, but I can't help with that."
_TOOL_USE_FAILED = (
    "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more "
    "details."
)


def _refusal_of(turn: Turn) -> str | None:
    """The refusal to render: a refused turn always carries one (else it reads as empty)."""
    if turn.refusal is not None or turn.ending is not Ending.REFUSED:
        return turn.refusal
    return turn.detail or _REFUSAL


def _tool_use_failed(turn: Turn) -> WireResponse:
    """Groq's HTTP 400 for a generated call the server rejected: a malformed turn whose
    arguments parse has no other way to say so in this API."""
    generation = json.dumps(
        [{"name": c.name, "arguments": c.arguments_raw} for c in turn.tool_calls]
    )
    error = {
        "message": turn.detail or _TOOL_USE_FAILED,
        "type": "invalid_request_error",
        "code": "tool_use_failed",
        "failed_generation": generation if turn.tool_calls else "",
    }
    return WireResponse(status=400, body=json.dumps({"error": error}))


def render_response(turn: Turn, *, stream: bool = False) -> WireResponse:
    """What OpenAI would answer for `turn`."""
    if turn.error is not None and turn.error.status:
        return common.openai_error_response(turn.error)
    if turn.ending is Ending.CONTEXT_EXCEEDED:
        return common.context_length_response(turn)
    if turn.ending is Ending.ERROR and not stream:
        return common.openai_error_response(turn.error)
    if turn.ending is Ending.MALFORMED_TOOL_CALL and not any(
        c.parse_error is not None for c in turn.tool_calls
    ):
        return _tool_use_failed(turn)
    if turn.ending not in _FINISH and turn.ending is not Ending.ERROR:
        raise UnsupportedTurn(f"a {turn.ending.value} turn cannot be expressed in {API}")
    rid = turn.response_id or common.new_id("chatcmpl-")
    model = turn.model or "gpt-4o-mini"
    created = int(time.time())
    if stream:
        return WireResponse(
            status=200,
            body=_render_chunks(turn, rid, model, created),
            content_type="text/event-stream",
        )
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    if turn.text or not turn.tool_calls:
        message["content"] = turn.text
    refusal = _refusal_of(turn)
    if refusal is not None:
        message["refusal"], message["content"] = refusal, None
    thinking = "".join(p.text for p in turn.thinking)
    if thinking:
        message["reasoning_content"] = thinking
    if turn.tool_calls:
        message["tool_calls"] = [render_call(c) for c in turn.tool_calls]
    body = {
        "id": rid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _FINISH[turn.ending],
            }
        ],
        "usage": common.chat_usage(turn.usage),
        "system_fingerprint": "fp_donegate",
    }
    return WireResponse(status=200, body=json.dumps(body))


def _render_chunks(turn: Turn, rid: str, model: str, created: int) -> str:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        body = {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_donegate",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body)}\n\n"

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in common.pieces("".join(p.text for p in turn.thinking)):
        out.append(chunk({"reasoning_content": piece}))
    for piece in common.pieces(turn.text):
        out.append(chunk({"content": piece}))
    for piece in common.pieces(_refusal_of(turn) or ""):
        out.append(chunk({"refusal": piece}))
    for i, call in enumerate(turn.tool_calls):
        head = render_call(call)
        kind = head["type"]  # "function" streams ``arguments``, "custom" streams ``input``
        field = "input" if kind == "custom" else "arguments"
        head[kind] = {"name": call.name, field: ""}
        out.append(chunk({"tool_calls": [{"index": i, **head}]}))
        for piece in common.pieces(call.arguments_raw, size=24):
            out.append(chunk({"tool_calls": [{"index": i, kind: {field: piece}}]}))
    if turn.ending is Ending.ERROR:
        err = turn.error
        message = (err.message if err else "") or turn.detail or _SERVER_ERROR
        etype = (err.type if err else None) or "server_error"
        error = {"error": {"message": message, "type": etype, "param": None, "code": None}}
        out.append(f"data: {json.dumps(error)}\n\n")
        return "".join(out)
    out.append(chunk({}, _FINISH[turn.ending]))
    usage = {
        "id": rid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": "fp_donegate",
        "choices": [],
        "usage": common.chat_usage(turn.usage),
    }
    out.append(f"data: {json.dumps(usage)}\n\n")
    out.append("data: [DONE]\n\n")
    return "".join(out)
