"""Google API error bodies: reading them into turns and writing them for the test kit.

The shape is ``{"error": {"code": 429, "message": ..., "status": "RESOURCE_EXHAUSTED",
"details": [...]}}``, sometimes wrapped in a one-element list; a 429 may carry a
``google.rpc.RetryInfo`` detail whose ``retryDelay`` (``"37s"``) says when to retry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from donegate.messages import Ending, ErrorInfo, Part, Turn, Usage
from donegate.models._error_body import error_object as read_error_body
from donegate.models._rules import context_exceeded, error_turn
from donegate.models._values import exact_int
from donegate.models.base import WireResponse
from donegate.models.gemini._parse import API

__all__ = ["error_fields", "error_object", "error_response", "error_turn_for", "status_name"]

_STATUS: dict[int, tuple[str, str]] = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "Requested entity was not found."),
    409: ("ABORTED", "The operation was aborted."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    499: ("CANCELLED", "The operation was cancelled."),
    500: (
        "INTERNAL",
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
    ),
    501: ("NOT_IMPLEMENTED", "Method not implemented."),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
}

_CONTEXT_NEEDLES = ("exceeds the maximum number of tokens", "model only supports up to")


def status_name(status: int) -> str:
    """The ``google.rpc.Code`` name Google sends with an HTTP status."""
    if status in _STATUS:
        return _STATUS[status][0]
    return "INTERNAL" if status >= 500 else "UNKNOWN"


def _retry_delay(details: Any) -> float | None:
    """Seconds from a ``RetryInfo`` detail (``"37s"``, ``"1.5s"``), if one is there."""
    if not isinstance(details, list):
        return None
    for d in details:
        if isinstance(d, Mapping) and str(d.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = d.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    return float(delay[:-1])
                except ValueError:
                    return None
    return None


def error_fields(body: Any) -> tuple[int | None, str | None, str, float | None]:
    """``(code, status name, message, retry delay)`` from an error body of any shape."""
    body = read_error_body(body, limit=1000)
    if isinstance(body, str):
        return None, None, body, None
    err = body.get("error", body)
    if isinstance(err, str):
        return None, None, err, None
    if not isinstance(err, Mapping):
        return None, None, "", None
    code = err.get("code")
    kind = err.get("status")
    message = err.get("message")
    return (
        exact_int(code),
        kind if isinstance(kind, str) else None,
        message if isinstance(message, str) else ("" if message is None else str(message)),
        _retry_delay(err.get("details")),
    )


def _ending(status: int | None, kind: str | None, message: str) -> Ending:
    if status == 429 or kind == "RESOURCE_EXHAUSTED":
        return Ending.ERROR  # quota messages name "input_token_count" metrics
    lowered = message.lower()
    if context_exceeded(message, kind) or any(n in lowered for n in _CONTEXT_NEEDLES):
        return Ending.CONTEXT_EXCEEDED
    return Ending.ERROR


def error_turn_for(
    status: int | None,
    body: Any,
    *,
    retry_after: float | None = None,
    parts: Sequence[Part] = (),
    usage: Usage | None = None,
    in_stream: bool = False,
) -> Turn:
    """The turn an error body implies; an error met mid-stream is always `Ending.ERROR`."""
    code, kind, message, delay = error_fields(body)
    ending = Ending.ERROR if in_stream else _ending(status or code, kind, message)
    return error_turn(
        api=API,
        ending=ending,
        status=status,
        type_=kind,
        message=message,
        raw_reason=str(status) if status else (kind or (str(code) if code else None)),
        retry_after=retry_after if retry_after is not None else delay,
        parts=parts,
        usage=usage,
    )


def error_object(status: int, message: str | None, retry_after: float | None) -> dict[str, Any]:
    """The ``{"error": {...}}`` object Google sends for `status`."""
    name = status_name(status)
    default = _STATUS.get(status, (name, "Internal error encountered."))[1]
    err: dict[str, Any] = {"code": status, "message": message or default, "status": name}
    if retry_after is not None:
        err["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"}
        ]
    return {"error": err}


def error_response(error: ErrorInfo | None, *, status: int = 500) -> WireResponse:
    """Google's HTTP error answer (pretty-printed, as Google sends it)."""
    if error is not None and error.status:
        status = error.status
    retry_after = error.retry_after if error is not None else None
    body = error_object(status, error.message if error is not None else None, retry_after)
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
    return WireResponse(
        status=status,
        body=json.dumps(body, indent=2),
        content_type="application/json; charset=UTF-8",
        headers=headers,
    )
