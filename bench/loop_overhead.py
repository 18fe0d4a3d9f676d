"""CPU microseconds per model turn of an agent loop, against a hand-written SDK-only loop.

One run: ``python bench/loop_overhead.py``. Every loop drives the official ``openai`` SDK through
a zero-latency ``httpx2.MockTransport`` over the same 2-turn conversation (a tool call, then a
text answer), so what differs is the loop's own work. Peers are measured when installed, for the
benchmark only: ``pip install "pydantic-ai-slim[openai]" openai-agents``.
Target: donegate <= 1.15x the SDK-only loop. Also: turns per second through `ScriptedModel` with
no HTTP (target >= 20,000).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx2
import openai

import donegate
from donegate.models.sdk import OpenAIChatModel
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script

RUNS = 400

TOOL_TURN = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_order", "arguments": '{"order_id": "55219"}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
}
TEXT_TURN = {
    "id": "chatcmpl-2",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Order 55219 holds one MUG-01."},
        }
    ],
    "usage": {"prompt_tokens": 70, "completion_tokens": 9, "total_tokens": 79},
}
BODIES = [json.dumps(TOOL_TURN).encode(), json.dumps(TEXT_TURN).encode()]


def transport() -> httpx2.MockTransport:
    state = {"n": 0}

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = BODIES[state["n"] % 2]
        state["n"] += 1
        return httpx2.Response(200, content=body, headers={"content-type": "application/json"})

    return httpx2.MockTransport(handle)


def get_order(order_id: str) -> dict[str, str]:
    """Look up an order."""
    return {"order_id": order_id, "sku": "MUG-01"}


TOOLS_SCHEMA = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


def sdk_only() -> Callable[[], None]:
    client = openai.OpenAI(api_key="k", http_client=httpx2.Client(transport=transport()))

    def once() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "order 55219?"}]
        while True:
            response = client.chat.completions.create(
                model="gpt-4o-mini",
                messages=messages,
                tools=TOOLS_SCHEMA,  # type: ignore[arg-type]
            )
            choice = response.choices[0]
            if choice.message.tool_calls:
                messages.append(choice.message.model_dump(exclude_none=True))
                for call in choice.message.tool_calls:
                    result = get_order(**json.loads(call.function.arguments))  # type: ignore[union-attr]
                    messages.append(
                        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
                    )
                continue
            assert choice.finish_reason == "stop" and choice.message.content
            return

    return once


def with_donegate() -> Callable[[], None]:
    client = openai.OpenAI(api_key="k", http_client=httpx2.Client(transport=transport()))
    model = OpenAIChatModel(client, "gpt-4o-mini")
    tools = [donegate.Tool.from_function(get_order)]

    def once() -> None:
        result = donegate.run("order 55219?", model=model, tools=tools, max_steps=8)
        assert result.status == "complete", result.reason

    return once


def with_pydantic_ai() -> Callable[[], None] | None:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel as PAIModel
        from pydantic_ai.providers.openai import OpenAIProvider
    except ImportError:
        return None
    client = openai.AsyncOpenAI(api_key="k", http_client=httpx2.AsyncClient(transport=transport()))
    agent = Agent(PAIModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)))
    agent.tool_plain(get_order)
    loop = asyncio.new_event_loop()

    def once() -> None:
        result = loop.run_until_complete(agent.run("order 55219?"))
        assert result.output

    return once


def with_openai_agents() -> Callable[[], None] | None:
    try:
        from agents import (
            Agent,
            OpenAIChatCompletionsModel,
            Runner,
            function_tool,
            set_tracing_disabled,
        )
    except ImportError:
        return None
    set_tracing_disabled(True)
    client = openai.AsyncOpenAI(api_key="k", http_client=httpx2.AsyncClient(transport=transport()))
    agent = Agent(
        name="bench",
        tools=[function_tool(get_order)],
        model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
    )
    loop = asyncio.new_event_loop()

    def once() -> None:
        result = loop.run_until_complete(Runner.run(agent, "order 55219?"))
        assert result.final_output

    return once


def cpu_us_per_turn(once: Callable[[], None], runs: int = RUNS) -> float:
    for _ in range(20):
        once()
    start = time.process_time()
    for _ in range(runs):
        once()
    return (time.process_time() - start) / (runs * 2) * 1e6


def scripted_turns_per_second(seconds: float = 2.0) -> float:
    script = parse_script(
        {
            "prompt": "order 55219?",
            "tools": {"get_order": {"returns": {"sku": "MUG-01"}}},
            "turns": [{"tool_call": "get_order", "args": {"order_id": "55219"}}, {"text": "Done."}],
        }
    )
    tools = script.tools()
    turns, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        result = donegate.run(script.prompt, model=ScriptedModel(script), tools=tools, max_steps=8)
        turns += result.model_calls
    return turns / (time.perf_counter() - start)


def main() -> None:
    rows: list[tuple[str, float]] = []
    for name, make in [
        ("sdk-only loop", sdk_only),
        ("donegate", with_donegate),
        ("pydantic-ai", with_pydantic_ai),
        ("openai-agents", with_openai_agents),
    ]:
        once = make()
        if once is None:
            print(f"{name:>14}: not installed (pip install it to compare)")
            continue
        rows.append((name, cpu_us_per_turn(once)))
    base = rows[0][1]
    for name, us in rows:
        print(f"{name:>14}: {us:8.1f} CPU us/turn  {us / base:5.2f}x the SDK-only loop")
    print("target: donegate <= 1.15x")
    print(f"ScriptedModel, no HTTP: {scripted_turns_per_second():,.0f} turns/s (target >= 20,000)")


if __name__ == "__main__":
    main()
