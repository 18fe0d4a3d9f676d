"""What Gemini would answer for a canonical turn (the test kit's side of the wire).

Non-streamed bodies are pretty-printed JSON, as Google's front end sends them; streamed ones are
``alt=sse`` events, one compact ``GenerateContentResponse`` per ``data:`` line, text split across
chunks and the finish reason with the final usage on the last. Gemini has no structured refusal
and no paused turn, so those endings raise `UnsupportedTurn`.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from donegate.errors import UnsupportedTurn
from donegate.messages import Ending, ErrorInfo, Part, TextPart, ThinkingPart, ToolCall, Turn, Usage
from donegate.models._rules import context_exceeded_message
from donegate.models.base import WireResponse
from donegate.models.gemini._errors import error_object, error_response
from donegate.models.gemini._parse import API, FILTER_REASONS, MALFORMED_REASONS
from donegate.models.gemini._request import render_part

__all__ = ["render_response"]

_MODEL = "gemini-2.5-flash"
_CONTEXT_LIMIT = 1048576
_CATEGORIES = (
    "HARM_CATEGORY_HATE_SPEECH",
    "HARM_CATEGORY_DANGEROUS_CONTENT",
    "HARM_CATEGORY_HARASSMENT",
    "HARM_CATEGORY_SEXUALLY_EXPLICIT",
)
_NORMAL = (Ending.COMPLETE, Ending.TOOL_USE, Ending.EMPTY)


def _finish_reason(turn: Turn) -> str:
    """The turn's own Gemini reason when it has one for this ending, else the usual one."""
    raw = turn.raw_reason or ""
    if turn.ending is Ending.FILTERED:
        return raw if raw in FILTER_REASONS and raw != "JAILBREAK" else "SAFETY"
    if turn.ending is Ending.MALFORMED_TOOL_CALL:
        return raw if raw in MALFORMED_REASONS else "MALFORMED_FUNCTION_CALL"
    if turn.ending is Ending.TRUNCATED:
        return "MAX_TOKENS"
    return "STOP"


def _safety_ratings(detail: str | None) -> list[dict[str, Any]]:
    named = set(re.findall(r"HARM_CATEGORY_[A-Z_]+", detail or ""))
    blocked = named or {"HARM_CATEGORY_DANGEROUS_CONTENT"}
    out: list[dict[str, Any]] = []
    for cat in sorted(named - set(_CATEGORIES)) + list(_CATEGORIES):
        rating: dict[str, Any] = {"category": cat, "probability": "NEGLIGIBLE"}
        if cat in blocked:
            rating = {"category": cat, "probability": "HIGH", "blocked": True}
        out.append(rating)
    return out


def _finish_message(turn: Turn) -> str:
    if turn.detail and turn.raw_reason in MALFORMED_REASONS:
        return turn.detail
    bad = next((c for c in turn.tool_calls if c.parse_error is not None), None)
    if bad is not None:
        return f"Malformed function call: call:default_api:{bad.name}{bad.arguments_raw}"
    return turn.detail or "Malformed function call."


def _parts(turn: Turn) -> list[Part]:
    """The parts Gemini can send: a call whose arguments do not parse cannot be an object."""
    return [
        p for p in turn.message.parts if not (isinstance(p, ToolCall) and p.parse_error is not None)
    ]


def _usage(u: Usage, *, final: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"promptTokenCount": u.input_tokens}
    candidates = max(u.output_tokens - u.reasoning_tokens, 0)
    if final and candidates:
        out["candidatesTokenCount"] = candidates
    out["totalTokenCount"] = u.input_tokens + u.reasoning_tokens + (candidates if final else 0)
    if u.cache_read_tokens:
        out["cachedContentTokenCount"] = u.cache_read_tokens
    out["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": u.input_tokens}]
    if u.reasoning_tokens:
        out["thoughtsTokenCount"] = u.reasoning_tokens
    return out


def _context_response(turn: Turn) -> WireResponse:
    for message in (turn.error.message if turn.error else None, turn.detail):
        if message and context_exceeded_message(message):
            break
    else:
        count = turn.usage.input_tokens
        message = (
            f"The input token count ({count}) exceeds the maximum number of tokens allowed "
            f"({_CONTEXT_LIMIT})."
            if count > _CONTEXT_LIMIT
            else f"The input token count exceeds the maximum number of tokens allowed "
            f"({_CONTEXT_LIMIT})."
        )
    return error_response(ErrorInfo(status=400, message=message))


def _pieces(text: str, size: int = 40) -> list[str]:
    """Split text at spaces into stream-sized pieces that join back exactly."""
    out: list[str] = []
    start, n = 0, len(text)
    while start < n:
        end = start + size
        if end < n:
            space = text.rfind(" ", start + 1, end)
            if space > start:
                end = space + 1
        out.append(text[start:end])
        start = end
    return out or [""]


def _stream_parts(parts: list[Part]) -> list[dict[str, Any]]:
    """One rendered part per chunk: text and thoughts in pieces, the signature on the first."""
    out: list[dict[str, Any]] = []
    for part in parts:
        rendered = render_part(part)
        if rendered is None:
            continue
        if not isinstance(part, TextPart | ThinkingPart):
            out.append(rendered)
            continue
        for i, piece in enumerate(_pieces(part.text)):
            chunk = {**rendered, "text": piece}
            if i:
                chunk.pop("thoughtSignature", None)
            out.append(chunk)
    return out


def render_response(turn: Turn, *, stream: bool = False) -> WireResponse:
    """Gemini's HTTP answer for `turn`."""
    if turn.error is not None and turn.error.status:
        return error_response(turn.error)
    if turn.ending in (Ending.REFUSED, Ending.PAUSED):
        raise UnsupportedTurn(
            f"a {turn.ending.value} turn cannot be expressed in {API}: "
            "Gemini has no structured refusal or paused turn"
        )
    if turn.ending is Ending.CONTEXT_EXCEEDED:
        return _context_response(turn)
    if turn.ending is Ending.ERROR and not stream:
        message = (turn.error.message if turn.error else "") or turn.detail or ""
        retry = turn.error.retry_after if turn.error else None
        return error_response(ErrorInfo(status=500, message=message, retry_after=retry))
    model = turn.model or _MODEL
    rid = turn.response_id or secrets.token_urlsafe(16)
    parts = _parts(turn)
    tail: dict[str, Any] = {}
    if turn.ending is not Ending.ERROR:
        reason = _finish_reason(turn)
        tail["finishReason"] = reason
        if turn.ending is Ending.MALFORMED_TOOL_CALL:
            tail["finishMessage"] = _finish_message(turn)
        if reason in ("SAFETY", "IMAGE_SAFETY"):
            tail["safetyRatings"] = _safety_ratings(turn.detail)
    if not stream:
        rendered = [r for r in map(render_part, parts) if r is not None]
        body = _body(rendered, tail, turn, model, rid, final=True)
        text = json.dumps(body, indent=2, ensure_ascii=False)
        return WireResponse(status=200, body=text, content_type="application/json; charset=UTF-8")
    return WireResponse(
        status=200, body=_sse(turn, parts, tail, model, rid), content_type="text/event-stream"
    )


def _body(
    parts: list[dict[str, Any]],
    tail: dict[str, Any],
    turn: Turn,
    model: str,
    rid: str,
    *,
    final: bool,
) -> dict[str, Any]:
    content: dict[str, Any] = {"parts": parts, "role": "model"} if parts else {"role": "model"}
    if not parts and turn.ending not in (*_NORMAL, Ending.TRUNCATED):
        content = {}
    candidate: dict[str, Any] = {"content": content, **tail, "index": 0}
    if "safetyRatings" in candidate:
        candidate["safetyRatings"] = candidate.pop("safetyRatings")
    return {
        "candidates": [candidate],
        "usageMetadata": _usage(turn.usage, final=final),
        "modelVersion": model,
        "responseId": rid,
    }


def _event(body: dict[str, Any]) -> str:
    return f"data: {json.dumps(body, separators=(',', ': '), ensure_ascii=False)}\r\n\r\n"


def _sse(turn: Turn, parts: list[Part], tail: dict[str, Any], model: str, rid: str) -> str:
    pieces = _stream_parts(parts)
    separate = turn.ending in (Ending.FILTERED, Ending.ERROR) or not pieces
    body = pieces if separate else pieces[:-1]
    out = [_event(_body([p], {}, turn, model, rid, final=False)) for p in body]
    if turn.ending is Ending.ERROR:
        message = (turn.error.message if turn.error else "") or turn.detail
        out.append(_event(error_object(500, message, None)))
        return "".join(out)
    last = [] if separate else pieces[-1:]
    out.append(_event(_body(last, tail, turn, model, rid, final=True)))
    return "".join(out)
