"""Whole Responses bodies and error bodies -> classified turns.

The signal is ``status``: ``completed`` is a normal stop (the content rules decide between
complete, tool_use, refused, empty); ``incomplete`` says why in ``incomplete_details.reason``
(``max_output_tokens`` truncated, ``content_filter`` filtered); ``failed`` carries an ``error``
object; ``cancelled`` and a background response still ``queued``/``in_progress`` are never a
finished turn. There is no ``finish_reason``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from donegate.messages import Ending, Part, Turn, Usage
from donegate.models import _openai_common as common
from donegate.models._rules import error_turn, make_turn, missing_reason
from donegate.models.openai_responses._items import API, fail, parse_items

__all__ = ["parse_body", "parse_error", "stream_error", "usage_of"]

_INCOMPLETE: dict[str, Ending] = {
    "max_output_tokens": Ending.TRUNCATED,
    "content_filter": Ending.FILTERED,
}

_UNFINISHED: dict[str, str] = {
    "cancelled": "the response was cancelled",
    "queued": "the background response is still queued",
    "in_progress": "the background response is still in progress",
}

_POLICY_CODES = frozenset(
    {"bio_policy", "misalignment_policy_violation", "image_content_policy_violation"}
)
"""``failed`` error codes that mean a safety system blocked the response."""


def usage_of(raw: Any) -> Usage:
    """A Responses ``usage`` object (lenient: usage never decides an ending)."""
    if not isinstance(raw, Mapping):
        return Usage()
    into = raw.get("input_tokens_details")
    out = raw.get("output_tokens_details")
    into = into if isinstance(into, Mapping) else {}
    return Usage(
        input_tokens=common.int_or_zero(raw.get("input_tokens")),
        output_tokens=common.int_or_zero(raw.get("output_tokens")),
        cache_read_tokens=common.int_or_zero(into.get("cached_tokens")),
        cache_write_tokens=common.int_or_zero(into.get("cache_write_tokens")),
        reasoning_tokens=common.int_or_zero(
            out.get("reasoning_tokens") if isinstance(out, Mapping) else None
        ),
    )


def _refine(turn: Turn) -> Turn:
    """Safety-policy failures are `filtered`, not a retryable error."""
    err = turn.error
    if turn.ending is not Ending.ERROR or err is None:
        return turn
    flagged = err.type == "invalid_prompt" and "usage polic" in err.message.lower()
    if err.type in _POLICY_CODES or flagged:
        return replace(turn, ending=Ending.FILTERED)
    return turn


def parse_error(status: int | None, body: Any, *, retry_after: float | None = None) -> Turn:
    """An HTTP error body (or a 200 error envelope when `status` is None)."""
    return _refine(common.openai_error_turn(API, status, body, retry_after=retry_after))


def stream_error(
    body: Any,
    *,
    raw_reason: str,
    parts: Sequence[Part] = (),
    usage: Usage | None = None,
    model: str | None = None,
    response_id: str | None = None,
) -> Turn:
    """A failed response's ``error`` or a stream's ``error`` event, with what came before it."""
    turn = parse_error(None, body)
    err = turn.error
    return replace(
        error_turn(
            api=API,
            ending=turn.ending,
            status=None,
            type_=err.type if err else None,
            message=err.message if err else "",
            raw_reason=raw_reason,
            parts=parts,
            usage=usage,
        ),
        model=model,
        response_id=response_id,
    )


def parse_body(body: Any, output: list[Any] | None = None) -> Turn:
    """Classify a response object; `output` replaces its items (streams whose final event
    omits them)."""
    if not isinstance(body, dict):
        fail(f"expected an object, got {type(body).__name__}", "$")
    status = body.get("status")
    if (
        status is None
        and "output" not in body
        and (body.get("error") is not None or body.get("type") == "error")
    ):
        return parse_error(None, body)
    parts = parse_items(body.get("output") if output is None else output, "output")
    usage = usage_of(body.get("usage"))
    model = body.get("model") if isinstance(body.get("model"), str) else None
    rid = body.get("id") if isinstance(body.get("id"), str) else None
    details = body.get("incomplete_details")
    if details is not None and not isinstance(details, dict):
        fail(f"expected an object, got {type(details).__name__}", "incomplete_details")
    if status == "completed":
        signal, raw = Ending.COMPLETE, "completed"
    elif status == "incomplete" or (status is None and details):
        reason = details.get("reason") if details else None
        raw = reason if isinstance(reason, str) else "incomplete"
        if raw not in _INCOMPLETE:
            return stream_error(
                {"error": {"code": "incomplete", "message": f"incomplete response ({raw})"}},
                raw_reason=raw,
                parts=parts,
                usage=usage,
                model=model,
                response_id=rid,
            )
        signal = _INCOMPLETE[raw]
    elif status == "failed" or (status is None and body.get("error") is not None):
        return stream_error(
            {"error": body.get("error")},
            raw_reason="failed",
            parts=parts,
            usage=usage,
            model=model,
            response_id=rid,
        )
    elif status is None and not details:
        signal, detail = missing_reason(ended=True)
        return make_turn(
            api=API,
            signal=signal,
            parts=parts,
            raw_reason=None,
            detail=detail,
            usage=usage,
            model=model,
            response_id=rid,
        )
    elif isinstance(status, str):
        message = _UNFINISHED.get(status, f"unknown response status {status!r}")
        return stream_error(
            {"error": {"code": status, "message": message}},
            raw_reason=status,
            parts=parts,
            usage=usage,
            model=model,
            response_id=rid,
        )
    else:
        fail(f"expected a string, got {type(status).__name__}", "status")
    return make_turn(
        api=API,
        signal=signal,
        parts=parts,
        raw_reason=raw,
        usage=usage,
        model=model,
        response_id=rid,
    )
