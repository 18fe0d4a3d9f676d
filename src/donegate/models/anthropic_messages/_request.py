"""Canonical requests to and from Messages API bodies.

The API wants ``system`` apart from ``messages``, strict user/assistant alternation (consecutive
same-role messages are merged), tool results as ``tool_result`` blocks inside a user message,
thinking blocks sent back verbatim with their signatures, and a ``max_tokens`` on every request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import (
    MediaPart,
    Message,
    Part,
    Role,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from donegate.models.anthropic_messages._parse import API, TEXT_KEYS, extras, parse_block
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec

__all__ = ["DEFAULT_MAX_TOKENS", "parse_request", "render_request"]

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` is required by the API; this is sent when the settings leave it unset."""

_KNOWN = frozenset(
    (
        "model",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "max_tokens",
        "temperature",
        "top_p",
        "stop_sequences",
        "stream",
    )
)
_CHOICES = {"auto": "auto", "required": "any", "none": "none"}


# -- rendering -----------------------------------------------------------------------------


def _text_block(part: TextPart) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": part.text}
    if part.provider_details:
        block.update((k, v) for k, v in part.provider_details.items() if k not in TEXT_KEYS)
    return block


def _media_block(part: MediaPart) -> dict[str, Any]:
    kind = "image" if part.mime_type.startswith("image/") else "document"
    if part.data is not None:
        source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
    else:
        source = {"type": "url", "url": part.uri or ""}
    return {"type": kind, "source": source}


def _assistant_block(part: Part) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return _text_block(part)
    if isinstance(part, ThinkingPart):
        if part.signature is None:  # the API rejects unsigned thinking (another provider's)
            return None
        block: dict[str, Any]
        if part.redacted:
            block = {"type": "redacted_thinking", "data": part.signature}
        else:
            block = {"type": "thinking", "thinking": part.text, "signature": part.signature}
        block.update(part.provider_details or {})
        return block
    if isinstance(part, ToolCall):
        block = {
            "type": "tool_use",
            "id": part.id,
            "name": part.name,
            "input": dict(part.arguments) if part.arguments is not None else {},
        }
        block.update(part.provider_details or {})
        return block
    if isinstance(part, ServerToolPart):
        return dict(part.data)
    return None  # refusals and media are not assistant input blocks


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return [b for b in map(_assistant_block, message.parts) if b is not None]
    out: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResult):
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part.call_id,
                "content": part.content,
            }
            if part.is_error:
                result["is_error"] = True
            out.append(result)
        elif isinstance(part, TextPart):
            out.append(_text_block(part))
        elif isinstance(part, MediaPart):
            out.append(_media_block(part))
    return out


def _system(messages: list[Message]) -> str | list[dict[str, Any]] | None:
    parts = [p for m in messages for p in m.parts if isinstance(p, TextPart)]
    if not parts:
        return None
    if len(parts) == 1 and not parts[0].provider_details:
        return parts[0].text
    return [_text_block(p) for p in parts]


def _tool(spec: ToolSpec) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": spec.name}
    if spec.description:
        tool["description"] = spec.description
    tool["input_schema"] = dict(spec.parameters)
    if spec.strict:
        tool["strict"] = True
    return tool


def render_request(request: ModelRequest) -> dict[str, Any]:
    """The Messages API body for `request`."""
    body: dict[str, Any] = {"model": request.model}
    s = request.settings
    body["max_tokens"] = s.max_tokens if s.max_tokens is not None else DEFAULT_MAX_TOKENS
    system = _system([m for m in request.messages if m.role == "system"])
    if system is not None:
        body["system"] = system
    turns: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        content = turn["content"]
        if turn["role"] == "user" and len(content) == 1 and content[0].keys() == TEXT_KEYS:
            turn["content"] = content[0]["text"]
    body["messages"] = turns
    if request.tools:
        body["tools"] = [_tool(t) for t in request.tools]
    choice: dict[str, Any] | None = None
    if s.tool_choice is not None:
        kind = _CHOICES.get(s.tool_choice)
        choice = {"type": kind} if kind else {"type": "tool", "name": s.tool_choice}
    if s.parallel_tool_calls is False and request.tools:
        choice = choice or {"type": "auto"}
        if choice["type"] != "none":
            choice["disable_parallel_tool_use"] = True
    if choice is not None:
        body["tool_choice"] = choice
    if s.stop:
        body["stop_sequences"] = list(s.stop)
    if s.temperature is not None:
        body["temperature"] = s.temperature
    if s.top_p is not None:
        body["top_p"] = s.top_p
    if request.stream:
        body["stream"] = True
    body.update(s.extra_body)
    return body


# -- parsing ---------------------------------------------------------------------------------


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b["text"] for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)
        )
    return ""


def _user_part(block: Mapping[str, Any], names: Mapping[str, str]) -> Part | None:
    kind = block.get("type")
    if kind == "tool_result":
        call_id = str(block.get("tool_use_id") or "")
        return ToolResult(
            call_id=call_id,
            name=names.get(call_id, ""),
            content=_result_text(block.get("content")),
            is_error=block.get("is_error") is True,
        )
    if kind == "text" and isinstance(block.get("text"), str):
        return TextPart(text=block["text"], provider_details=extras(block, TEXT_KEYS))
    source = block.get("source")
    if kind in ("image", "document") and isinstance(source, Mapping):
        if source.get("type") == "base64":
            return MediaPart(
                mime_type=str(source.get("media_type") or ""), data=str(source.get("data") or "")
            )
        if source.get("type") == "url":
            return MediaPart(
                mime_type="image/*" if kind == "image" else "application/pdf",
                uri=str(source.get("url") or ""),
            )
    return None


def _user_messages(content: Any, names: Mapping[str, str]) -> list[Message]:
    """A user turn: runs of tool results become ``tool`` messages, the rest ``user`` ones."""
    if isinstance(content, str):
        return [Message.user(content)]
    out: list[Message] = []
    for block in content if isinstance(content, list) else ():
        part = _user_part(block, names) if isinstance(block, Mapping) else None
        if part is None:
            continue
        role: Role = "tool" if isinstance(part, ToolResult) else "user"
        if out and out[-1].role == role:
            out[-1] = Message(role=role, parts=(*out[-1].parts, part))
        else:
            out.append(Message(role=role, parts=(part,)))
    return out


def _system_messages(system: Any) -> list[Message]:
    if isinstance(system, str):
        return [Message.system(system)] if system else []
    if isinstance(system, list):
        parts = tuple(
            TextPart(text=b["text"], provider_details=extras(b, TEXT_KEYS))
            for b in system
            if isinstance(b, Mapping) and isinstance(b.get("text"), str)
        )
        return [Message(role="system", parts=parts)] if parts else []
    return []


def _assistant(content: Any, path: str, updates: bool, names: dict[str, str]) -> Message:
    if isinstance(content, str):
        return Message(role="assistant", parts=(TextPart(text=content),) if content else ())
    parts: list[Part] = []
    for i, block in enumerate(content if isinstance(content, list) else ()):
        try:
            part = parse_block(block, f"{path}.content[{i}]", updates=updates)
        except WireFormatError:
            continue
        if isinstance(part, ToolCall):
            names[part.id] = part.name
        parts.append(part)
    return Message(role="assistant", parts=tuple(parts))


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    """Client tools; server tools (``{"type": "web_search_20250305", ...}``) are not ToolSpecs."""
    return tuple(
        ToolSpec(
            name=t["name"],
            description=str(t.get("description") or ""),
            parameters=t.get("input_schema") or {"type": "object", "properties": {}},
            strict=t.get("strict") is True,
        )
        for t in (raw if isinstance(raw, list) else ())
        if isinstance(t, Mapping)
        and isinstance(t.get("name"), str)
        and t.get("type") in (None, "custom")
    )


def _settings(body: Mapping[str, Any]) -> ModelSettings:
    choice = body.get("tool_choice")
    tool_choice: str | None = None
    parallel: bool | None = None
    if isinstance(choice, Mapping):
        kind = choice.get("type")
        tool_choice = {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))
        if kind == "tool" and isinstance(choice.get("name"), str):
            tool_choice = choice["name"]
        if choice.get("disable_parallel_tool_use") is True:
            parallel = False
            if kind == "auto" and "name" not in choice and len(choice) == 2:
                tool_choice = None  # rendered only to carry the switch
    stop = body.get("stop_sequences")
    max_tokens = body.get("max_tokens")
    temperature, top_p = body.get("temperature"), body.get("top_p")
    return ModelSettings(
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
        top_p=float(top_p) if isinstance(top_p, int | float) else None,
        stop=tuple(x for x in stop if isinstance(x, str)) if isinstance(stop, list) else (),
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        extra_body={k: v for k, v in body.items() if k not in _KNOWN},
    )


def parse_request(body: Mapping[str, Any]) -> ModelRequest:
    """The canonical request a Messages body describes (tolerates unknown roles and fields)."""
    if not isinstance(body, Mapping):
        raise WireFormatError(API, f"expected an object, got {type(body).__name__}")
    raw = body.get("messages")
    if not isinstance(raw, list):
        raise WireFormatError(API, "expected a list", path="messages")
    thinking = body.get("thinking")
    updates = isinstance(thinking, Mapping) and thinking.get("display") == "updates"
    messages = _system_messages(body.get("system"))
    names: dict[str, str] = {}
    for i, m in enumerate(raw):
        if not isinstance(m, Mapping):
            continue
        role, content = m.get("role"), m.get("content")
        if role == "assistant":
            messages.append(_assistant(content, f"messages[{i}]", updates, names))
        elif role in ("system", "developer"):
            messages.extend(_system_messages(content))
        else:
            messages.extend(_user_messages(content, names))
    return ModelRequest(
        model=str(body.get("model") or ""),
        messages=tuple(messages),
        tools=_tools(body.get("tools")),
        settings=_settings(body),
        stream=body.get("stream") is True,
    )
