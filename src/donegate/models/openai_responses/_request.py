"""Canonical requests <-> Responses request bodies (``input`` items, ``instructions``, tools).

A leading system message becomes ``instructions``; later ones stay ``system`` input messages.
Assistant turns become the output items they came from (reasoning items go back with their
ids and encrypted content), tool results become the ``*_output`` item that answers their
call's type. Two things the API cannot say are dropped: stop sequences (the Responses API has
no ``stop``) and ``ToolResult.is_error`` for plain function calls (``function_call_output``
has no error flag; ``apply_patch`` and ``shell`` outputs do).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.messages import MediaPart, Message, Part, Role, TextPart, ToolCall, ToolResult
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.openai_responses._items import fail, parse_item, render_items

__all__ = ["parse_request", "render_request"]

_KNOWN = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "max_output_tokens",
        "temperature",
        "top_p",
        "parallel_tool_calls",
        "stream",
    }
)
_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "assistant": "assistant"}
_TEXT = frozenset({"input_text", "output_text", "text"})


# -- rendering -----------------------------------------------------------------------------


def render_request(request: ModelRequest) -> dict[str, Any]:
    """The JSON body for a canonical request."""
    messages = request.messages
    body: dict[str, Any] = {"model": request.model}
    first = messages[0] if messages else None
    if first is not None and first.role == "system" and _one_text(first):
        body["instructions"] = first.text
        messages = messages[1:]
    kinds: dict[str, str] = {}
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            for call in m.tool_calls:
                kinds[call.id] = (call.provider_details or {}).get("type", "function_call")
            items.extend(render_items(m.parts, ids=None))
        elif m.role == "tool":
            items.extend(_result_item(r, kinds.get(r.call_id)) for r in m.results)
        else:
            content = [_input_part(p) for p in m.parts if isinstance(p, TextPart | MediaPart)]
            items.append({"type": "message", "role": m.role, "content": content})
    body["input"] = items
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
                "strict": t.strict,  # the Responses API defaults to strict when omitted
            }
            for t in request.tools
        ]
    s = request.settings
    if s.tool_choice is not None:
        body["tool_choice"] = (
            s.tool_choice
            if s.tool_choice in ("auto", "required", "none")
            else {"type": "function", "name": s.tool_choice}
        )
    if s.max_tokens is not None:
        body["max_output_tokens"] = s.max_tokens
    if s.temperature is not None:
        body["temperature"] = s.temperature
    if s.top_p is not None:
        body["top_p"] = s.top_p
    if s.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = s.parallel_tool_calls
    if request.stream:
        body["stream"] = True
    body.update(s.extra_body)
    return body


def _one_text(m: Message) -> bool:
    """A system message ``instructions`` can carry without changing its parts."""
    return (
        len(m.parts) == 1 and isinstance(m.parts[0], TextPart) and not m.parts[0].provider_details
    )


def _input_part(part: TextPart | MediaPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    url = part.uri or f"data:{part.mime_type};base64,{part.data or ''}"
    return {"type": "input_image", "image_url": url, "detail": "auto"}


def _result_item(result: ToolResult, kind: str | None) -> dict[str, Any]:
    """The output item answering a call of type `kind`."""
    call_id, content = result.call_id, result.content
    if kind == "custom_tool_call":
        return {"type": "custom_tool_call_output", "call_id": call_id, "output": content}
    if kind == "local_shell_call":
        return {"type": "local_shell_call_output", "call_id": call_id, "output": content}
    if kind == "apply_patch_call":
        status = "failed" if result.is_error else "completed"
        return {
            "type": "apply_patch_call_output",
            "call_id": call_id,
            "status": status,
            "output": content,
        }
    if kind == "shell_call":
        outcome = {"type": "exit", "exit_code": 1 if result.is_error else 0}
        out = [{"stdout": content, "stderr": "", "outcome": outcome}]
        return {"type": "shell_call_output", "call_id": call_id, "output": out}
    if kind == "computer_call":
        shot = {"type": "computer_screenshot", "image_url": content}
        return {"type": "computer_call_output", "call_id": call_id, "output": shot}
    return {"type": "function_call_output", "call_id": call_id, "output": content}


# -- parsing -------------------------------------------------------------------------------


class _Transcript:
    """Messages being rebuilt; consecutive assistant items (and results) form one message."""

    def __init__(self) -> None:
        self.messages: list[tuple[Role, list[Part]]] = []
        self.names: dict[str, str] = {}

    def add(self, role: Role, parts: list[Part]) -> None:
        for p in parts:
            if isinstance(p, ToolCall):
                self.names[p.id] = p.name
        if role in ("assistant", "tool") and self.messages and self.messages[-1][0] == role:
            self.messages[-1][1].extend(parts)
        else:
            self.messages.append((role, parts))


def parse_request(body: Mapping[str, Any]) -> ModelRequest:
    """The canonical request a body describes; unknown item types and roles are tolerated."""
    if not isinstance(body, Mapping):
        fail(f"expected an object, got {type(body).__name__}", "$")
    out = _Transcript()
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        out.add("system", [TextPart(text=instructions)])
    raw = body.get("input")
    if isinstance(raw, str):
        out.add("user", [TextPart(text=raw)])
    elif isinstance(raw, list):
        for i, item in enumerate(raw):
            if isinstance(item, dict):
                _parse_input(item, f"input[{i}]", out)
    elif raw is not None:
        fail(f"expected a string or a list, got {type(raw).__name__}", "input")
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping):
        choice = choice.get("name")
    max_tokens = body.get("max_output_tokens")
    return ModelRequest(
        model=str(body.get("model", "")),
        messages=tuple(Message(role=r, parts=tuple(p)) for r, p in out.messages),
        tools=tuple(
            ToolSpec(
                name=str(t.get("name", "")),
                description=str(t.get("description") or ""),
                parameters=t.get("parameters") or {"type": "object", "properties": {}},
                strict=bool(t.get("strict", False)),
            )
            for t in body.get("tools") or ()
            if isinstance(t, Mapping) and t.get("type") == "function"
        ),
        settings=ModelSettings(
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
            temperature=body.get("temperature"),
            top_p=body.get("top_p"),
            tool_choice=choice if isinstance(choice, str) else None,
            parallel_tool_calls=body.get("parallel_tool_calls"),
            extra_body={k: v for k, v in body.items() if k not in _KNOWN},
        ),
        stream=body.get("stream") is True,
    )


def _parse_input(item: dict[str, Any], path: str, out: _Transcript) -> None:
    kind = item.get("type")
    if kind == "message" or (kind is None and "role" in item):
        raw_role = item.get("role")
        role: Role = _ROLES.get(raw_role, "user") if isinstance(raw_role, str) else "user"
        content = item.get("content")
        if isinstance(content, str):
            out.add(role, [TextPart(text=content)])
        elif role == "assistant":
            parts: list[Part] = []
            parse_item({**item, "type": "message"}, path, parts)
            out.add(role, parts)
        elif isinstance(content, list):
            out.add(role, [p for c in content if (p := _user_part(c)) is not None])
    elif isinstance(kind, str) and kind.endswith("_output"):
        call_id = item.get("call_id") or item.get("id") or ""
        content, is_error = _output_of(item)
        result = ToolResult(
            call_id=str(call_id),
            name=out.names.get(str(call_id), str(item.get("name") or "")),
            content=content,
            is_error=is_error,
        )
        out.add("tool", [result])
    elif kind != "item_reference":
        parts = []
        parse_item(item, path, parts)
        out.add("assistant", parts)


def _user_part(c: Any) -> Part | None:
    if not isinstance(c, Mapping):
        return None
    ctype = c.get("type")
    if ctype in _TEXT and isinstance(c.get("text"), str):
        return TextPart(text=c["text"])
    if ctype == "input_image" and isinstance(c.get("image_url"), str):
        url: str = c["image_url"]
        if url.startswith("data:") and ";base64," in url:
            mime, _, data = url[5:].partition(";base64,")
            return MediaPart(mime_type=mime, data=data)
        return MediaPart(mime_type="image/*", uri=url)
    return None


def _output_of(item: Mapping[str, Any]) -> tuple[str, bool]:
    """A tool output's text and whether it reports a failure."""
    output = item.get("output")
    kind = item.get("type")
    if kind == "apply_patch_call_output":
        return (output if isinstance(output, str) else ""), item.get("status") == "failed"
    if kind == "computer_call_output" and isinstance(output, Mapping):
        url = output.get("image_url")
        return (url if isinstance(url, str) else ""), False
    if isinstance(output, str):
        return output, False
    if not isinstance(output, list):
        return "", False
    if kind == "shell_call_output":
        texts: list[str] = []
        failed = False
        for o in output:
            if isinstance(o, Mapping):
                stdout = o.get("stdout")
                texts.append(stdout if isinstance(stdout, str) else "")
                outcome = o.get("outcome")
                if isinstance(outcome, Mapping) and outcome.get("exit_code", 0) != 0:
                    failed = True
        return "".join(texts), failed
    texts = [o["text"] for o in output if isinstance(o, Mapping) and isinstance(o.get("text"), str)]
    return "".join(texts), False
