"""Pydantic's validation errors in the words of the script format, one line each.

`_script_schema` validates; this says what it found wrong where a script's author looks for it:
``turns[0].text: expected a string, got a number (5)`` rather than pydantic's "Input should be a
valid string". Rules between keys raise `problem`, which names the field below the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_core import ErrorDetails, PydanticCustomError

__all__ = ["Loc", "kind", "located", "path", "problem"]

Loc = tuple[str | int, ...]
"""A place in the data: keys and list indexes, outermost first."""


def problem(message: str, *at: str | int) -> PydanticCustomError:
    """A located problem: `at` is the field below the model raising it (empty: the model)."""
    return PydanticCustomError("script", "{message}", {"message": message, "at": at})


_MISSING = {"turns": "a script needs at least one model turn", "tool": "name the tool called"}
"""What to add when a required key is missing, by key."""
_MAPPING = {
    "tools": "a mapping of tool names to stubs",
    "schema": "a JSON Schema mapping",
    "parameters": "a JSON Schema mapping",
}
"""What a mapping-valued key holds, where "a mapping" says too little."""


def located(error: ErrorDetails) -> tuple[str, str]:
    """A pydantic error as (field path, message), in the words the script format uses."""
    loc: Loc = error["loc"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    if error["type"] == "script":
        return path((*loc, *ctx["at"])), str(ctx["message"])
    if loc and loc[-1] == "[key]":
        return path(loc[:-2]), f"a tool name must be a non-empty string, got {kind(loc[-2])}"
    msg = _message(error["type"], error["input"], loc, ctx) or error["msg"]
    return path(loc), msg[:1].lower() + msg[1:]


def _message(kind_of: str, value: Any, loc: Loc, ctx: dict[str, Any]) -> str | None:
    last = loc[-1] if loc else ""
    got = kind(value)
    simple = {
        "string_type": "a string",
        "int_type": "an integer",
        "float_type": "a number >= 0",  # every number in a script is a count of seconds
        "bool_type": "true or false",
        "dict_type": _MAPPING.get(str(last), "a mapping"),
        "model_type": _MAPPING.get(str(last), "a mapping"),
        "list_type": "a non-empty list of turns" if loc == ("turns",) else "a non-empty list",
        "too_short": "a non-empty list of turns" if loc == ("turns",) else "a non-empty list",
        "finite_number": "a finite number",
    }
    if kind_of in simple:
        return f"expected {simple[kind_of]}, got {got}"
    if kind_of == "missing":
        hint = _MISSING.get(str(last))
        return f"missing; {hint}" if hint else "missing"
    if kind_of in ("greater_than_equal", "less_than_equal"):
        bound = ctx.get("ge", ctx.get("le"))
        what = "a number" if isinstance(bound, float) else "an integer"
        sign = ">=" if kind_of == "greater_than_equal" else "<="
        return f"expected {what} {sign} {bound:g}, got {value}"
    if kind_of == "value_error":
        return str(ctx["error"])
    return None


def path(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def kind(value: Any) -> str:
    """What `value` is, for "expected X, got Y": ``a string ('hi')``, ``a number (5)``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})" if len(value) <= 40 else "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__
