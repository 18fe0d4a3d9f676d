"""CPU microseconds per model turn of an agent loop, against hand-written loops over the same SDK.

One run: ``python bench/loop_overhead.py``. Every loop drives the official ``openai`` SDK through
a zero-latency ``httpx2.MockTransport`` over the same conversation (N-1 tool-call turns, each
answered by the same tool, then a text answer) at N = 2, 10, 50 and 200 turns, so what differs
is the loop's own work, and how it grows with the history. The loops:

- raw SDK path (the like-for-like baseline): a hand-written loop over exactly the SDK path
  donegate uses, ``client.post("/chat/completions", body=..., cast_to=httpx2.Response)``, that
  sends the same requests (same messages, same tools), parses the JSON body, runs the tool on the
  parsed arguments and appends the assistant message and the tool result;
- typed SDK loop: the same loop written the usual way, ``client.chat.completions.create`` with
  the SDK's request-parameter conversion and typed response models;
- donegate: ``donegate.run`` with an `OpenAIChatModel` over the same client;
- pydantic-ai, openai-agents: measured when installed, for the benchmark only
  (``pip install "pydantic-ai-slim[openai]" openai-agents``).

The cases run interleaved (every loop at every length, three rounds), CPU time (``process_time``),
median of the three. Target: donegate <= 1.15x the raw SDK path at 2 and at 200 turns. Also: turns
per second through `ScriptedModel` with no HTTP (target >= 20,000).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx2
import openai

import donegate
from donegate.models.sdk import OpenAIChatModel
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script

LENGTHS = (2, 10, 50, 200)
"""Model turns per conversation."""
ROUNDS = 3
TURNS_PER_CASE = 1_200
"""Model turns measured per case and round (whole conversations; at least one)."""
PEER_TURNS_PER_CASE = 200


def tool_turn(i: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{i}",
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
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {
                                "name": "get_order",
                                "arguments": json.dumps({"order_id": str(55219 + i)}),
                            },
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


TEXT_TURN = {
    "id": "chatcmpl-last",
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


def transport(turns: int) -> httpx2.MockTransport:
    """Answers a conversation of `turns` model turns, over and over."""
    bodies = [json.dumps(tool_turn(i)).encode() for i in range(turns - 1)]
    bodies.append(json.dumps(TEXT_TURN).encode())
    state = {"n": 0}

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = bodies[state["n"] % turns]
        state["n"] += 1
        return httpx2.Response(200, content=body, headers={"content-type": "application/json"})

    return httpx2.MockTransport(handle)


def client(turns: int) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", http_client=httpx2.Client(transport=transport(turns)))


def async_client(turns: int) -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(transport=transport(turns))
    return openai.AsyncOpenAI(api_key="k", http_client=http)


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


def raw_sdk_path(turns: int) -> Callable[[], None]:
    """The like-for-like baseline: donegate's own SDK path, written by hand."""
    sdk = client(turns)

    def once() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "order 55219?"}]
        while True:
            response = sdk.post(
                "/chat/completions",
                body={"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS_SCHEMA},
                cast_to=httpx2.Response,
            )
            choice = response.json()["choices"][0]
            message = choice["message"]
            calls = message.get("tool_calls")
            if calls:
                messages.append(
                    {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
                )
                for call in calls:
                    result = get_order(**json.loads(call["function"]["arguments"]))
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
                    )
                continue
            assert choice["finish_reason"] == "stop" and message["content"]
            return

    return once


def typed_sdk_loop(turns: int) -> Callable[[], None]:
    """The loop as usually written: ``chat.completions.create`` and typed response models."""
    sdk = client(turns)

    def once() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "order 55219?"}]
        while True:
            response = sdk.chat.completions.create(
                model="gpt-4o-mini",
                messages=messages,  # type: ignore[arg-type]
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


def with_donegate(turns: int) -> Callable[[], None]:
    model = OpenAIChatModel(client(turns), "gpt-4o-mini")
    tools = [donegate.Tool.from_function(get_order)]

    def once() -> None:
        result = donegate.run("order 55219?", model=model, tools=tools, max_steps=turns + 1)
        assert result.status == "complete", result.reason
        assert result.model_calls == turns, result.model_calls

    return once


def with_pydantic_ai(turns: int) -> Callable[[], None] | None:
    try:
        from pydantic_ai import Agent, UsageLimits
        from pydantic_ai.models.openai import OpenAIChatModel as PAIModel
        from pydantic_ai.providers.openai import OpenAIProvider
    except ImportError:
        return None
    provider = OpenAIProvider(openai_client=async_client(turns))
    agent = Agent(PAIModel("gpt-4o-mini", provider=provider))
    agent.tool_plain(get_order)
    loop = asyncio.new_event_loop()

    def once() -> None:
        # the default limit (50 requests) would end the 200-turn conversation early
        limits = UsageLimits(request_limit=turns + 1)
        result = loop.run_until_complete(agent.run("order 55219?", usage_limits=limits))
        assert result.output

    return once


def with_openai_agents(turns: int) -> Callable[[], None] | None:
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
    agent = Agent(
        name="bench",
        tools=[function_tool(get_order)],
        model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=async_client(turns)),
    )
    loop = asyncio.new_event_loop()

    def once() -> None:
        result = loop.run_until_complete(Runner.run(agent, "order 55219?", max_turns=turns + 1))
        assert result.final_output

    return once


LOOPS: list[tuple[str, Callable[[int], Callable[[], None] | None], int]] = [
    ("raw SDK path", raw_sdk_path, TURNS_PER_CASE),
    ("donegate", with_donegate, TURNS_PER_CASE),
    ("typed SDK loop", typed_sdk_loop, PEER_TURNS_PER_CASE),
    ("pydantic-ai", with_pydantic_ai, PEER_TURNS_PER_CASE),
    ("openai-agents", with_openai_agents, PEER_TURNS_PER_CASE),
]
BASELINE = "raw SDK path"


def cpu_us_per_turn(once: Callable[[], None], turns: int, budget: int) -> float:
    """CPU microseconds per model turn over whole conversations (about `budget` turns)."""
    runs = max(1, budget // turns)
    start = time.process_time()
    for _ in range(runs):
        once()
    return (time.process_time() - start) / (runs * turns) * 1e6


def measure() -> dict[tuple[str, int], float]:
    """Median CPU us/turn per (loop, length), the cases interleaved round by round."""
    cases: dict[tuple[str, int], tuple[Callable[[], None], int]] = {}
    for name, make, budget in LOOPS:
        for turns in LENGTHS:
            once = make(turns)
            if once is None:
                break
            once()  # warm up: imports, caches, the SDK's lazy setup
            cases[name, turns] = (once, budget)
    samples: dict[tuple[str, int], list[float]] = {key: [] for key in cases}
    for _ in range(ROUNDS):
        for turns in LENGTHS:
            for name, _make, _budget in LOOPS:
                if (name, turns) in cases:
                    once, budget = cases[name, turns]
                    samples[name, turns].append(cpu_us_per_turn(once, turns, budget))
    return {key: statistics.median(values) for key, values in samples.items()}


def scripted_turns_per_second(seconds: float = 2.0) -> float:
    script = parse_script(
        {
            "prompt": "order 55219?",
            "tools": {"get_order": {"returns": {"sku": "MUG-01"}}},
            "turns": [{"tool_call": "get_order", "args": {"order_id": "55219"}}, {"text": "Done."}],
        }
    )
    tools = script.tools()
    turns, start = 0, time.process_time()  # CPU time, like the loops above
    while time.process_time() - start < seconds:
        result = donegate.run(script.prompt, model=ScriptedModel(script), tools=tools, max_steps=8)
        turns += result.model_calls
    return turns / (time.process_time() - start)


def main() -> None:
    figures = measure()
    names = [name for name, _make, _budget in LOOPS]
    for name in names:
        if (name, LENGTHS[0]) not in figures:
            print(f"{name:>14}: not installed (pip install it to compare)")
    print(f"CPU us per model turn, median of {ROUNDS} interleaved rounds (x = / {BASELINE})")
    print(f"{'turns':>14}" + "".join(f"{n:>18}" for n in LENGTHS))
    for name in names:
        if (name, LENGTHS[0]) not in figures:
            continue
        cells = []
        for turns in LENGTHS:
            us = figures[name, turns]
            cells.append(f"{us:9.1f} {us / figures[BASELINE, turns]:5.2f}x  ")
        print(f"{name:>14}" + "".join(f"{c:>18}" for c in cells))
    for turns in (LENGTHS[0], LENGTHS[-1]):
        ratio = figures["donegate", turns] / figures[BASELINE, turns]
        verdict = "ok" if ratio <= 1.15 else "MISSED"
        print(
            f"target: donegate <= 1.15x the raw SDK path at {turns} turns: {ratio:.2f}x {verdict}"
        )
    print(f"ScriptedModel, no HTTP: {scripted_turns_per_second():,.0f} turns/s (target >= 20,000)")


if __name__ == "__main__":
    main()
