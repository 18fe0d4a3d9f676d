"""Cohere v2 chat requests: canonical transcript to a ``/v2/chat`` body and back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from donegate.messages import (
    MediaPart,
    Message,
    Part,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from donegate.models import _request_body
from donegate.models._function_calls import parse_tool_spec, render_tool_calls, render_tool_spec
from donegate.models._values import data_url, opt_str, url_media
from donegate.models.base import ModelRequest, ModelSettings
from donegate.models.cohere._parse import TOOL_PLAN, fail, message_parts, parse_content

_REQUEST_KEYS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "strict_tools",
        "tool_choice",
        "max_tokens",
        "temperature",
        "p",
        "stop_sequences",
        "stream",
    }
)
"""Request fields render_request writes; any other field is ``extra_body``."""

_SAMPLING = _request_body.SamplingNames(top_p="p", stop="stop_sequences")


def _render_message(message: Message) -> list[dict[str, Any]]:
    """One canonical message as v2 messages; each tool result is its own ``tool`` message.

    Cohere has no error flag on a tool result, so `ToolResult.is_error` is not sent.
    """
    if message.role == "tool":
        return [
            {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
            for r in message.results
        ]
    if message.role in ("system", "user"):
        urls = [data_url(p) for p in message.parts if isinstance(p, MediaPart)]
        if not any(urls):
            return [{"role": message.role, "content": message.text}]
        content: list[dict[str, Any]] = [{"type": "text", "text": message.text}]
        content.extend({"type": "image_url", "image_url": {"url": u}} for u in urls if u)
        return [{"role": message.role, "content": content}]
    out: dict[str, Any] = {"role": "assistant"}
    items: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ThinkingPart):
            if part.provider_details == TOOL_PLAN:
                out["tool_plan"] = out.get("tool_plan", "") + part.text
            else:
                items.append({"type": "thinking", "thinking": part.text})
        elif isinstance(part, TextPart | RefusalPart) and part.text:
            items.append({"type": "text", "text": part.text})
        elif isinstance(part, ServerToolPart) and "type" in part.data:
            items.append(dict(part.data))
    if items:
        out["content"] = items
    if message.tool_calls:
        out["tool_calls"] = render_tool_calls(message.tool_calls)
    return [out]


def _tool_text(content: Any) -> str:
    """A tool message's content: a string, or ``text`` / ``document`` items."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for item in content if isinstance(content, list) else ():
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str):
            texts.append(item["text"])
        document = item.get("document")
        data = document.get("data") if isinstance(document, dict) else None
        if isinstance(data, str):
            texts.append(data)
        elif data is not None:
            texts.append(json.dumps(data))
    return "".join(texts)


def _user_parts(content: Any, path: str) -> list[Part]:
    if isinstance(content, list):
        media: list[Part] = []
        rest: list[Any] = []
        for item in content:
            image = item.get("image_url") if isinstance(item, dict) else None
            url = image.get("url") if isinstance(image, dict) else image
            if isinstance(url, str):
                media.append(url_media(url))
            else:
                rest.append(item)
        return parse_content(rest, path) + media
    return parse_content(content, path)


def _request_message(raw: Any, path: str, names: dict[str, str]) -> Message | None:
    if not isinstance(raw, dict):
        raise fail(path, f"expected an object, got {type(raw).__name__}")
    role = raw.get("role")
    if role == "developer":
        role = "system"
    if role == "tool":
        call_id = opt_str(raw.get("tool_call_id")) or ""
        result = ToolResult(
            call_id=call_id, name=names.get(call_id, ""), content=_tool_text(raw.get("content"))
        )
        return Message.tool_results([result])
    if role == "assistant":
        parts = message_parts(raw, path)
        for part in parts:
            if isinstance(part, ToolCall):
                names[part.id] = part.name
        return Message(role="assistant", parts=tuple(parts))
    if role in ("system", "user"):
        return Message(role=role, parts=tuple(_user_parts(raw.get("content"), f"{path}.content")))
    return None  # a role Cohere does not have: skipped


def render_request(request: ModelRequest) -> dict[str, Any]:
    """The ``/v2/chat`` body.

    Cohere's ``tool_choice`` is only ``REQUIRED`` or ``NONE``: ``auto`` is the default (not
    written) and a tool name becomes ``REQUIRED`` with only that tool offered. ``strict_tools``
    is one switch for all tools, set when any `ToolSpec` asks for strictness.
    """
    messages = [m for message in request.messages for m in _render_message(message)]
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    settings = request.settings
    tools = request.tools
    choice = settings.tool_choice
    if choice not in (None, "auto", "none", "required"):
        tools = tuple(t for t in tools if t.name == choice) or tools
        choice = "required"
    if tools:
        body["tools"] = [render_tool_spec(t, strict_field=False) for t in tools]
        if any(t.strict for t in tools):
            body["strict_tools"] = True
    if choice in ("required", "none"):
        body["tool_choice"] = choice.upper()
    body.update(_request_body.render_sampling(settings, _SAMPLING))
    if request.stream:
        body["stream"] = True
    body.update(settings.extra_body)
    return body


def parse_request(body: Mapping[str, Any]) -> ModelRequest:
    """The canonical request a ``/v2/chat`` body describes (inverse of `render_request`)."""
    messages = _request_body.parse_messages(body.get("messages", []), _request_message, fail)
    strict = body.get("strict_tools") is True
    raw_tools = body.get("tools")
    tools = [
        parse_tool_spec(t, strict=strict)
        for t in (raw_tools if isinstance(raw_tools, list) else ())
    ]
    choice = body.get("tool_choice")
    settings = ModelSettings(
        **_request_body.parse_sampling(body, _SAMPLING),
        tool_choice=choice.lower() if isinstance(choice, str) else None,
        extra_body={k: v for k, v in body.items() if k not in _REQUEST_KEYS},
    )
    return _request_body.finish_request(body, messages=messages, tools=tools, settings=settings)
