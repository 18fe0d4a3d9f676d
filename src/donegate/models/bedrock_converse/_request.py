"""Converse requests: canonical transcript to a Converse body and back."""

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
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.bedrock_converse._parse import as_str, fail, parse_block

_REQUEST_KEYS = frozenset({"modelId", "messages", "system", "toolConfig", "inferenceConfig"})
"""Top-level request fields render_request writes; any other field is ``extra_body``."""

_SAMPLING = _request_body.SamplingNames(max_tokens="maxTokens", top_p="topP", stop="stopSequences")
"""``inferenceConfig``'s names for the sampling settings."""


def _render_part(part: Part) -> dict[str, Any] | None:
    """One canonical part as a Converse content block; None for what Bedrock cannot take back."""
    if isinstance(part, TextPart | RefusalPart):
        return {"text": part.text} if part.text else None  # Bedrock rejects blank text blocks
    if isinstance(part, ToolCall):
        value: Any = dict(part.arguments) if part.arguments is not None else part.arguments_raw
        return {"toolUse": {"toolUseId": part.id, "name": part.name, "input": value}}
    if isinstance(part, ToolResult):
        result: dict[str, Any] = {
            "toolUseId": part.call_id,
            "content": [{"text": part.content}] if part.content else [],
        }
        if part.is_error:
            result["status"] = "error"
        return {"toolResult": result}
    if isinstance(part, ThinkingPart):
        # Bedrock validates reasoning it gets back: only signed or redacted blocks are accepted.
        if part.redacted and part.signature:
            return {"reasoningContent": {"redactedContent": part.signature}}
        if part.signature:
            return {
                "reasoningContent": {
                    "reasoningText": {"text": part.text, "signature": part.signature}
                }
            }
        return None
    if isinstance(part, MediaPart):
        if not part.mime_type.startswith("image/"):
            return None
        fmt = part.mime_type.partition("/")[2]
        if part.data is not None:
            return {"image": {"format": fmt, "source": {"bytes": part.data}}}
        if part.uri is not None and part.uri.startswith("s3://"):
            return {"image": {"format": fmt, "source": {"s3Location": {"uri": part.uri}}}}
        return None
    if isinstance(part, ServerToolPart) and len(part.data) == 1:
        return dict(part.data)
    return None


def _tool_config(request: ModelRequest) -> dict[str, Any] | None:
    choice = request.settings.tool_choice
    if not request.tools:
        return None
    if choice == "none" and not any(
        isinstance(p, ToolCall | ToolResult) for m in request.messages for p in m.parts
    ):
        return None  # Converse has no "none": offer no tools (kept when the history uses them)
    tools: list[dict[str, Any]] = []
    for tool in request.tools:
        spec: dict[str, Any] = {"name": tool.name, "inputSchema": {"json": dict(tool.parameters)}}
        if tool.description:
            spec["description"] = tool.description
        tools.append({"toolSpec": spec})
    config: dict[str, Any] = {"tools": tools}
    if choice == "auto":
        config["toolChoice"] = {"auto": {}}
    elif choice == "required":
        config["toolChoice"] = {"any": {}}
    elif choice is not None and choice != "none":
        config["toolChoice"] = {"tool": {"name": choice}}
    return config


def _tool_result(raw: Any, names: Mapping[str, str], path: str) -> ToolResult:
    if not isinstance(raw, dict):
        raise fail(path, f"expected an object, got {type(raw).__name__}")
    call_id = as_str(raw.get("toolUseId"), f"{path}.toolUseId")
    texts: list[str] = []
    content = raw.get("content", [])
    for item in content if isinstance(content, list) else ():
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            texts.append(item["text"])
        elif isinstance(item, dict) and "json" in item:
            texts.append(json.dumps(item["json"]))
    return ToolResult(
        call_id=call_id,
        name=names.get(call_id, ""),
        content="".join(texts),
        is_error=raw.get("status") == "error",
    )


def _request_messages(raw: Any) -> list[Message]:
    if not isinstance(raw, list):
        raise fail("messages", f"expected a list, got {type(raw).__name__}")
    names: dict[str, str] = {}
    out: list[Message] = []

    def add(role: Any, part: Part) -> None:
        if out and out[-1].role == role:
            out[-1] = Message(role=role, parts=(*out[-1].parts, part))
        else:
            out.append(Message(role=role, parts=(part,)))

    for i, message in enumerate(raw):
        path = f"messages[{i}]"
        if not isinstance(message, dict):
            raise fail(path, f"expected an object, got {type(message).__name__}")
        role = message.get("role")
        if role not in ("user", "assistant", "system"):
            continue  # tolerate roles Converse does not have
        content = message.get("content")
        if not isinstance(content, list):
            raise fail(f"{path}.content", "expected a list")
        if role == "assistant" and out and out[-1].role == "assistant":
            out.append(Message(role="assistant", parts=()))  # keep two turns apart
        for j, block in enumerate(content):
            if isinstance(block, dict) and "toolResult" in block:
                add("tool", _tool_result(block["toolResult"], names, f"{path}.content[{j}]"))
                continue
            part = parse_block(block, f"{path}.content[{j}]")
            if part is None:
                continue
            if isinstance(part, ToolCall):
                names[part.id] = part.name
            add("assistant" if role == "assistant" else role, part)
    return [m for m in out if m.parts]


def _request_tools(raw: Any) -> tuple[tuple[ToolSpec, ...], str | None]:
    if not isinstance(raw, dict):
        return (), None
    tools: list[ToolSpec] = []
    listed = raw.get("tools")
    for item in listed if isinstance(listed, list) else ():
        spec = item.get("toolSpec") if isinstance(item, dict) else None
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            continue
        schema = spec.get("inputSchema")
        params = schema.get("json") if isinstance(schema, dict) else None
        description = spec.get("description")
        tools.append(
            ToolSpec(
                name=spec["name"],
                description=description if isinstance(description, str) else "",
                parameters=params if isinstance(params, dict) else {"type": "object"},
            )
        )
    choice: str | None = None
    raw_choice = raw.get("toolChoice")
    if isinstance(raw_choice, dict):
        if "auto" in raw_choice:
            choice = "auto"
        elif "any" in raw_choice:
            choice = "required"
        else:
            named = raw_choice.get("tool")
            if isinstance(named, dict) and isinstance(named.get("name"), str):
                choice = named["name"]
    return tuple(tools), choice


def render_request(request: ModelRequest) -> dict[str, Any]:
    """The Converse request in its JSON form, plus ``modelId`` (a URL path parameter).

    With ``modelId`` in, a text-and-tools body doubles as boto3 ``converse(**body)`` keywords
    (image bytes stay base64, as on the JSON wire). Converse wants user and assistant turns
    alternating, so tool results and a following user message share one ``user`` message.
    Streaming is a separate operation (ConverseStream), not a body field, so ``request.stream``
    is not written. Converse has no ``tool_choice: none``: the tools are left out instead, unless
    the transcript holds tool blocks (Converse then requires ``toolConfig``).
    """
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role == "system":
            system.extend({"text": p.text} for p in message.parts if isinstance(p, TextPart))
            continue
        role = "assistant" if message.role == "assistant" else "user"
        content = [b for b in map(_render_part, message.parts) if b is not None]
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(content)
        else:
            messages.append({"role": role, "content": content})
    body: dict[str, Any] = {"modelId": request.model, "messages": messages}
    if system:
        body["system"] = system
    tool_config = _tool_config(request)
    if tool_config is not None:
        body["toolConfig"] = tool_config
    inference = _request_body.render_sampling(request.settings, _SAMPLING)
    if inference:
        body["inferenceConfig"] = inference
    body.update(request.settings.extra_body)
    return body


def parse_request(body: Mapping[str, Any]) -> ModelRequest:
    """The canonical request a Converse body describes (inverse of `render_request`)."""
    raw_system = body.get("system")
    system = [
        TextPart(text=b["text"])
        for b in (raw_system if isinstance(raw_system, list) else ())
        if isinstance(b, dict) and isinstance(b.get("text"), str)
    ]
    messages = _request_messages(body.get("messages", []))
    if system:
        messages.insert(0, Message(role="system", parts=tuple(system)))
    tools, choice = _request_tools(body.get("toolConfig"))
    raw_config = body.get("inferenceConfig")
    config: dict[str, Any] = raw_config if isinstance(raw_config, dict) else {}
    settings = ModelSettings(
        **_request_body.parse_sampling(config, _SAMPLING),
        tool_choice=choice,
        extra_body={k: v for k, v in body.items() if k not in _REQUEST_KEYS and k != "stream"},
    )
    return _request_body.finish_request(
        body, model_key="modelId", messages=messages, tools=tools, settings=settings
    )
