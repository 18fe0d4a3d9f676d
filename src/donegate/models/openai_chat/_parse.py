"""Chat completion bodies: finish reasons, usage, content, tool calls (whole and legacy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import (
    Ending,
    Part,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
)
from donegate.models import _openai_common as common
from donegate.models._rules import make_turn, missing_reason
from donegate.models._values import MAPPING, opt_str

API = "openai-chat"

_SIGNALS: dict[str, Ending] = {
    "stop": Ending.COMPLETE,
    "eos": Ending.COMPLETE,
    "end_turn": Ending.COMPLETE,
    "stop_sequence": Ending.COMPLETE,
    "tool_calls": Ending.TOOL_USE,
    "function_call": Ending.TOOL_USE,
    "tool_use": Ending.TOOL_USE,
    "length": Ending.TRUNCATED,
    "max_tokens": Ending.TRUNCATED,
    "content_filter": Ending.FILTERED,
    "model_context_window_exceeded": Ending.CONTEXT_EXCEEDED,
}


def finish_signal(reason: Any, *, ended: bool = True) -> tuple[Ending, str | None]:
    """The signal of a ``finish_reason`` and its detail; an unknown reason is an error.

    With no reason at all the shared rule applies: a normal end (a whole body, a stream that
    reached ``[DONE]``) is an error, a stream cut off before it is truncated.
    """
    if reason is None:
        return missing_reason(ended=ended)
    signal = _SIGNALS.get(reason) if isinstance(reason, str) else None
    if signal is None:
        return Ending.ERROR, f"unknown finish_reason {reason!r}"
    return signal, None


def parse_usage(raw: Any) -> Usage:
    if raw is None or not isinstance(raw, MAPPING):
        return Usage()
    # the details are often absent: `is not None` first spares None the ABC check (`MAPPING`)
    details = raw.get("prompt_tokens_details")
    cached = (
        details.get("cached_tokens")
        if details is not None and isinstance(details, MAPPING)
        else None
    )
    out_details = raw.get("completion_tokens_details")
    reasoned = (
        out_details.get("reasoning_tokens")
        if out_details is not None and isinstance(out_details, MAPPING)
        else None
    )
    # `common.int_or_zero`, inline: this runs on every turn
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    return Usage(
        input_tokens=prompt if type(prompt) is int else 0,
        output_tokens=completion if type(completion) is int else 0,
        cache_read_tokens=cached if type(cached) is int else 0,
        reasoning_tokens=reasoned if type(reasoned) is int else 0,
    )


def text_of(content: Any, path: str) -> str:
    """``content`` is a string, null, or (some servers) a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"] for p in content if isinstance(p, MAPPING) and isinstance(p.get("text"), str)
        )
    raise WireFormatError(API, f"expected a string, got {type(content).__name__}", path=path)


def tool_call(raw: Any, index: int, path: str) -> ToolCall:
    """The call at ``{path}[{index}]``."""
    if not isinstance(raw, MAPPING):
        raise WireFormatError(API, "a tool call must be an object", path=f"{path}[{index}]")
    call_id = raw.get("id")
    details: dict[str, Any] = {}
    if not isinstance(call_id, str) or not call_id:
        call_id, details["synthetic_id"] = f"call_{index}", True
    if raw.get("type") == "custom" and isinstance(raw.get("custom"), MAPPING):
        custom = raw["custom"]
        text = custom.get("input") if isinstance(custom.get("input"), str) else ""
        return custom_call(call_id, str(custom.get("name", "")), text, details)
    fn = raw.get("function")
    if fn is None or not isinstance(fn, MAPPING):
        where = f"{path}[{index}].function"
        raise WireFormatError(API, "a tool call needs a function object", path=where)
    name, args = fn.get("name"), fn.get("arguments")
    if type(name) is str and type(args) is str:  # the usual call: its error path is never built
        return ToolCall.from_raw(
            id=call_id, name=name, arguments_raw=args, provider_details=details or None
        )
    return function_call(fn, call_id, details or None, f"{path}[{index}].function")


def custom_call(call_id: str, name: str, text: str, details: Mapping[str, Any]) -> ToolCall:
    """A custom (free-form) tool call: its input is plain text, never JSON to parse."""
    return ToolCall(
        id=call_id,
        name=name,
        arguments_raw=text,
        arguments={"input": text},
        provider_details={"type": "custom", **details},
    )


def function_call(
    fn: Mapping[str, Any], call_id: str, details: Mapping[str, Any] | None, path: str
) -> ToolCall:
    name, args = fn.get("name"), fn.get("arguments")
    if not isinstance(name, str):
        raise WireFormatError(API, "a function call needs a name", path=f"{path}.name")
    if isinstance(args, str):
        return ToolCall.from_raw(
            id=call_id, name=name, arguments_raw=args, provider_details=details
        )
    if args is not None and isinstance(args, MAPPING):  # some servers send an object
        return ToolCall.from_args(id=call_id, name=name, arguments=args, provider_details=details)
    if args is not None:
        raise WireFormatError(API, "arguments must be a string", path=f"{path}.arguments")
    return ToolCall.from_raw(id=call_id, name=name, arguments_raw="", provider_details=details)


def reasoning(message: Mapping[str, Any]) -> str:
    value = message.get("reasoning_content")
    if isinstance(value, str) and value:
        return value
    value = message.get("reasoning")
    return value if isinstance(value, str) and value else ""


def parse_body(body: Any) -> Turn:
    """Classify a non-streamed completion."""
    if not isinstance(body, MAPPING):
        raise WireFormatError(API, f"expected an object, got {type(body).__name__}")
    if "error" in body and "choices" not in body:
        return common.openai_error_turn(API, 200, body)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise WireFormatError(API, "expected a non-empty list", path="choices")
    choice = choices[0]
    if not isinstance(choice, MAPPING):
        raise WireFormatError(API, "a choice must be an object", path="choices[0]")
    message = choice.get("message") or {}
    if not isinstance(message, MAPPING):
        raise WireFormatError(API, "a message must be an object", path="choices[0].message")
    parts: list[Part] = []
    thinking = reasoning(message)
    if thinking:
        parts.append(ThinkingPart(text=thinking))
    text = message.get("content")
    if type(text) is not str:  # a string is the usual content: `text_of` reads the rest
        text = text_of(text, "choices[0].message.content")
    if text:
        parts.append(TextPart(text=text))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append(RefusalPart(text=refusal))
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for i, c in enumerate(calls):
            parts.append(tool_call(c, i, "choices[0].message.tool_calls"))
    elif calls is not None:
        raise WireFormatError(API, "expected a list", path="choices[0].message.tool_calls")
    legacy = message.get("function_call")
    if legacy is not None and isinstance(legacy, MAPPING):
        parts.append(
            function_call(legacy, "call_0", {"legacy": True}, "choices[0].message.function_call")
        )
    reason = choice.get("finish_reason")
    signal, detail = finish_signal(reason)
    if reason == "content_filter":
        detail = common.filter_detail(choice)
    return make_turn(
        api=API,
        signal=signal,
        parts=parts,
        raw_reason=reason if isinstance(reason, str) else None,
        detail=detail,
        usage=parse_usage(body.get("usage")),
        model=opt_str(body.get("model")),
        response_id=opt_str(body.get("id")),
    )
