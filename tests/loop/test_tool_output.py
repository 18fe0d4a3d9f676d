"""What a tool returns, as the text the model reads: `json.dumps(default=str)`, on every path."""

from __future__ import annotations

import asyncio
import datetime
import decimal
import json
from typing import Any

import pytest

from donegate.messages import ToolCall
from donegate.tools import Tool, render_output

VALUES: list[Any] = [
    {"order_id": "55219", "sku": "MUG-01", "qty": 2, "price": 9.5, "gift": False, "note": None},
    {"nested": {"list": [1, 2.5, None, True, 'é\n"x\u2028'], "empty": {}}, "tuple": (1, "a")},
    [1, 2, 3],
    7,
    2.5,
    None,
    True,
    float("nan"),
    float("-inf"),
    {1: "int key", 2.5: "float key", None: "none key", False: "bool key"},
    {"when": datetime.date(2020, 1, 2), "amount": decimal.Decimal("1.50"), "set": {3}},
    decimal.Decimal("0.1"),
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_output_is_what_json_dumps_makes(value: Any) -> None:
    assert render_output(value) == json.dumps(value, default=str, ensure_ascii=False)


def test_a_string_is_the_text_itself_and_a_cycle_is_still_named() -> None:
    assert render_output("plain text") == "plain text"
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(ValueError, match="Circular reference detected"):
        render_output(cycle)


def test_a_plain_function_returning_an_awaitable_is_awaited() -> None:
    async def later(order_id: str) -> dict[str, str]:
        return {"order_id": order_id}

    def handing_back(order_id: str) -> Any:
        return later(order_id)

    call = ToolCall.from_raw(id="c1", name="handing_back", arguments_raw='{"order_id": "7"}')
    tool = Tool.from_function(handing_back)
    assert tool.run_sync(call).content == '{"order_id": "7"}'
    assert asyncio.run(tool.run_async(call)).content == '{"order_id": "7"}'
