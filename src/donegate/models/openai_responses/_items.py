"""Output items <-> canonical parts, shared by bodies, streams and request logs.

A Responses ``output`` is a list of typed items. ``message`` items hold ``output_text`` and
``refusal`` parts; ``reasoning`` items hold a summary (or, on Bedrock Mantle, ``reasoning_text``
content) and an encrypted blob; ``function_call``, ``custom_tool_call`` and the built-in client
tools (``local_shell_call``, ``shell_call``, ``apply_patch_call``, ``computer_call``) are calls
the harness must run. Every other item (``web_search_call``, ``mcp_call``, ...) was run by the
server and is kept verbatim as a `ServerToolPart`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from donegate.errors import WireFormatError
from donegate.messages import (
    MediaPart,
    Part,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
)

__all__ = [
    "API",
    "CLIENT_TOOLS",
    "Ids",
    "at",
    "fail",
    "opt_str",
    "parse_item",
    "parse_items",
    "render_items",
]

API = "openai-responses"

CLIENT_TOOLS: dict[str, tuple[str, str]] = {
    "local_shell_call": ("action", "local_shell"),
    "shell_call": ("action", "shell"),
    "apply_patch_call": ("operation", "apply_patch"),
    "computer_call": ("action", "computer"),
}
"""Built-in tools the client runs: item type -> (payload field, tool name)."""

_ID_PREFIX = {
    "message": "msg",
    "reasoning": "rs",
    "function_call": "fc",
    "custom_tool_call": "ctc",
    "local_shell_call": "lsh",
    "shell_call": "sh",
    "apply_patch_call": "apc",
    "computer_call": "cu",
    "image_generation_call": "ig",
}


def fail(message: str, path: str) -> NoReturn:
    """Raise the one error a malformed body may cause."""
    raise WireFormatError(API, message, path=path)


def at(path: str, key: str) -> str:
    """The path of a field (``output[0].content``; top-level fields are bare)."""
    return f"{path}.{key}" if path else key


def opt_str(obj: Mapping[str, Any], key: str, path: str) -> str | None:
    """An optional string field; any other type is a shape error."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    fail(f"expected a string, got {type(value).__name__}", at(path, key))


def _list(obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        fail(f"expected a list, got {type(value).__name__}", at(path, key))
    return value


def parse_items(items: Any, path: str) -> list[Part]:
    """The parts of an ``output`` list (None is an empty output)."""
    if items is None:
        return []
    if not isinstance(items, list):
        fail(f"expected a list, got {type(items).__name__}", path)
    parts: list[Part] = []
    for i, item in enumerate(items):
        parse_item(item, f"{path}[{i}]", parts)
    return parts


def parse_item(item: Any, path: str, parts: list[Part]) -> None:
    """Append the parts of one output item."""
    if not isinstance(item, dict):
        fail("an output item must be an object", path)
    kind = item.get("type")
    if not isinstance(kind, str):
        fail("an output item needs a string type", at(path, "type"))
    if kind == "message":
        _message(item, path, parts)
    elif kind == "function_call":
        parts.append(_function_call(item, path))
    elif kind == "reasoning":
        parts.append(_reasoning(item, path))
    elif kind == "custom_tool_call":
        text = opt_str(item, "input", path) or ""
        parts.append(
            ToolCall(
                id=_call_id(item, path),
                name=opt_str(item, "name", path) or "",
                arguments_raw=text,
                arguments={"input": text},
                provider_details=_details(item, path, kind),
            )
        )
    elif kind in CLIENT_TOOLS:
        parts.append(_client_tool(item, kind, path))
    else:
        parts.append(ServerToolPart(name=kind, id=opt_str(item, "id", path), data=item))
        if kind == "image_generation_call" and isinstance(item.get("result"), str):
            fmt = item.get("output_format")
            mime = f"image/{fmt if isinstance(fmt, str) else 'png'}"
            parts.append(MediaPart(mime_type=mime, data=item["result"]))


def _details(item: Mapping[str, Any], path: str, kind: str | None = None) -> dict[str, Any] | None:
    """provider_details for a call: the item id (and the item type when not function_call)."""
    item_id = opt_str(item, "id", path)
    if kind is None:
        return {"item_id": item_id} if item_id else None
    return {"type": kind, "item_id": item_id} if item_id else {"type": kind}


def _call_id(item: Mapping[str, Any], path: str) -> str:
    call_id = opt_str(item, "call_id", path)
    return call_id if call_id is not None else opt_str(item, "id", path) or ""


def _message(item: dict[str, Any], path: str, parts: list[Part]) -> None:
    content = _list(item, "content", path)
    item_id = opt_str(item, "id", path)
    phase = item.get("phase")
    for j, c in enumerate(content):
        if not isinstance(c, dict):
            fail("a content part must be an object", f"{path}.content[{j}]")
        ctype = c.get("type")
        if ctype in ("output_text", "text"):
            text = c.get("text")
            if not isinstance(text, str):
                fail("output_text needs a string text", f"{path}.content[{j}].text")
            details: dict[str, Any] = {"item_id": item_id} if item_id else {}
            if isinstance(phase, str):
                details["phase"] = phase  # codex models want it sent back
            notes = c.get("annotations")
            if isinstance(notes, list) and notes:
                details["annotations"] = notes
            parts.append(TextPart(text=text, provider_details=details or None))
        elif ctype == "refusal":
            refusal = c.get("refusal")
            if not isinstance(refusal, str):
                fail("a refusal part needs a string refusal", f"{path}.content[{j}].refusal")
            parts.append(RefusalPart(text=refusal))


def _function_call(item: dict[str, Any], path: str) -> ToolCall:
    args = item.get("arguments")
    if isinstance(args, dict):  # a few compatible servers send an object
        args = json.dumps(args, separators=(",", ":"))
    elif args is not None and not isinstance(args, str):
        fail("arguments must be a string", f"{path}.arguments")
    details = _details(item, path)
    namespace = item.get("namespace")
    if isinstance(namespace, str):
        details = {**(details or {}), "namespace": namespace}
    return ToolCall.from_raw(
        id=_call_id(item, path),
        name=opt_str(item, "name", path) or "",
        arguments_raw=args or "",
        provider_details=details,
    )


def _client_tool(item: dict[str, Any], kind: str, path: str) -> ToolCall:
    key, name = CLIENT_TOOLS[kind]
    payload = item.get(key)
    if payload is None and kind == "computer_call" and item.get("actions") is not None:
        payload = {"actions": item["actions"]}  # batched computer actions
    if payload is not None and not isinstance(payload, dict):
        fail("expected an object", f"{path}.{key}")
    args: dict[str, Any] = payload or {}
    return ToolCall(
        id=_call_id(item, path),
        name=opt_str(item, "name", path) or name,
        arguments_raw=json.dumps(args, separators=(",", ":")),
        arguments=args,
        provider_details=_details(item, path, kind),
    )


def _texts(items: list[Any], path: str) -> list[str]:
    out = []
    for k, s in enumerate(items):
        if not isinstance(s, dict):
            fail("expected an object", f"{path}[{k}]")
        text = s.get("text")
        if isinstance(text, str):
            out.append(text)
    return out


def _reasoning(item: dict[str, Any], path: str) -> ThinkingPart:
    summary = _texts(_list(item, "summary", path), f"{path}.summary")
    details = _details(item, path) or {}
    if summary:
        text = "\n\n".join(summary)
    else:
        content = _texts(_list(item, "content", path), f"{path}.content")
        text = "\n\n".join(content)
        if content:
            details["source"] = "content"
    signature = opt_str(item, "encrypted_content", path)
    return ThinkingPart(
        text=text,
        signature=signature,
        redacted=bool(signature) and not text,
        provider_details=details or None,
    )


# -- rendering -----------------------------------------------------------------------------


class Ids:
    """Provider-style item ids (``msg_...``, ``fc_...``) sharing one response's stem."""

    def __init__(self, stem: str) -> None:
        self.stem = stem
        self.count = 0

    def new(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.stem}{self.count:02x}"


def render_items(
    parts: Sequence[Part], *, ids: Ids | None, incomplete: bool = False
) -> list[dict[str, Any]]:
    """Output items for assistant parts.

    With ``ids`` the items are full response items (every id filled in, statuses, empty
    annotations and logprobs) and ``incomplete`` marks the last one cut off. Without, they are
    request ``input`` items carrying only what the parts know (ids the provider gave).
    """
    items: list[dict[str, Any]] = []
    message: dict[str, Any] | None = None
    message_key: object = None
    previous: Part | None = None
    for part in parts:
        if isinstance(part, TextPart | RefusalPart):
            if isinstance(part, TextPart):
                details = part.provider_details
                key = details.get("item_id") if details else None
            else:  # a refusal has no id of its own: it stays in the message it came in
                details, key = None, message_key
            if message is None or key != message_key:
                message, message_key = _message_item(details, ids), key
                items.append(message)
            message["content"].append(_content(part, details, full=ids is not None))
            previous = part
            continue
        message = None
        item = _item(part, previous, ids)
        if item is not None:
            items.append(item)
        previous = part
    if incomplete and items and "status" in items[-1]:
        items[-1]["status"] = "incomplete"
    return items


def _message_item(details: Mapping[str, Any] | None, ids: Ids | None) -> dict[str, Any]:
    item_id = details.get("item_id") if details else None
    phase = details.get("phase") if details else None
    if ids is None:
        item: dict[str, Any] = {"type": "message", "role": "assistant", "content": []}
        if item_id:
            item["id"], item["status"] = item_id, "completed"
    else:
        item = {
            "id": item_id or ids.new("msg"),
            "type": "message",
            "status": "completed",
            "content": [],
            "role": "assistant",
        }
    if phase:
        item["phase"] = phase
    return item


def _content(part: TextPart | RefusalPart, details: Mapping[str, Any] | None, *, full: bool) -> Any:
    if isinstance(part, RefusalPart):
        return {"type": "refusal", "refusal": part.text}
    notes = list(details.get("annotations", ())) if details else []
    if full:
        return {"type": "output_text", "annotations": notes, "logprobs": [], "text": part.text}
    return {"type": "output_text", "text": part.text, "annotations": notes}


def _item(part: Part, previous: Part | None, ids: Ids | None) -> dict[str, Any] | None:
    if isinstance(part, ToolCall):
        return _call_item(part, ids)
    if isinstance(part, ThinkingPart):
        return _reasoning_item(part, ids)
    if isinstance(part, ServerToolPart):
        return dict(part.data) if "type" in part.data else {"type": part.name, "id": part.id}
    if isinstance(part, MediaPart):
        made_by_tool = isinstance(previous, ServerToolPart) and previous.name == (
            "image_generation_call"
        )
        if made_by_tool or ids is None or part.data is None:
            return None  # the image is the result of the item before it, or cannot be inlined
        fmt = part.mime_type.partition("/")[2] or "png"
        return {
            "id": ids.new("ig"),
            "type": "image_generation_call",
            "status": "completed",
            "output_format": fmt,
            "result": part.data,
        }
    return None


def _call_item(call: ToolCall, ids: Ids | None) -> dict[str, Any]:
    details = call.provider_details or {}
    kind = details.get("type", "function_call")
    item_id = details.get("item_id")
    if item_id is None and ids is not None:
        item_id = ids.new(_ID_PREFIX.get(kind, "fc"))
    item: dict[str, Any] = {"id": item_id} if item_id else {}
    item["type"] = kind
    if ids is not None:
        item["status"] = "completed"
    if kind == "custom_tool_call":
        item.update(call_id=call.id, input=call.arguments_raw, name=call.name)
    elif kind in CLIENT_TOOLS:
        key = CLIENT_TOOLS[kind][0]
        args = dict(call.arguments or {})
        if kind == "computer_call" and set(args) == {"actions"}:
            key, args = "actions", args["actions"]
        if kind == "local_shell_call":  # its input item requires an id and a status
            item.setdefault("id", call.id)
            item["status"] = "completed"
        item.update({key: args, "call_id": call.id})
        if kind == "computer_call":
            item["pending_safety_checks"] = []
    else:
        item.update(arguments=call.arguments_raw, call_id=call.id, name=call.name)
        if "namespace" in details:
            item["namespace"] = details["namespace"]
    return item


def _reasoning_item(part: ThinkingPart, ids: Ids | None) -> dict[str, Any] | None:
    details = part.provider_details or {}
    item_id = details.get("item_id")
    if item_id is None:
        if ids is None:
            return None  # the API rejects reasoning items without the id it gave them
        item_id = ids.new("rs")
    item: dict[str, Any] = {"id": item_id, "type": "reasoning"}
    if details.get("source") == "content":
        item["content"] = [{"type": "reasoning_text", "text": part.text}]
        item["summary"] = []
    else:
        item["summary"] = [{"type": "summary_text", "text": part.text}] if part.text else []
    if part.signature is not None:
        item["encrypted_content"] = part.signature
    return item
