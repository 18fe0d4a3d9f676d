"""OpenAI Chat Completions, and every server that speaks it (Azure, Groq, vLLM, Ollama, ...).

Signals: ``finish_reason`` (``stop``, ``tool_calls``, legacy ``function_call``, ``length``,
``content_filter``), ``message.refusal``, and the compatible servers' ``reasoning_content`` /
``reasoning`` fields (thinking, never visible text). A tool call counts whatever the finish
reason says: Gemini's compatible endpoint and forced legacy calls report ``stop``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from donegate.errors import UnsupportedTurn, WireFormatError
from donegate.messages import (
    Ending,
    Message,
    Part,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)
from donegate.models import _openai_common as common
from donegate.models._rules import error_turn, make_turn, missing_reason
from donegate.models._sse import accumulate, iter_sse
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec, WireResponse

__all__ = ["WIRE", "OpenAIChat"]

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

_FINISH: dict[Ending, str] = {
    Ending.COMPLETE: "stop",
    Ending.EMPTY: "stop",
    Ending.REFUSED: "stop",
    Ending.TOOL_USE: "tool_calls",
    Ending.MALFORMED_TOOL_CALL: "tool_calls",
    Ending.TRUNCATED: "length",
    Ending.FILTERED: "content_filter",
}


def _signal(reason: Any, *, ended: bool = True) -> tuple[Ending, str | None]:
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


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    details = raw.get("prompt_tokens_details")
    out_details = raw.get("completion_tokens_details")
    return Usage(
        input_tokens=common.int_or_zero(raw.get("prompt_tokens")),
        output_tokens=common.int_or_zero(raw.get("completion_tokens")),
        cache_read_tokens=common.int_or_zero(
            details.get("cached_tokens") if isinstance(details, Mapping) else None
        ),
        reasoning_tokens=common.int_or_zero(
            out_details.get("reasoning_tokens") if isinstance(out_details, Mapping) else None
        ),
    )


def _text_of(content: Any, path: str) -> str:
    """``content`` is a string, null, or (some servers) a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        )
    raise WireFormatError(API, f"expected a string, got {type(content).__name__}", path=path)


def _call(raw: Any, index: int, path: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise WireFormatError(API, "a tool call must be an object", path=path)
    call_id = raw.get("id")
    details: dict[str, Any] = {}
    if not isinstance(call_id, str) or not call_id:
        call_id, details["synthetic_id"] = f"call_{index}", True
    if raw.get("type") == "custom" and isinstance(raw.get("custom"), Mapping):
        custom = raw["custom"]
        text = custom.get("input") if isinstance(custom.get("input"), str) else ""
        return _custom_call(call_id, str(custom.get("name", "")), text, details)
    fn = raw.get("function")
    if not isinstance(fn, Mapping):
        raise WireFormatError(API, "a tool call needs a function object", path=f"{path}.function")
    return _function(fn, call_id, details or None, f"{path}.function")


def _custom_call(call_id: str, name: str, text: str, details: Mapping[str, Any]) -> ToolCall:
    """A custom (free-form) tool call: its input is plain text, never JSON to parse."""
    return ToolCall(
        id=call_id,
        name=name,
        arguments_raw=text,
        arguments={"input": text},
        provider_details={"type": "custom", **details},
    )


def _function(
    fn: Mapping[str, Any], call_id: str, details: Mapping[str, Any] | None, path: str
) -> ToolCall:
    name, args = fn.get("name"), fn.get("arguments")
    if not isinstance(name, str):
        raise WireFormatError(API, "a function call needs a name", path=f"{path}.name")
    if isinstance(args, Mapping):  # some servers send an object instead of a string
        return ToolCall.from_args(id=call_id, name=name, arguments=args, provider_details=details)
    if args is not None and not isinstance(args, str):
        raise WireFormatError(API, "arguments must be a string", path=f"{path}.arguments")
    return ToolCall.from_raw(
        id=call_id, name=name, arguments_raw=args or "", provider_details=details
    )


def _reasoning(message: Mapping[str, Any]) -> str:
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


class OpenAIChat:
    """Wire mapping for ``/v1/chat/completions``."""

    name = API

    # -- responses -------------------------------------------------------------------------

    def parse_response(self, body: Any) -> Turn:
        """Classify a non-streamed completion."""
        if not isinstance(body, Mapping):
            raise WireFormatError(API, f"expected an object, got {type(body).__name__}")
        if "error" in body and "choices" not in body:
            return self.parse_error(200, body)
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise WireFormatError(API, "expected a non-empty list", path="choices")
        choice = choices[0]
        if not isinstance(choice, Mapping):
            raise WireFormatError(API, "a choice must be an object", path="choices[0]")
        message = choice.get("message") or {}
        if not isinstance(message, Mapping):
            raise WireFormatError(API, "a message must be an object", path="choices[0].message")
        parts: list[Part] = []
        thinking = _reasoning(message)
        if thinking:
            parts.append(ThinkingPart(text=thinking))
        text = _text_of(message.get("content"), "choices[0].message.content")
        if text:
            parts.append(TextPart(text=text))
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            parts.append(RefusalPart(text=refusal))
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            parts.extend(
                _call(c, i, f"choices[0].message.tool_calls[{i}]") for i, c in enumerate(calls)
            )
        elif calls is not None:
            raise WireFormatError(API, "expected a list", path="choices[0].message.tool_calls")
        legacy = message.get("function_call")
        if isinstance(legacy, Mapping):
            parts.append(
                _function(legacy, "call_0", {"legacy": True}, "choices[0].message.function_call")
            )
        reason = choice.get("finish_reason")
        signal, detail = _signal(reason)
        if reason == "content_filter":
            detail = common.filter_detail(choice)
        return make_turn(
            api=API,
            signal=signal,
            parts=parts,
            raw_reason=reason if isinstance(reason, str) else None,
            detail=detail,
            usage=_usage(body.get("usage")),
            model=body.get("model") if isinstance(body.get("model"), str) else None,
            response_id=body.get("id") if isinstance(body.get("id"), str) else None,
        )

    def parse_error(self, status: int, body: Any, *, retry_after: float | None = None) -> Turn:
        """The ending an error body implies."""
        return common.openai_error_turn(API, status, body, retry_after=retry_after)

    def stream(self) -> _ChatStream:
        """A fresh accumulator for a streamed completion."""
        return _ChatStream()

    def parse_stream(self, text: str) -> Turn:
        """Classify a whole SSE stream."""
        return accumulate(self.stream(), iter_sse(text)).finish()

    # -- requests --------------------------------------------------------------------------

    def render_request(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for a canonical request."""
        messages: list[dict[str, Any]] = []
        for m in request.messages:
            messages.extend(_render_message(m))
        body: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.tools:
            body["tools"] = [_render_tool(t) for t in request.tools]
        s = request.settings
        if s.max_tokens is not None:
            body["max_completion_tokens"] = s.max_tokens
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if s.top_p is not None:
            body["top_p"] = s.top_p
        if s.stop:
            body["stop"] = list(s.stop)
        if s.tool_choice is not None:
            body["tool_choice"] = (
                s.tool_choice
                if s.tool_choice in ("auto", "required", "none")
                else {"type": "function", "function": {"name": s.tool_choice}}
            )
        if s.parallel_tool_calls is not None and request.tools:
            body["parallel_tool_calls"] = s.parallel_tool_calls
        if request.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(s.extra_body)
        return body

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        """The canonical request a body describes; unknown roles are ignored, unknown fields
        are kept as ``extra_body``."""
        if not isinstance(body, Mapping):
            raise WireFormatError(API, f"expected an object, got {type(body).__name__}")
        raw = body.get("messages")
        if not isinstance(raw, list):
            raise WireFormatError(API, "expected a list", path="messages")
        messages: list[Message] = []
        for i, m in enumerate(raw):
            if isinstance(m, Mapping):
                _parse_message(m, messages, f"messages[{i}]")
        raw_tools = body.get("tools")
        tools = tuple(
            ToolSpec(
                name=str(fn.get("name", "")),
                description=str(fn.get("description") or ""),
                parameters=params
                if isinstance(params := fn.get("parameters"), Mapping) and params
                else {"type": "object", "properties": {}},
                strict=bool(fn.get("strict", False)),
            )
            for t in (raw_tools if isinstance(raw_tools, list) else ())
            if isinstance(t, Mapping) and isinstance(fn := t.get("function"), Mapping)
        )
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        choice = body.get("tool_choice")
        if isinstance(choice, Mapping):
            fn = choice.get("function")
            choice = fn.get("name") if isinstance(fn, Mapping) else None
        parallel = body.get("parallel_tool_calls")
        return ModelRequest(
            model=str(body.get("model", "")),
            messages=tuple(messages),
            tools=tools,
            settings=ModelSettings(
                max_tokens=max_tokens if isinstance(max_tokens, int) else None,
                temperature=_number(body.get("temperature")),
                top_p=_number(body.get("top_p")),
                stop=_stops(body.get("stop")),
                tool_choice=choice if isinstance(choice, str) else None,
                parallel_tool_calls=parallel if isinstance(parallel, bool) else None,
                extra_body={k: v for k, v in body.items() if k not in _REQUEST_KEYS},
            ),
            stream=body.get("stream") is True,
        )

    # -- serving (test kit) ----------------------------------------------------------------

    def render_response(self, turn: Turn, *, stream: bool = False) -> WireResponse:
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
            message["tool_calls"] = [_render_call(c) for c in turn.tool_calls]
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


class _ChatStream:
    """Accumulates ``chat.completion.chunk`` events."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.reason: str | None = None
        self.filtered: str | None = None
        self.usage = Usage()
        self.model: str | None = None
        self.id: str | None = None
        self.error: Turn | None = None
        self.done = False

    def feed(self, event: str | None, data: str) -> str:
        if data == "[DONE]":
            self.done = True
            return ""
        try:
            chunk = json.loads(data)
        except ValueError:
            return ""
        if not isinstance(chunk, Mapping):
            return ""
        if "error" in chunk and "choices" not in chunk:
            self.error = common.openai_error_turn(API, None, chunk)
            return ""
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if isinstance(chunk.get("id"), str):
            self.id = chunk["id"]
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = _usage(chunk["usage"])
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return ""
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str):
            self.reason = choice["finish_reason"]
            if self.reason == "content_filter":
                self.filtered = common.filter_detail(choice)
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return ""
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str):
                self.thinking.append(delta[key])
        if isinstance(delta.get("refusal"), str):
            self.refusal.append(delta["refusal"])
        calls = delta.get("tool_calls")
        for i, raw in enumerate(calls if isinstance(calls, list) else ()):
            if isinstance(raw, Mapping):
                self._call_delta(raw, i)
        legacy = delta.get("function_call")
        if isinstance(legacy, Mapping):
            slot = self.calls.setdefault(-1, {"id": "call_0", "name": "", "args": []})
            slot["legacy"] = True
            self._merge_function(slot, legacy)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.text.append(content)
            return content
        return ""

    def _call_delta(self, raw: Mapping[str, Any], position: int) -> None:
        given = raw.get("index")
        index = given if isinstance(given, int) else position
        slot = self.calls.setdefault(index, {"id": None, "name": "", "args": []})
        if isinstance(raw.get("id"), str) and raw["id"]:
            slot["id"] = raw["id"]
        fn = raw.get("function")
        if isinstance(fn, Mapping):
            self._merge_function(slot, fn)
        custom = raw.get("custom")
        if isinstance(custom, Mapping):  # streamed custom call: ``input`` fragments
            slot["custom"] = True
            if isinstance(custom.get("name"), str):
                slot["name"] += custom["name"]
            if isinstance(custom.get("input"), str):
                slot["args"].append(custom["input"])

    @staticmethod
    def _merge_function(slot: dict[str, Any], fn: Mapping[str, Any]) -> None:
        if isinstance(fn.get("name"), str):
            slot["name"] += fn["name"]
        if isinstance(fn.get("arguments"), str):
            slot["args"].append(fn["arguments"])
        elif isinstance(fn.get("arguments"), Mapping):
            slot["args"].append(json.dumps(fn["arguments"]))

    def finish(self) -> Turn:
        parts: list[Part] = []
        if self.thinking:
            parts.append(ThinkingPart(text="".join(self.thinking)))
        if self.text:
            parts.append(TextPart(text="".join(self.text)))
        if self.refusal:
            parts.append(RefusalPart(text="".join(self.refusal)))
        for n, (index, slot) in enumerate(sorted(self.calls.items())):
            if not (slot["id"] or slot["name"] or slot["args"]):
                continue  # a delta that carried nothing is not a call
            details: dict[str, Any] = {}
            if slot.get("legacy"):
                details["legacy"] = True
            call_id = slot["id"]
            if not call_id:
                call_id, details["synthetic_id"] = f"call_{max(index, n)}", True
            args = "".join(slot["args"])
            parts.append(
                _custom_call(call_id, slot["name"], args, details)
                if slot.get("custom")
                else ToolCall.from_raw(
                    id=call_id,
                    name=slot["name"],
                    arguments_raw=args,
                    provider_details=details or None,
                )
            )
        if self.error is not None:
            err = self.error
            return error_turn(
                api=API,
                ending=Ending.ERROR,
                status=None,
                type_=err.error.type if err.error else None,
                message=err.detail or "stream error",
                raw_reason="error",
                parts=parts,
                usage=self.usage,
            )
        signal, detail = _signal(self.reason, ended=self.done)
        return make_turn(
            api=API,
            signal=signal,
            parts=parts,
            raw_reason=self.reason,
            detail=self.filtered or detail,
            usage=self.usage,
            model=self.model,
            response_id=self.id,
        )


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


def _render_call(call: ToolCall) -> dict[str, Any]:
    if call.provider_details and call.provider_details.get("type") == "custom":
        return {
            "id": call.id,
            "type": "custom",
            "custom": {"name": call.name, "input": call.arguments_raw},
        }
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_raw},
    }


def _render_tool(tool: ToolSpec) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": tool.name, "parameters": dict(tool.parameters)}
    if tool.description:
        fn["description"] = tool.description
    if tool.strict:
        fn["strict"] = True
    return {"type": "function", "function": fn}


def _render_message(m: Message) -> list[dict[str, Any]]:
    if m.role == "tool":
        return [
            {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
            for r in m.parts
            if isinstance(r, ToolResult)
        ]
    if m.role != "assistant":
        return [{"role": m.role, "content": m.text}]
    out: dict[str, Any] = {"role": "assistant", "content": m.text or None}
    if m.tool_calls:
        out["tool_calls"] = [_render_call(c) for c in m.tool_calls]
    elif out["content"] is None:
        out["content"] = ""
    return [out]


_REQUEST_KEYS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "max_completion_tokens",
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "stream_options",
    }
)
"""Fields `parse_request` reads into the request; any other field is ``extra_body``."""


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _stops(stop: Any) -> tuple[str, ...]:
    """``stop`` is a string or a list of strings."""
    if isinstance(stop, str):
        return (stop,)
    return tuple(x for x in stop if isinstance(x, str)) if isinstance(stop, list) else ()


def _call_name(into: list[Message], call_id: str) -> str:
    """The name of the call a tool message answers (chat tool messages carry only its id)."""
    for message in reversed(into):
        for call in message.tool_calls:
            if call.id == call_id:
                return call.name
    return ""


def _parse_message(m: Mapping[str, Any], into: list[Message], path: str) -> None:
    role = m.get("role")
    if role in ("system", "developer"):
        into.append(Message.system(_text_of(m.get("content"), f"{path}.content")))
    elif role == "user":
        into.append(Message.user(_text_of(m.get("content"), f"{path}.content")))
    elif role == "assistant":
        parts: list[Part] = []
        text = _text_of(m.get("content"), f"{path}.content")
        if text:
            parts.append(TextPart(text=text))
        calls = m.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise WireFormatError(API, "expected a list", path=f"{path}.tool_calls")
        for i, c in enumerate(calls or ()):
            parts.append(_call(c, i, f"{path}.tool_calls[{i}]"))
        if isinstance(m.get("function_call"), Mapping):
            legacy = m["function_call"]
            parts.append(_function(legacy, "call_0", {"legacy": True}, f"{path}.function_call"))
        into.append(Message(role="assistant", parts=tuple(parts)))
    elif role in ("tool", "function"):
        call_id = str(m.get("tool_call_id") or "call_0")
        result = ToolResult(
            call_id=call_id,
            name=str(m.get("name") or _call_name(into, call_id)),
            content=_text_of(m.get("content"), f"{path}.content"),
        )
        if into and into[-1].role == "tool":
            into[-1] = Message(role="tool", parts=(*into[-1].parts, result))
        else:
            into.append(Message.tool_results([result]))


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
        head = _render_call(call)
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


WIRE = OpenAIChat()
"""The instance the registry hands out."""
