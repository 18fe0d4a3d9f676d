"""A tool's parameter schema from its signature: an enum parameter is its values, in place."""

from __future__ import annotations

from enum import StrEnum

from donegate.messages import ToolCall
from donegate.tools import Tool


class Colour(StrEnum):
    """A colour (this docstring stays out of the schema)."""

    RED = "red"
    BLUE = "blue"


def paint(wall: str, colour: Colour, also: list[Colour] | None = None) -> str:
    """Paint a wall."""
    return f"{wall} is {colour}"


def test_an_enum_parameter_is_inlined_as_its_values() -> None:
    schema = Tool.from_function(paint).parameters
    assert "$defs" not in schema
    assert schema["properties"]["colour"] == {"enum": ["red", "blue"], "type": "string"}
    listed = schema["properties"]["also"]["anyOf"][0]
    assert listed == {"items": {"enum": ["red", "blue"], "type": "string"}, "type": "array"}


def _call(arguments: str) -> ToolCall:
    return ToolCall.from_raw(id="c", name="paint", arguments_raw=arguments)


def test_an_enum_argument_is_validated_and_passed_as_the_enum() -> None:
    tool = Tool.from_function(paint)
    args = tool.prepare(_call('{"wall": "w", "colour": "red"}'))
    assert args == {"wall": "w", "colour": Colour.RED, "also": None}
    bad = tool.prepare(_call('{"wall": "w", "colour": "pink"}'))
    assert not isinstance(bad, dict) and bad.is_error
