"""The rules every adapter applies: an ending comes from the signal and the content together.

Adapters map the provider's stop field to a *signal* (what the provider claims) and call
`decide` with the parts they parsed; only `decide` says what the turn's ending is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from donegate.errors import WireFormatError
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
    "CONTEXT_CODES",
    "CUT_OFF",
    "NO_REASON",
    "context_exceeded",
    "context_exceeded_message",
    "decide",
    "error_turn",
    "has_visible_output",
    "make_turn",
    "missing_reason",
    "stopped_turn",
    "stream_turn",
    "table_signal",
]


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
    if signal is not Ending.COMPLETE and signal is not Ending.TOOL_USE:
        return signal, None
    calls = refused = False
    bad: ToolCall | None = None
    for p in parts:  # one pass: this runs on every turn of every run
        if isinstance(p, ToolCall):
            calls = True
            if bad is None and p.parse_error is not None:
                bad = p
        elif isinstance(p, RefusalPart):
            refused = True
    if refused and not calls:
        return Ending.REFUSED, None
    if bad is not None:
        return Ending.MALFORMED_TOOL_CALL, f"{bad.name}: {bad.parse_error}"
    if calls:
        return Ending.TOOL_USE, None
    if has_visible_output(parts):
        return Ending.COMPLETE, None
    return Ending.EMPTY, None


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


CUT_OFF = "stream ended before its final event"
"""The detail of a stream that stopped before its closing event."""

NO_REASON = "no finish reason"
"""The detail of a response that ended normally without saying why the model stopped."""


def missing_reason(*, ended: bool) -> tuple[Ending, str]:
    """The signal and detail of a turn whose provider gave no stop reason anywhere.

    One rule for every format, streamed or not. A response that `ended` normally (a whole
    body, or a stream that reached its closing event: ``[DONE]``, ``message_stop``, a closed
    JSON array) but never said why the model stopped proves nothing about completion, and
    nothing says a limit was hit: `error`, "no finish reason". A stream that stopped before
    its closing event was cut off in transit: `truncated`.
    """
    return (Ending.ERROR, NO_REASON) if ended else (Ending.TRUNCATED, CUT_OFF)


def table_signal(
    reason: Any,
    table: Mapping[str, Ending],
    *,
    api: str,
    path: str,
    fold: Callable[[str], str] = str,
) -> tuple[Ending, str | None, str | None]:
    """``(signal, raw_reason, detail)`` for a stop field that `table` documents.

    No value is the missing-reason rule; a value that is not a string is a wire-format error at
    `path`; a string the table lacks (looked up as ``fold(value)``) is an error that names it,
    never a normal stop.
    """
    if reason is None:
        missing, why = missing_reason(ended=True)
        return missing, None, why
    if not isinstance(reason, str):
        raise WireFormatError(api, f"expected a string, got {type(reason).__name__}", path=path)
    signal = table.get(fold(reason))
    if signal is None:
        return Ending.ERROR, reason, f"unknown {path.rsplit('.', 1)[-1]} {reason!r}"
    return signal, reason, None


def stream_turn(
    *,
    api: str,
    parts: Sequence[Part],
    usage: Usage,
    error: tuple[str | None, str] | None,
    stop: tuple[Ending, str | None, str | None] | None,
    ended: bool,
    model: str | None = None,
    response_id: str | None = None,
) -> Turn:
    """The turn an accumulated stream gives: an error event's ``(type, message)`` makes an error
    turn that keeps the partial parts; no `stop` (the stream never said why the model stopped)
    is the missing-reason rule, with `ended` telling whether it reached its closing event."""
    if error is not None:
        kind, message = error
        return error_turn(
            api=api,
            ending=Ending.ERROR,
            status=None,
            type_=kind,
            message=message,
            parts=parts,
            usage=usage,
        )
    if stop is None:
        signal, detail = missing_reason(ended=ended)
        stop = signal, None, detail
    return stopped_turn(
        api=api, parts=parts, stop=stop, usage=usage, model=model, response_id=response_id
    )


def stopped_turn(
    *,
    api: str,
    parts: Sequence[Part],
    stop: tuple[Ending, str | None, str | None],
    usage: Usage,
    model: str | None = None,
    response_id: str | None = None,
) -> Turn:
    """`make_turn` for a stop field already read as ``(signal, raw_reason, detail)``."""
    signal, raw, detail = stop
    return make_turn(
        api=api,
        signal=signal,
        parts=parts,
        raw_reason=raw,
        detail=detail,
        usage=usage,
        model=model,
        response_id=response_id,
    )


CONTEXT_CODES = frozenset(
    {
        "context_length_exceeded",  # OpenAI, Azure, Groq, Cerebras, DeepSeek, xAI
        "context_window_exceeded",
        "model_context_window_exceeded",
        "too_many_prompt_tokens",  # Perplexity
        "exceed_context_size_error",  # llama.cpp server
        "contextwindowexceedederror",  # LiteLLM's exception name, as its proxy reports it
    }
)
"""Error ``code``/``type`` values (lower-cased) that say the prompt does not fit."""

_CONTEXT_NEEDLES = (
    "context length",
    "context_length",
    "context window",
    "contextwindowexceeded",  # LiteLLM: "litellm.ContextWindowExceededError: ..."
    "maximum context",
    "maximum prompt length",
    "prompt length exceeds",
    "prompt is too long",
    "too many tokens",
    "input is too long",
    "exceeds the maximum number of tokens",
    "input token count",
    "reduce the length",
    "too large for model",  # Mistral: "... too large for model with 32768 maximum context length"
    "exceed context limit",
    "context limit",
    "prompt too long",
    "maximum allowed number of input tokens",
    "total length of all messages",  # Perplexity: "The total length of all messages is too long."
    "longer than the maximum model length",  # vLLM: "The decoder prompt (length N) is longer..."
    "too long to fit into the model",  # vLLM: "The prompt (total length N) is too long to fit..."
    "available context size",  # llama.cpp: "request (N tokens) exceeds the available context size"
    "input tokens exceed",  # "Input tokens exceed the configured limit of 272000 tokens."
    "`inputs` tokens + `max_new_tokens`",  # Text Generation Inference (Hugging Face, Together)
    "`inputs` must have less than",  # Text Generation Inference
)


def context_exceeded_message(message: str) -> bool:
    """True when an error message says the prompt does not fit the context window."""
    m = message.lower()
    return any(needle in m for needle in _CONTEXT_NEEDLES)


def context_exceeded(message: str, *codes: object) -> bool:
    """True when an error's ``code``/``type`` fields or its message say the prompt does not fit.

    Servers that speak one wire format word this differently: some only set a code
    (``too_many_prompt_tokens``), some only a message, some put the code in ``type``.
    """
    return any(
        isinstance(c, str) and c.lower() in CONTEXT_CODES for c in codes
    ) or context_exceeded_message(message)
