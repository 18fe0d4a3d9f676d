"""Chat completion requests: canonical transcript to a ``/chat/completions`` body and back."""

from __future__ import annotations

from collections.abc import Mapping
from json.encoder import encode_basestring as _string
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import Message, Part, TextPart, ToolCall, ToolResult
from donegate.models._cache import HistoryCache, LastRendered
from donegate.models._encode import encode_body
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.openai_chat._parse import API, function_call, text_of, tool_call


def render_request(request: ModelRequest) -> dict[str, Any]:
    """The JSON body for a canonical request.

    Messages render independently of one another, so each transcript's rendering is kept and
    only the messages added since the last request are rendered (`HistoryCache`); the message
    and tool objects in the body are shared with later requests, the lists are the caller's.
    """
    tools = _TOOLS.render(request.tools) if request.tools else None
    return _body(request, request.model, _HISTORY.render(request.messages), tools)


def encode_request(request: ModelRequest, *, model: str | None = None) -> bytes:
    """The body `render_request` makes, as the bytes an SDK would send (`model` overrides).

    The history's and the tools' JSON text is kept between requests, so a long conversation's
    request encodes only its new messages.
    """
    tools = _TOOLS.encode(request.tools) if request.tools else None
    messages = _HISTORY.encode(request.messages)
    s = request.settings
    if (  # no setting set (most runs): the body is these three fields, written at once
        s.max_tokens is None
        and s.temperature is None
        and s.top_p is None
        and not s.stop
        and s.tool_choice is None
        and s.parallel_tool_calls is None
        and not s.extra_body
        and not request.stream
    ):
        head = b'{"model":' + _string(model or request.model).encode() + b',"messages":'
        if tools is None:
            return head + messages.text + b"}"
        return head + messages.text + b',"tools":' + tools.text + b"}"
    return encode_body(_body(request, model or request.model, messages, tools))


def _body(request: ModelRequest, model: str, messages: Any, tools: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools is not None:
        body["tools"] = tools
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


def parse_request(body: Mapping[str, Any]) -> ModelRequest:
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


def render_call(call: ToolCall) -> dict[str, Any]:
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
        out["tool_calls"] = [render_call(c) for c in m.tool_calls]
    elif out["content"] is None:
        out["content"] = ""
    return [out]


_HISTORY = HistoryCache(_render_message)
"""Rendered transcripts of recent runs (see `HistoryCache`)."""
_TOOLS: LastRendered[tuple[ToolSpec, ...]] = LastRendered(
    lambda tools: [_render_tool(t) for t in tools]
)
"""The last tool list rendered: a run sends the same tuple of specs every turn."""


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
        into.append(Message.system(text_of(m.get("content"), f"{path}.content")))
    elif role == "user":
        into.append(Message.user(text_of(m.get("content"), f"{path}.content")))
    elif role == "assistant":
        parts: list[Part] = []
        text = text_of(m.get("content"), f"{path}.content")
        if text:
            parts.append(TextPart(text=text))
        calls = m.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise WireFormatError(API, "expected a list", path=f"{path}.tool_calls")
        for i, c in enumerate(calls or ()):
            parts.append(tool_call(c, i, f"{path}.tool_calls"))
        if isinstance(m.get("function_call"), Mapping):
            legacy = m["function_call"]
            parts.append(function_call(legacy, "call_0", {"legacy": True}, f"{path}.function_call"))
        into.append(Message(role="assistant", parts=tuple(parts)))
    elif role in ("tool", "function"):
        call_id = str(m.get("tool_call_id") or "call_0")
        result = ToolResult(
            call_id=call_id,
            name=str(m.get("name") or _call_name(into, call_id)),
            content=text_of(m.get("content"), f"{path}.content"),
        )
        if into and into[-1].role == "tool":
            into[-1] = Message(role="tool", parts=(*into[-1].parts, result))
        else:
            into.append(Message.tool_results([result]))
