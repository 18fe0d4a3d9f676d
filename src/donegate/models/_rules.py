"""The rules every adapter applies: an ending comes from the signal and the content together.

Adapters map the provider's stop field to a *signal* (what the provider claims) and call
`decide` with the parts they parsed; only `decide` says what the turn's ending is.
"""

from __future__ import annotations

from collections.abc import Sequence

from donegate.messages import (
    Ending,
    ErrorInfo,
    MediaPart,
    Message,
    Part,
    RefusalPart,
    TextPart,
    ToolCall,
    Turn,
    Usage,
)

__all__ = [
    "context_exceeded_message",
    "decide",
    "error_turn",
    "has_visible_output",
    "make_turn",
]

_NORMAL = (Ending.COMPLETE, Ending.TOOL_USE)


def has_visible_output(parts: Sequence[Part]) -> bool:
    """True when the parts hold non-whitespace visible text or other real output (media)."""
    for p in parts:
        if isinstance(p, TextPart):
            if p.text.strip():
                return True
        elif isinstance(p, MediaPart):
            return True
    return False


def decide(signal: Ending, parts: Sequence[Part]) -> tuple[Ending, str | None]:
    """The ending of a turn whose provider signal is `signal`, and a detail if one applies.

    1. A structured refusal part makes the turn `refused` unless a limit or filter cut it.
    2. A normal stop (`complete`/`tool_use` signal): a call whose arguments do not parse is
       `malformed_tool_call`; any call makes it `tool_use`; visible output `complete`; else
       `empty`.
    3. `truncated` stays `truncated` even with a partial call (kept for the record).
    4. Every other signal stands as the provider gave it.
    """
    calls = [p for p in parts if isinstance(p, ToolCall)]
    if signal in _NORMAL:
        if any(isinstance(p, RefusalPart) for p in parts) and not calls:
            return Ending.REFUSED, None
        bad = next((c for c in calls if c.parse_error is not None), None)
        if bad is not None:
            return Ending.MALFORMED_TOOL_CALL, f"{bad.name}: {bad.parse_error}"
        if calls:
            return Ending.TOOL_USE, None
        if has_visible_output(parts):
            return Ending.COMPLETE, None
        return Ending.EMPTY, None
    return signal, None


def make_turn(
    *,
    api: str,
    signal: Ending,
    parts: Sequence[Part],
    raw_reason: str | None,
    detail: str | None = None,
    usage: Usage | None = None,
    model: str | None = None,
    response_id: str | None = None,
) -> Turn:
    """Build a classified turn from what an adapter parsed."""
    ending, why = decide(signal, parts)
    return Turn(
        message=Message(role="assistant", parts=tuple(parts)),
        ending=ending,
        raw_reason=raw_reason,
        detail=detail if detail is not None else why,
        usage=usage or Usage(),
        model=model,
        response_id=response_id,
        api=api,
    )


def error_turn(
    *,
    api: str,
    ending: Ending,
    status: int | None,
    type_: str | None,
    message: str,
    raw_reason: str | None = None,
    retry_after: float | None = None,
    parts: Sequence[Part] = (),
    usage: Usage | None = None,
) -> Turn:
    """A turn for an error body or error event (no `decide`: the error is the signal)."""
    return Turn(
        message=Message(role="assistant", parts=tuple(parts)),
        ending=ending,
        raw_reason=raw_reason if raw_reason is not None else (str(status) if status else type_),
        detail=message or None,
        usage=usage or Usage(),
        error=ErrorInfo(status=status, type=type_, message=message, retry_after=retry_after),
        api=api,
    )


def context_exceeded_message(message: str) -> bool:
    """True when an error message says the prompt does not fit the context window."""
    m = message.lower()
    return any(
        needle in m
        for needle in (
            "context length",
            "context_length",
            "context window",
            "maximum context",
            "maximum prompt length",
            "prompt length exceeds",
            "prompt is too long",
            "too many tokens",
            "input is too long",
            "exceeds the maximum number of tokens",
            "input token count",
            "reduce the length",
            "too large for model",
            "exceed context limit",
            "context limit",
            "prompt too long",
            "maximum allowed number of input tokens",
        )
    )
