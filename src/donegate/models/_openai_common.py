"""Pieces OpenAI's two APIs (and their compatible servers) share: error bodies, ids, usage."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

from donegate.messages import Ending, ErrorInfo, Turn, Usage
from donegate.models._error_body import error_object
from donegate.models._rules import context_exceeded, error_turn
from donegate.models._values import exact_int
from donegate.models.base import WireResponse

__all__ = [
    "chat_usage",
    "context_length_response",
    "filter_detail",
    "int_or_zero",
    "new_id",
    "openai_error_response",
    "openai_error_turn",
    "pieces",
]


def int_or_zero(value: Any) -> int:
    """An int field, or 0 when absent or not an int (a bool is not one: JSON gives exact ints)."""
    return exact_int(value) or 0


def new_id(prefix: str, length: int = 24) -> str:
    """A provider-style random id (``chatcmpl-...``)."""
    return prefix + secrets.token_hex(length // 2)


def pieces(text: str, size: int = 16) -> Iterator[str]:
    """Split text into stream-sized pieces, as a provider's deltas would be."""
    for i in range(0, len(text), size):
        yield text[i : i + size]


def filter_detail(choice: Mapping[str, Any]) -> str | None:
    """Which Azure content-filter categories fired, e.g. ``hate``."""
    results = choice.get("content_filter_results")
    if not isinstance(results, Mapping):
        return None
    fired = [k for k, v in results.items() if isinstance(v, Mapping) and v.get("filtered")]
    return ",".join(fired) or None


def _error_object(body: Any) -> tuple[str | None, str, tuple[str, ...]]:
    """``(code or type, message, every string label)`` from an OpenAI-style error body.

    The labels are the string ``code``, ``type`` and ``status`` fields: compatible servers put
    the meaning in any of them (Perplexity: ``"type": "too_many_prompt_tokens", "code": 400``).
    """
    body = error_object(body, limit=500)  # Gemini's compatible endpoint wraps errors in a list
    if isinstance(body, str):
        return None, body, ()
    err = body.get("error", body)
    if isinstance(err, str):
        return None, err, ()
    if not isinstance(err, Mapping):
        return None, "", ()
    labels = tuple(v for k in ("code", "type", "status") if isinstance(v := err.get(k), str))
    code = err.get("code")
    kind = code if isinstance(code, str) else err.get("type") or err.get("status")
    message = err.get("message")
    if not isinstance(message, str):
        message = str(message) if message is not None else ""
    return (kind if isinstance(kind, str) else None), message, labels


def openai_error_turn(
    api: str, status: int | None, body: Any, *, retry_after: float | None = None
) -> Turn:
    """The ending an OpenAI-style error body implies.

    A context-overflow code in any label field, or a message saying so, is `context_exceeded`
    (never for a 429 or a 5xx: rate limits speak of tokens too); Azure's ``content_filter``
    code is `filtered`; Groq's ``tool_use_failed`` for a generated call that failed validation
    is `malformed_tool_call` (not when the model simply called no tool).
    """
    code, message, labels = _error_object(body)
    lowered = message.lower()
    limited = status is not None and (status == 429 or status >= 500)
    if not limited and context_exceeded(message, *labels):
        ending = Ending.CONTEXT_EXCEEDED
    elif code in ("content_filter", "content_policy_violation") or "content management policy" in (
        lowered
    ):
        ending = Ending.FILTERED
    elif code == "tool_use_failed" and "did not call a tool" not in lowered:
        ending = Ending.MALFORMED_TOOL_CALL
    else:
        ending = Ending.ERROR
    return error_turn(
        api=api,
        ending=ending,
        status=status,
        type_=code,
        message=message,
        retry_after=retry_after,
    )


_ERROR_BODIES: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", None, "You are not allowed to sample from this model."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


def openai_error_response(error: ErrorInfo | None) -> WireResponse:
    """OpenAI's real error body for a status (500 when none is given)."""
    status = error.status if error is not None and error.status else 500
    kind, code, default = _ERROR_BODIES.get(status, ("server_error", None, "Server error."))
    if error is not None and error.type:  # keep the code the turn carries (content_filter, ...)
        code = error.type
    message = error.message if error is not None and error.message else default
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    headers = {"x-request-id": new_id("req_", 32)}
    if error is not None and error.retry_after is not None:
        headers["retry-after"] = str(error.retry_after)
    return WireResponse(status=status, body=json.dumps(body), headers=headers)


def context_length_response(turn: Turn) -> WireResponse:
    """OpenAI's HTTP 400 for a prompt that exceeds the context window."""
    message = turn.detail or (
        "This model's maximum context length is 128000 tokens. However, your messages resulted "
        "in 130412 tokens. Please reduce the length of the messages."
    )
    body = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    return WireResponse(status=400, body=json.dumps(body))


def chat_usage(usage: Usage) -> dict[str, Any]:
    """A Chat Completions ``usage`` object."""
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
