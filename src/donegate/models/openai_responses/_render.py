"""Canonical turns -> what the Responses API answers: a response object or its SSE events.

Endings map to ``status``: complete/tool_use/empty/refused/malformed are ``completed`` (a refused
turn carries a ``refusal`` content part), truncated is ``incomplete``/``max_output_tokens``,
filtered ``incomplete``/``content_filter``. A prompt over the context window is HTTP 400
``context_length_exceeded``; other errors are OpenAI's error bodies, or, for a stream that
breaks, an ``error`` event followed by ``response.failed`` (as the live API sends them).
There is no paused turn in this API.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any

from donegate.errors import UnsupportedTurn
from donegate.messages import Ending, ErrorInfo, RefusalPart, Turn, Usage
from donegate.models import _openai_common as common
from donegate.models.base import WireResponse
from donegate.models.openai_responses._items import API, Ids, render_items

__all__ = ["render_response"]

_INCOMPLETE = {Ending.TRUNCATED: "max_output_tokens", Ending.FILTERED: "content_filter"}
_CONTEXT_MESSAGE = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)
_REFUSAL = "I'm sorry, but I can't help with that."


def render_response(turn: Turn, *, stream: bool = False) -> WireResponse:
    """The Responses API's HTTP answer for `turn`."""
    ending = turn.ending
    if ending is Ending.PAUSED:
        raise UnsupportedTurn(f"a paused turn cannot be expressed in {API} (no pause status)")
    if turn.error is not None and turn.error.status:
        return common.openai_error_response(turn.error)
    if ending is Ending.CONTEXT_EXCEEDED:
        return _context_exceeded(turn)
    if ending is Ending.ERROR and not stream:
        return common.openai_error_response(None)
    if ending is Ending.MALFORMED_TOOL_CALL and not any(
        c.parse_error is not None for c in turn.tool_calls
    ):
        raise UnsupportedTurn(
            f"a malformed_tool_call turn in {API} needs a call whose arguments do not parse"
        )
    stem = hashlib.sha256(repr(turn).encode()).hexdigest()
    ids = Ids(stem[:48])
    parts = list(turn.message.parts)
    if ending is Ending.REFUSED and turn.refusal is None:
        parts.append(RefusalPart(text=turn.detail or _REFUSAL))
    reason = _INCOMPLETE.get(ending)
    output = render_items(parts, ids=ids, incomplete=reason is not None)
    rid = turn.response_id or ""
    if not rid.startswith("resp_"):
        rid = "resp_" + stem[:50]
    body = _response(rid, turn, output, reason)
    headers = {"x-request-id": "req_" + stem[32:64]}
    if not stream:
        return WireResponse(status=200, body=json.dumps(body, indent=2), headers=headers)
    broken = (turn.error or ErrorInfo()) if ending is Ending.ERROR else None
    text = "".join(_sse(_events(body, broken)))
    return WireResponse(status=200, body=text, content_type="text/event-stream", headers=headers)


def _context_exceeded(turn: Turn) -> WireResponse:
    message = turn.error.message if turn.error is not None and turn.error.message else None
    error = {
        "message": message or _CONTEXT_MESSAGE,
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }
    return WireResponse(status=400, body=json.dumps({"error": error}, indent=2))


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def _response(
    rid: str, turn: Turn, output: list[dict[str, Any]], reason: str | None
) -> dict[str, Any]:
    """A response object with the fields (and field order) the live API sends."""
    created = int(time.time())
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": "incomplete" if reason else "completed",
        "background": False,
        "completed_at": None if reason else created,
        "error": None,
        "incomplete_details": {"reason": reason} if reason else None,
        "instructions": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "model": turn.model or "gpt-5-mini-2025-08-07",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "prompt_cache_key": None,
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": _usage(turn.usage),
        "user": None,
        "metadata": {},
    }


def _sse(events: Iterator[tuple[str, dict[str, Any]]]) -> Iterator[str]:
    for seq, (name, payload) in enumerate(events):
        data = {"type": name, "sequence_number": seq, **payload}
        yield f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _events(body: dict[str, Any], broken: ErrorInfo | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """The event sequence of one streamed response, ending in its final event."""
    start = {
        **body,
        "status": "in_progress",
        "completed_at": None,
        "incomplete_details": None,
        "output": [],
        "usage": None,
    }
    yield "response.created", {"response": start}
    yield "response.in_progress", {"response": start}
    for index, item in enumerate(body["output"]):
        yield from _item_events(index, item)
    if broken is not None:
        error = {
            "type": "server_error",
            "code": broken.type or "server_error",
            "message": broken.message or "An error occurred while processing your request.",
            "param": None,
        }
        yield "error", {"error": error}
        failed = {
            **body,
            "status": "failed",
            "completed_at": None,
            "error": {"code": error["code"], "message": error["message"]},
        }
        yield "response.failed", {"response": failed}
        return
    final = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
    yield final, {"response": body}


def _item_events(index: int, item: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = item["type"]
    at = {"item_id": item.get("id"), "output_index": index}
    if kind == "message":
        yield (
            "response.output_item.added",
            {
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            },
        )
        for c, part in enumerate(item["content"]):
            yield from _content_events(at, c, part)
    elif kind == "reasoning":
        yield (
            "response.output_item.added",
            {
                "output_index": index,
                "item": {"id": item["id"], "type": "reasoning", "summary": []},
            },
        )
        for s, part in enumerate(item.get("summary", ())):
            here = {**at, "summary_index": s}
            yield (
                "response.reasoning_summary_part.added",
                {
                    **here,
                    "part": {"type": "summary_text", "text": ""},
                },
            )
            for piece in common.pieces(part["text"]):
                yield "response.reasoning_summary_text.delta", {**here, "delta": piece}
            yield "response.reasoning_summary_text.done", {**here, "text": part["text"]}
            yield "response.reasoning_summary_part.done", {**here, "part": part}
        for c, part in enumerate(item.get("content", ())):
            here = {**at, "content_index": c}
            for piece in common.pieces(part["text"]):
                yield "response.reasoning_text.delta", {**here, "delta": piece}
            yield "response.reasoning_text.done", {**here, "text": part["text"]}
    elif kind in ("function_call", "custom_tool_call"):
        field, event = (
            ("arguments", "function_call_arguments")
            if kind == "function_call"
            else ("input", "custom_tool_call_input")
        )
        yield (
            "response.output_item.added",
            {
                "output_index": index,
                "item": {**item, "status": "in_progress", field: ""},
            },
        )
        for piece in common.pieces(item[field]):
            yield f"response.{event}.delta", {**at, "delta": piece}
        yield f"response.{event}.done", {**at, field: item[field]}
    else:
        added = {**item, "status": "in_progress"} if "status" in item else item
        yield "response.output_item.added", {"output_index": index, "item": added}
    yield "response.output_item.done", {"output_index": index, "item": item}


def _content_events(
    at: dict[str, Any], index: int, part: dict[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    here = {**at, "content_index": index}
    if part["type"] == "refusal":
        yield "response.content_part.added", {**here, "part": {"type": "refusal", "refusal": ""}}
        for piece in common.pieces(part["refusal"]):
            yield "response.refusal.delta", {**here, "delta": piece}
        yield "response.refusal.done", {**here, "refusal": part["refusal"]}
    else:
        empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        yield "response.content_part.added", {**here, "part": empty}
        for piece in common.pieces(part["text"]):
            yield "response.output_text.delta", {**here, "delta": piece, "logprobs": []}
        yield "response.output_text.done", {**here, "text": part["text"], "logprobs": []}
    yield "response.content_part.done", {**here, "part": part}
