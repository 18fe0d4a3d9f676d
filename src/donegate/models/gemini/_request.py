"""``GenerateContentRequest`` bodies: canonical request to JSON and back.

The model name and streaming live in the URL (``models/{model}:streamGenerateContent``), not in
the body, so neither is rendered; `parse_request` reads a ``model`` key if the caller (the
emulator, from the URL) added one. Tool results go back as ``functionResponse`` parts of a user
turn, ``{"output": ...}`` or ``{"error": ...}`` as Google documents; their ``id`` is sent only
when the call had a real one, and results without an id are paired with calls by name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from donegate.errors import WireFormatError
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
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.gemini._parse import API, parse_part

__all__ = ["merge", "parse_request", "render_part", "render_request"]

_EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}
_MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
_CHOICES = {v: k for k, v in _MODES.items()}
_GENERATION = {
    "maxOutputTokens": "max_tokens",
    "temperature": "temperature",
    "topP": "top_p",
    "stopSequences": "stop",
}


def merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Merge `extra` into `base`: objects recursively, ``tools`` lists appended, else replaced."""
    for key, value in extra.items():
        old = base.get(key)
        if isinstance(old, dict) and isinstance(value, Mapping):
            merge(old, value)
        elif key == "tools" and isinstance(old, list) and isinstance(value, list):
            base[key] = old + value
        else:
            base[key] = value
    return base


def render_part(part: Part) -> dict[str, Any] | None:
    """One part of a ``contents`` turn (a response's parts are the same shape)."""
    if isinstance(part, TextPart):
        out: dict[str, Any] = {"text": part.text}
        sig = part.provider_details.get("thoughtSignature") if part.provider_details else None
    elif isinstance(part, ThinkingPart):
        out, sig = {"text": part.text, "thought": True}, part.signature
    elif isinstance(part, ToolCall):
        call: dict[str, Any] = {"name": part.name, "args": dict(part.arguments or {})}
        details = part.provider_details or {}
        if not details.get("synthetic_id"):
            call["id"] = part.id
        out, sig = {"functionCall": call}, details.get("thoughtSignature")
    elif isinstance(part, MediaPart):
        if part.uri is not None:
            return {"fileData": {"mimeType": part.mime_type, "fileUri": part.uri}}
        return {"inlineData": {"mimeType": part.mime_type, "data": part.data or ""}}
    elif isinstance(part, ServerToolPart):
        # Only Gemini's own parts ({"executableCode": ...}) can go back to Gemini.
        return dict(part.data) if part.name in part.data else None
    elif isinstance(part, RefusalPart):
        return {"text": part.text}
    else:
        return None
    if sig:
        out["thoughtSignature"] = sig
    return out


def _result(result: ToolResult, calls: Mapping[str, ToolCall]) -> dict[str, Any]:
    response = {"error" if result.is_error else "output": result.content}
    fr: dict[str, Any] = {"name": result.name, "response": response}
    call = calls.get(result.call_id)
    if call is None or not (call.provider_details or {}).get("synthetic_id"):
        fr["id"] = result.call_id
    return {"functionResponse": fr}


def _render_tool(tool: ToolSpec) -> dict[str, Any]:
    decl: dict[str, Any] = {"name": tool.name}
    if tool.description:
        decl["description"] = tool.description
    if dict(tool.parameters) != _EMPTY_SCHEMA:
        # Full JSON Schema; the older ``parameters`` field takes only an OpenAPI subset.
        decl["parametersJsonSchema"] = dict(tool.parameters)
    return decl


def render_request(request: ModelRequest) -> dict[str, Any]:
    """The body for ``models/{model}:generateContent`` (or ``:streamGenerateContent``)."""
    contents: list[dict[str, Any]] = []
    system: list[dict[str, Any]] = []
    calls: dict[str, ToolCall] = {}
    answers: list[dict[str, Any]] | None = None  # the parts of the tool turn just rendered
    for m in request.messages:
        if m.role == "system":
            system.append({"text": m.text})
            continue
        parts: list[dict[str, Any]] = []
        for p in m.parts:
            if isinstance(p, ToolResult):
                parts.append(_result(p, calls))
                continue
            if isinstance(p, ToolCall):
                calls[p.id] = p
            rendered = render_part(p)
            if rendered is not None:
                parts.append(rendered)
        if m.role == "tool" and answers is not None:
            answers.extend(parts)  # one user turn answers every call of the model turn
            continue
        answers = parts if m.role == "tool" else None
        contents.append({"role": "model" if m.role == "assistant" else "user", "parts": parts})
    body: dict[str, Any] = {"contents": contents}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [_render_tool(t) for t in request.tools]}]
    s = request.settings
    if s.tool_choice is not None:
        mode = _MODES.get(s.tool_choice)
        config: dict[str, Any] = {"mode": mode or "ANY"}
        if mode is None:
            config["allowedFunctionNames"] = [s.tool_choice]
        body["toolConfig"] = {"functionCallingConfig": config}
    if system:
        body["systemInstruction"] = {"parts": system}
    generation: dict[str, Any] = {}
    if s.max_tokens is not None:
        generation["maxOutputTokens"] = s.max_tokens
    if s.temperature is not None:
        generation["temperature"] = s.temperature
    if s.top_p is not None:
        generation["topP"] = s.top_p
    if s.stop:
        generation["stopSequences"] = list(s.stop)
    if generation:
        body["generationConfig"] = generation
    return merge(body, s.extra_body)


# -- parsing ---------------------------------------------------------------------------------

_KNOWN = frozenset(
    {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "model"}
)


def _parts(content: Mapping[str, Any], path: str) -> list[Any]:
    raw = content.get("parts")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise WireFormatError(API, "expected a list", path=f"{path}.parts")
    return raw


def _parse_result(raw: Any, pending: list[ToolCall], index: int, path: str) -> ToolResult:
    """A ``functionResponse``: paired with a call by id, else by name, else by position."""
    if not isinstance(raw, Mapping):
        raise WireFormatError(API, "expected an object", path=path)
    name = raw.get("name")
    name = name if isinstance(name, str) else ""
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = None
    match = next((c for c in pending if (c.id == call_id if call_id else c.name == name)), None)
    if match is not None:
        pending.remove(match)
    if call_id is None:
        call_id = match.id if match is not None else f"call_{index}"
    response = raw.get("response")
    if isinstance(response, Mapping) and len(response) == 1:
        key, value = next(iter(response.items()))
        if key in ("output", "error") and isinstance(value, str):
            return ToolResult(call_id=call_id, name=name, content=value, is_error=key == "error")
    return ToolResult(call_id=call_id, name=name, content=json.dumps(response))


def _model_turn(items: list[Any], path: str) -> Message:
    parts: list[Part] = []
    calls = 0
    for j, item in enumerate(items):
        part = parse_part(item, f"{path}.parts[{j}]", calls)
        if part is not None:
            parts.append(part)
            calls += isinstance(part, ToolCall)
    return Message(role="assistant", parts=tuple(parts))


def _user_turn(items: list[Any], pending: list[ToolCall], path: str) -> list[Message]:
    """A user turn, split into tool-result and user messages where the part kinds change."""
    out: list[Message] = []
    run: list[Part] = []
    tool = False
    results = 0
    for j, item in enumerate(items):
        fr = item.get("functionResponse") if isinstance(item, Mapping) else None
        part: Part | None
        if fr is not None:
            part = _parse_result(fr, pending, results, f"{path}.parts[{j}].functionResponse")
            results += 1
        else:
            part = parse_part(item, f"{path}.parts[{j}]", 0)
        if part is None:
            continue
        is_result = isinstance(part, ToolResult)
        if run and is_result != tool:
            out.append(Message(role="tool" if tool else "user", parts=tuple(run)))
            run = []
        run.append(part)
        tool = is_result
    if run or not out:
        out.append(Message(role="tool" if tool else "user", parts=tuple(run)))
    return out


def _parse_contents(raw: Any) -> list[Message]:
    if not isinstance(raw, list):
        raise WireFormatError(API, "expected a list", path="contents")
    messages: list[Message] = []
    pending: list[ToolCall] = []
    for i, content in enumerate(raw):
        path = f"contents[{i}]"
        if not isinstance(content, Mapping):
            raise WireFormatError(API, "a content must be an object", path=path)
        role = content.get("role")
        items = _parts(content, path)
        if role in ("model", "assistant"):
            message = _model_turn(items, path)
            pending = list(message.tool_calls)
            messages.append(message)
        elif role in ("system", "developer"):
            texts = (p.get("text") for p in items if isinstance(p, Mapping))
            messages.extend(Message.system(t) for t in texts if isinstance(t, str))
        else:  # user, function, tool, and anything unknown
            messages.extend(_user_turn(items, pending, path))
    return messages


def _system(raw: Any) -> list[Message]:
    if isinstance(raw, str):
        return [Message.system(raw)]
    if not isinstance(raw, Mapping):
        return []
    texts = (p.get("text") for p in _parts(raw, "systemInstruction") if isinstance(p, Mapping))
    return [Message.system(t) for t in texts if isinstance(t, str)]


def _tools(raw: Any, extra: dict[str, Any]) -> tuple[ToolSpec, ...]:
    """Function declarations; other tools (``googleSearch``, ...) are kept in `extra`."""
    if not isinstance(raw, list):
        return ()
    specs: list[ToolSpec] = []
    others: list[Any] = []
    for tool in raw:
        if not isinstance(tool, Mapping):
            continue
        rest = {k: v for k, v in tool.items() if k != "functionDeclarations"}
        if rest:
            others.append(rest)
        for decl in tool.get("functionDeclarations") or ():
            if not isinstance(decl, Mapping):
                continue
            schema = next(
                (
                    decl[k]
                    for k in ("parametersJsonSchema", "parameters_json_schema", "parameters")
                    if isinstance(decl.get(k), Mapping)
                ),
                _EMPTY_SCHEMA,
            )
            description = decl.get("description")
            specs.append(
                ToolSpec(
                    name=str(decl.get("name", "")),
                    description=description if isinstance(description, str) else "",
                    parameters=dict(schema),
                )
            )
    if others:
        extra["tools"] = others
    return tuple(specs)


def _tool_choice(raw: Any, extra: dict[str, Any]) -> str | None:
    """``toolConfig.functionCallingConfig`` as a tool choice; what has no equivalent stays."""
    if not isinstance(raw, Mapping):
        return None
    rest = {k: v for k, v in raw.items() if k != "functionCallingConfig"}
    fcc = raw.get("functionCallingConfig")
    choice: str | None = None
    if isinstance(fcc, Mapping):
        mode = fcc.get("mode")
        names = fcc.get("allowedFunctionNames")
        keys = set(fcc) - {"mode", "allowedFunctionNames"}
        if keys or not isinstance(mode, str):
            choice = None
        elif names is None:
            choice = _CHOICES.get(mode)
        elif mode == "ANY" and isinstance(names, list) and len(names) == 1:
            choice = names[0] if isinstance(names[0], str) else None
        if choice is None:
            rest["functionCallingConfig"] = fcc
    if rest:
        extra["toolConfig"] = rest
    return choice


def parse_request(body: Mapping[str, Any]) -> ModelRequest:
    """The canonical request a body describes; unknown fields go to ``extra_body``."""
    if not isinstance(body, Mapping):
        raise WireFormatError(API, f"expected an object, got {type(body).__name__}")
    messages = _system(body.get("systemInstruction"))
    messages.extend(_parse_contents(body.get("contents") or []))
    extra: dict[str, Any] = {k: v for k, v in body.items() if k not in _KNOWN}
    tools = _tools(body.get("tools"), extra)
    choice = _tool_choice(body.get("toolConfig"), extra)
    gen = body.get("generationConfig")
    gen = gen if isinstance(gen, Mapping) else {}
    rest = {k: v for k, v in gen.items() if k not in _GENERATION}
    if rest:
        extra["generationConfig"] = rest
    max_tokens, temperature, top_p = (
        gen.get("maxOutputTokens"),
        gen.get("temperature"),
        gen.get("topP"),
    )
    stop = gen.get("stopSequences")
    model = body.get("model")
    return ModelRequest(
        model=model.removeprefix("models/") if isinstance(model, str) else "",
        messages=tuple(messages),
        tools=tools,
        settings=ModelSettings(
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
            temperature=temperature if isinstance(temperature, int | float) else None,
            top_p=top_p if isinstance(top_p, int | float) else None,
            stop=tuple(s for s in stop if isinstance(s, str)) if isinstance(stop, list) else (),
            tool_choice=choice,
            extra_body=extra,
        ),
    )
