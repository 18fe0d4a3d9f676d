"""Mistral chat requests: canonical transcript to a chat completions body and back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.messages import (
    MediaPart,
    Message,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from donegate.models import _request_body
from donegate.models._function_calls import parse_tool_spec, render_tool_calls, render_tool_spec
from donegate.models._values import data_url, opt_str
from donegate.models.base import (
    ModelRequest,
    ModelSettings,
)
from donegate.models.mistral._parse import fail, message_parts, parse_content

_REQUEST_KEYS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "parallel_tool_calls",
        "stream",
    }
)
"""Request fields render_request writes; any other field is ``extra_body``."""

_SAMPLING = _request_body.SamplingNames()


def _render_tool_choice(choice: str | None) -> Any:
    if choice is None:
        return None
    if choice in ("auto", "none"):
        return choice
    if choice == "required":
        return "any"  # Mistral's name for "call some tool"
    return {"type": "function", "function": {"name": choice}}


def _render_message(message: Message) -> list[dict[str, Any]]:
    """One canonical message as Mistral messages (tool results become one message each)."""
    if message.role == "tool":
        return [
            {"role": "tool", "tool_call_id": r.call_id, "name": r.name, "content": r.content}
            for r in message.results
        ]
    if message.role in ("system", "user"):
        urls = [data_url(p) for p in message.parts if isinstance(p, MediaPart)]
        if not any(urls):
            return [{"role": message.role, "content": message.text}]
        content: list[dict[str, Any]] = [{"type": "text", "text": message.text}]
        content.extend({"type": "image_url", "image_url": url} for url in urls if url)
        return [{"role": message.role, "content": content}]
    chunks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart | RefusalPart) and part.text:
            chunks.append({"type": "text", "text": part.text})
        elif isinstance(part, ThinkingPart):
            chunks.append({"type": "thinking", "thinking": [{"type": "text", "text": part.text}]})
    out: dict[str, Any] = {"role": "assistant"}
    if any(c["type"] == "thinking" for c in chunks):
        out["content"] = chunks
    elif chunks:
        out["content"] = "".join(c["text"] for c in chunks)
    if message.tool_calls:
        out["tool_calls"] = render_tool_calls(message.tool_calls)
    return [out]


def _request_message(raw: Any, path: str, names: dict[str, str]) -> Message | None:
    if not isinstance(raw, dict):
        raise fail(path, f"expected an object, got {type(raw).__name__}")
    role = raw.get("role")
    if role == "developer":
        role = "system"
    if role == "tool":
        call_id = opt_str(raw.get("tool_call_id")) or ""
        parts = parse_content(raw.get("content"), f"{path}.content")
        name = opt_str(raw.get("name")) or names.get(call_id, "")
        text = "".join(p.text for p in parts if isinstance(p, TextPart))
        return Message.tool_results([ToolResult(call_id=call_id, name=name, content=text)])
    if role not in ("system", "user", "assistant"):
        return None  # a role Mistral does not have: skipped
    parts = (
        message_parts(raw, path)
        if role == "assistant"
        else parse_content(raw.get("content"), f"{path}.content")
    )
    for part in parts:
        if isinstance(part, ToolCall):
            names[part.id] = part.name
    return Message(role=role, parts=tuple(parts))


def _parse_tool_choice(raw: Any) -> str | None:
    if raw in ("any", "required"):
        return "required"
    if isinstance(raw, str):
        return raw
    function = raw.get("function") if isinstance(raw, dict) else None
    return opt_str(function.get("name")) if isinstance(function, dict) else None


def render_request(request: ModelRequest) -> dict[str, Any]:
    """The ``/v1/chat/completions`` body; Mistral rejects unknown fields, so only set ones."""
    messages = [m for message in request.messages for m in _render_message(message)]
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    settings = request.settings
    if request.tools:
        body["tools"] = [render_tool_spec(t, strict_field=True) for t in request.tools]
    choice = _render_tool_choice(settings.tool_choice)
    if choice is not None:
        body["tool_choice"] = choice
    if settings.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = settings.parallel_tool_calls
    body.update(_request_body.render_sampling(settings, _SAMPLING))
    if request.stream:
        body["stream"] = True
    body.update(settings.extra_body)
    return body


def parse_request(body: Mapping[str, Any]) -> ModelRequest:
    """The canonical request a chat completions body describes (inverse of render)."""
    messages = _request_body.parse_messages(body.get("messages", []), _request_message, fail)
    raw_tools = body.get("tools")
    tools = [parse_tool_spec(t) for t in (raw_tools if isinstance(raw_tools, list) else ())]
    parallel = body.get("parallel_tool_calls")
    settings = ModelSettings(
        **_request_body.parse_sampling(body, _SAMPLING, lone_stop=True),
        tool_choice=_parse_tool_choice(body.get("tool_choice")),
        parallel_tool_calls=parallel if isinstance(parallel, bool) else None,
        extra_body={k: v for k, v in body.items() if k not in _REQUEST_KEYS},
    )
    return _request_body.finish_request(body, messages=messages, tools=tools, settings=settings)
