"""Reading ``GenerateContentResponse`` bodies and chunks: parts, usage, finish reasons.

Gemini's signal is ``candidates[0].finishReason``; with no candidate at all the prompt itself was
blocked (``promptFeedback.blockReason``). Function calls arrive whole (arguments as an object),
often without an id: the id is then synthesized from the call's position (``call_0``...) and the
absence noted as ``synthetic_id`` so a request never sends a made-up id back.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import (
    Ending,
    MediaPart,
    Part,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
)
from donegate.models._rules import make_turn, missing_reason
from donegate.models._values import MAPPING, exact_int
from donegate.models.gemini._enums import decode_response

__all__ = [
    "API",
    "FILTER_REASONS",
    "MALFORMED_REASONS",
    "array_items",
    "finish_turn",
    "parse_body",
    "parse_part",
    "parse_usage",
    "signal",
]

API = "gemini"

FILTER_REASONS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
        "ESCALATION",
        "PUP_LIMITED_DISABLED",
        "JAILBREAK",
    }
)
"""Finish (and block) reasons that mean a filter or policy stopped the output."""

MALFORMED_REASONS = frozenset(
    {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"}
)
"""Finish reasons where Gemini rejected the model's own function call(s)."""

_TRUNCATED_REASONS = frozenset({"MAX_TOKENS", "CONTINUATION"})


def signal(reason: str) -> Ending:
    """The signal a ``finishReason`` gives; unknown reasons (``OTHER``, ...) are errors."""
    if reason == "STOP":
        return Ending.COMPLETE
    if reason in _TRUNCATED_REASONS:
        return Ending.TRUNCATED
    if reason in FILTER_REASONS:
        return Ending.FILTERED
    if reason in MALFORMED_REASONS:
        return Ending.MALFORMED_TOOL_CALL
    return Ending.ERROR


def _str(value: Any, path: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise WireFormatError(API, f"expected a string, got {type(value).__name__}", path=path)


def _map(value: Any, path: str) -> Mapping[str, Any] | None:
    if value is None or isinstance(value, MAPPING):
        return value
    raise WireFormatError(API, f"expected an object, got {type(value).__name__}", path=path)


def parse_part(raw: Any, path: str, call_index: int) -> Part | None:
    """One ``Part`` of a content; ``call_index`` names a call that has no id of its own."""
    if not isinstance(raw, MAPPING):
        raise WireFormatError(API, "a part must be an object", path=path)
    sig = _str(raw.get("thoughtSignature"), f"{path}.thoughtSignature")
    if "text" in raw:
        text = _str(raw["text"], f"{path}.text") or ""
        if raw.get("thought") is True:
            return ThinkingPart(text=text, signature=sig)
        return TextPart(text=text, provider_details={"thoughtSignature": sig} if sig else None)
    call = _map(raw.get("functionCall"), f"{path}.functionCall")
    if call is not None:
        return _function_call(call, sig, f"{path}.functionCall", call_index)
    blob = _map(raw.get("inlineData"), f"{path}.inlineData")
    if blob is not None:
        return MediaPart(
            mime_type=_str(blob.get("mimeType"), f"{path}.inlineData.mimeType") or "",
            data=_str(blob.get("data"), f"{path}.inlineData.data"),
        )
    ref = _map(raw.get("fileData"), f"{path}.fileData")
    if ref is not None:
        return MediaPart(
            mime_type=_str(ref.get("mimeType"), f"{path}.fileData.mimeType") or "",
            uri=_str(ref.get("fileUri"), f"{path}.fileData.fileUri"),
        )
    for key in raw:
        if key not in ("thoughtSignature", "thought"):
            # executableCode, codeExecutionResult, toolCall, ...: the server ran it.
            return ServerToolPart(name=str(key), data=raw)
    if sig is not None:
        return ThinkingPart(text="", signature=sig)
    return None


def _function_call(call: Mapping[str, Any], sig: str | None, path: str, index: int) -> ToolCall:
    name = call.get("name")
    if not isinstance(name, str):
        raise WireFormatError(API, "a function call needs a name", path=f"{path}.name")
    args = _map(call.get("args"), f"{path}.args")
    call_id = _str(call.get("id"), f"{path}.id")
    details: dict[str, Any] = {}
    if not call_id:
        call_id, details["synthetic_id"] = f"call_{index}", True
    if sig:
        details["thoughtSignature"] = sig
    try:
        return ToolCall.from_args(
            id=call_id, name=name, arguments=args, provider_details=details or None
        )
    except (TypeError, ValueError) as exc:
        raise WireFormatError(API, f"arguments are not JSON: {exc}", path=f"{path}.args") from exc


def parse_parts(content: Any, path: str, first_call: int = 0) -> list[Part]:
    """The parts of a ``content`` object (absent, ``{}`` or without ``parts`` is no parts)."""
    content = _map(content, path)
    if content is None:
        return []
    raw = content.get("parts")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise WireFormatError(API, "expected a list", path=f"{path}.parts")
    out: list[Part] = []
    calls = first_call
    for i, item in enumerate(raw):
        part = parse_part(item, f"{path}.parts[{i}]", calls)
        if part is not None:
            out.append(part)
            calls += isinstance(part, ToolCall)
    return out


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    if value is None:
        return 0
    number = exact_int(value)
    if number is not None:
        return number
    raise WireFormatError(API, "expected an integer", path=f"usageMetadata.{key}")


def parse_usage(raw: Any) -> Usage:
    """``usageMetadata``: prompt (cache and tool-use prompts included) and output with thoughts."""
    raw = _map(raw, "usageMetadata")
    if raw is None:
        return Usage()
    thoughts = _count(raw, "thoughtsTokenCount")
    return Usage(
        input_tokens=_count(raw, "promptTokenCount") + _count(raw, "toolUsePromptTokenCount"),
        output_tokens=_count(raw, "candidatesTokenCount") + thoughts,
        cache_read_tokens=_count(raw, "cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


def _blocked(reason: str, ratings: Any) -> str:
    """``SAFETY: HARM_CATEGORY_HARASSMENT``: the reason and the categories that blocked."""
    if not isinstance(ratings, list):
        return reason
    cats = [
        r["category"]
        for r in ratings
        if isinstance(r, MAPPING)
        and r.get("blocked") is True
        and isinstance(r.get("category"), str)
    ]
    return f"{reason}: {', '.join(cats)}" if cats else reason


def finish_turn(
    reason: str | None,
    parts: Sequence[Part],
    *,
    candidate: Mapping[str, Any] | None,
    feedback: Mapping[str, Any] | None,
    usage: Usage,
    model: str | None,
    response_id: str | None,
    ended: bool,
) -> Turn:
    """The turn for a candidate's finish reason.

    With none (and no blocked prompt) the shared rule applies: a response that `ended` normally
    (a whole body, a closed JSON array) is an error, a stream that just stopped is truncated.
    """
    detail: str | None = None
    if reason is None:
        block = feedback.get("blockReason") if feedback is not None else None
        if candidate is None and isinstance(block, str) and feedback is not None:
            sig, reason = Ending.FILTERED, block
            detail = _blocked(block, feedback.get("safetyRatings"))
        else:
            sig, detail = missing_reason(ended=ended)
    else:
        sig = signal(reason)
        message = candidate.get("finishMessage") if candidate is not None else None
        if sig is Ending.FILTERED and candidate is not None:
            detail = _blocked(reason, candidate.get("safetyRatings"))
        elif sig in (Ending.MALFORMED_TOOL_CALL, Ending.ERROR):
            detail = message if isinstance(message, str) and message else reason
    return make_turn(
        api=API,
        signal=sig,
        parts=parts,
        raw_reason=reason,
        detail=detail,
        usage=usage,
        model=model,
        response_id=response_id,
    )


def parse_body(body: Any) -> Turn | None:
    """Classify a whole ``GenerateContentResponse``; None when it is an error envelope."""
    if not isinstance(body, MAPPING):
        raise WireFormatError(API, f"expected an object, got {type(body).__name__}")
    if "error" in body and "candidates" not in body:
        return None
    body = decode_response(body)
    candidates = body.get("candidates")
    if candidates is not None and not isinstance(candidates, list):
        raise WireFormatError(API, "expected a list", path="candidates")
    candidate: Mapping[str, Any] | None = None
    parts: list[Part] = []
    reason: str | None = None
    if candidates:
        candidate = _map(candidates[0], "candidates[0]")
    if candidate is not None:
        parts = parse_parts(candidate.get("content"), "candidates[0].content")
        reason = _str(candidate.get("finishReason"), "candidates[0].finishReason")
    model = body.get("modelVersion")
    rid = body.get("responseId")
    return finish_turn(
        reason,
        parts,
        candidate=candidate,
        feedback=_map(body.get("promptFeedback"), "promptFeedback"),
        usage=parse_usage(body.get("usageMetadata")),
        model=model if isinstance(model, str) else None,
        response_id=rid if isinstance(rid, str) else None,
        ended=True,
    )


def array_items(text: str) -> Generator[Any, None, bool]:
    """The items of a JSON array stream (no ``alt=sse``), up to where it was cut off.

    The generator's return value (``StopIteration.value``) says whether the array was closed
    by its ``]``: the stream's normal end.
    """
    decoder = json.JSONDecoder()
    i, n = text.find("[") + 1, len(text)
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n:
            return False
        if text[i] == "]":
            return True
        try:
            item, i = decoder.raw_decode(text, i)
        except ValueError:
            return False
        yield item
