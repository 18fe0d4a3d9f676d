"""OpenAI-shaped function calls and tools, as Cohere v2 and Mistral both send them.

``{"id", "type": "function", "function": {"name", "arguments"}}`` on an assistant message and
``{"type": "function", "function": {"name", "description", "parameters"}}`` in ``tools``: one
reader and one writer each, so the adapters differ only where their wire formats do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from donegate.messages import Part, ToolCall
from donegate.models._values import Fail, opt_str
from donegate.models.base import ToolSpec

__all__ = [
    "arguments_raw",
    "parse_tool_call",
    "parse_tool_calls",
    "parse_tool_spec",
    "render_tool_calls",
    "render_tool_spec",
]


def arguments_raw(value: Any) -> str:
    """``function.arguments`` as text; an object is tolerated and written compactly, as
    `ToolCall.from_args` writes it."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, separators=(",", ":"))


def parse_tool_call(raw: Any, path: str, fail: Fail, *, object_arguments: bool = False) -> ToolCall:
    """One call; with `object_arguments`, an ``arguments`` object is taken as the arguments."""
    if not isinstance(raw, dict):
        raise fail(path, f"a tool call must be an object, got {type(raw).__name__}")
    function = raw.get("function")
    if not isinstance(function, dict):
        raise fail(f"{path}.function", "missing or not an object")
    name = function.get("name")
    if not isinstance(name, str):
        raise fail(f"{path}.function.name", "expected a string")
    arguments = function.get("arguments")
    call_id = opt_str(raw.get("id")) or ""
    if object_arguments and isinstance(arguments, dict):
        return ToolCall.from_args(id=call_id, name=name, arguments=arguments)
    return ToolCall.from_raw(id=call_id, name=name, arguments_raw=arguments_raw(arguments))


def parse_tool_calls(
    message: dict[str, Any], path: str, fail: Fail, *, object_arguments: bool = False
) -> list[Part]:
    """A message's ``tool_calls`` (absent is none; anything but a list is an error)."""
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise fail(f"{path}.tool_calls", "expected a list")
    return [
        parse_tool_call(c, f"{path}.tool_calls[{i}]", fail, object_arguments=object_arguments)
        for i, c in enumerate(calls)
    ]


def render_tool_calls(calls: Iterable[ToolCall]) -> list[dict[str, Any]]:
    """An assistant message's ``tool_calls``, arguments as the model wrote them."""
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_raw}}
        for c in calls
    ]


def render_tool_spec(tool: ToolSpec, *, strict_field: bool) -> dict[str, Any]:
    """One entry of ``tools``; `strict_field` writes ``function.strict`` for a strict tool."""
    function: dict[str, Any] = {"name": tool.name, "parameters": dict(tool.parameters)}
    if tool.description:
        function["description"] = tool.description
    if strict_field and tool.strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def parse_tool_spec(raw: Any, *, strict: bool | None = None) -> ToolSpec | None:
    """One entry of ``tools``, None when it names no function; `strict` overrides
    ``function.strict`` (Cohere has one switch for every tool)."""
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return None
    params = function.get("parameters")
    return ToolSpec(
        name=function["name"],
        description=opt_str(function.get("description")) or "",
        parameters=params if isinstance(params, dict) else {"type": "object"},
        strict=function.get("strict") is True if strict is None else strict,
    )
