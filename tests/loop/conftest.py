"""Run one script through the loop in every mode: direct, and each wire format over the real SDK.

A mode is ``direct`` (the player answers `Turn`s with no HTTP) or ``<api>/<json|sse>``: the
player renders each turn into that provider's HTTP response, the official SDK client receives it
through an ``httpx2.MockTransport``, and donegate's adapter classifies the raw body.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

import donegate
from donegate.events import Event, RunEnded
from donegate.loop import RunResult
from donegate.models.base import Model
from donegate.testing.player import ScriptedModel, sdk_client
from donegate.testing.script import Script, parse_script

APIS = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")
MODES = ("direct", *(f"{api}/{kind}" for api in APIS for kind in ("json", "sse")))


@dataclass
class Played:
    result: RunResult
    player: ScriptedModel
    script: Script
    events: list[Event]


def sdk_model(api: str, player: ScriptedModel) -> Model:
    from donegate.models.google import GeminiModel
    from donegate.models.sdk import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel

    client = sdk_client(api, player)
    if api == "openai-chat":
        return OpenAIChatModel(client, "gpt-4o-mini")
    if api == "openai-responses":
        return OpenAIResponsesModel(client, "gpt-4o-mini")
    if api == "anthropic-messages":
        return AnthropicModel(client, "claude-sonnet-4-5")
    return GeminiModel(client, "gemini-2.5-flash")


def play(data: dict[str, Any], mode: str, **kwargs: Any) -> Played:
    script = parse_script(data, source="inline")
    player = ScriptedModel(script)
    events: list[Event] = []
    options: dict[str, Any] = {
        "tools": script.tools(),
        "max_steps": script.max_steps,
        "system": script.system,
        "finish_tool": script.finish_tool,
    }
    options.update(kwargs)
    if mode == "direct":
        result = donegate.run(script.prompt, model=player, events=events.append, **options)
        return Played(result, player, script, events)
    api, kind = mode.split("/")
    model = sdk_model(api, player)
    if kind == "json":
        result = donegate.run(script.prompt, model=model, events=events.append, **options)
    else:

        async def consume() -> RunResult:
            async for event in donegate.stream(script.prompt, model=model, **options):
                events.append(event)
            last = events[-1]
            assert isinstance(last, RunEnded)
            return last.result

        result = asyncio.run(consume())
    return Played(result, player, script, events)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    """Every way a script can reach the loop."""
    return str(request.param)
