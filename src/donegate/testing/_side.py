"""Side calls: the requests an agent CLI makes besides its own turns, answered without a turn.

Gemini CLI routes each prompt with a request of its own (``generateContent``, no tools, a
``responseJsonSchema`` of ``{complexity_reasoning, complexity_score}``), and agent CLIs
summarise, title and check loops the same way. None of these is a turn of the agent's
conversation, so a script should not have to predict them. With side calls on, the emulator
answers every request that offers no tools itself: with the smallest JSON value the requested
response schema allows, or a short text when there is none. The agent's own turns (which offer
its tools) still come from the script, turn by turn.

The response schema's place in the body is each provider's own; it is read here because the
emulator speaks those bodies (the canonical `ModelRequest` carries no response format).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from donegate.messages import Ending, Message, TextPart, Turn

__all__ = ["SIDE_TEXT", "response_schema", "side_turn", "smallest_instance"]

SIDE_TEXT = "OK"
"""The answer to a side call that asks for no particular shape."""

_MAX_DEPTH = 16


def response_schema(api: str, body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The JSON Schema a request asks its answer to follow, if any (``{}``: any JSON object)."""
    if api == "gemini":
        config = body.get("generationConfig") or body.get("generation_config") or {}
        if not isinstance(config, Mapping):
            return None
        for key in ("responseJsonSchema", "response_json_schema", "responseSchema",
                    "response_schema"):  # fmt: skip
            if isinstance(config.get(key), Mapping):
                return dict(config[key])
        mime = config.get("responseMimeType") or config.get("response_mime_type")
        return {"type": "object"} if mime == "application/json" else None
    if api == "openai-chat":
        fmt = body.get("response_format")
    elif api == "openai-responses":
        text = body.get("text")
        fmt = text.get("format") if isinstance(text, Mapping) else None
    else:  # anthropic-messages: structured outputs
        fmt = body.get("output_format")
        config = body.get("output_config")
        if fmt is None and isinstance(config, Mapping):
            fmt = config.get("format")
    if not isinstance(fmt, Mapping):
        return None
    if fmt.get("type") == "json_object":
        return {"type": "object"}
    if fmt.get("type") != "json_schema":
        return None
    nested = fmt.get("json_schema")
    inner: Mapping[str, Any] = nested if isinstance(nested, Mapping) else fmt
    schema = inner.get("schema")
    return dict(schema) if isinstance(schema, Mapping) else {"type": "object"}


def smallest_instance(schema: Any, depth: int = 0) -> Any:
    """The plainest value `schema` accepts: its const or first enum value, else an empty value
    of its type (numbers 1), objects with every property filled (clients read them all)."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return smallest_instance(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind).lower() if kind is not None else ("object" if "properties" in schema else "")
    if kind == "object":
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            return {}
        return {str(k): smallest_instance(v, depth + 1) for k, v in props.items()}
    if kind == "array":
        wanted = schema.get("minItems")
        count = wanted if isinstance(wanted, int) and wanted > 0 else 0
        return [smallest_instance(schema.get("items"), depth + 1) for _ in range(min(count, 8))]
    if kind in ("integer", "number"):
        # 1 unless the schema says otherwise: scores and counts rarely start at 0 (Gemini CLI's
        # router rejects a complexity_score of 0 its schema does not forbid).
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, int | float) and not isinstance(low, bool):
            return low
        return (
            high if isinstance(high, int | float) and not isinstance(high, bool) and high < 1 else 1
        )
    if kind == "boolean":
        return False
    if kind == "string":
        low = schema.get("minLength")
        return "x" * min(low, 64) if isinstance(low, int) and low > 0 else ""
    return None


def side_turn(api: str, body: Mapping[str, Any]) -> Turn:
    """The turn that answers a side call: its schema's smallest instance, or `SIDE_TEXT`."""
    schema = response_schema(api, body)
    if schema is None:
        text = SIDE_TEXT
    else:
        value = smallest_instance(schema)
        text = json.dumps({} if value is None else value)
    return Turn(message=Message(role="assistant", parts=(TextPart(text=text),)),
                ending=Ending.COMPLETE)  # fmt: skip
