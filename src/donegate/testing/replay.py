"""Replay a script through the loop, directly or over a provider's wire format and its SDK.

As strict as the player: a replay fails when turns are left unplayed (unless the script's
``expect`` declares ``unused_turns``) and when the script runs out, with the player's own
message, whichever way the turns were served.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import donegate
from donegate.errors import ScriptExhausted, UserError
from donegate.events import RunEnded
from donegate.messages import Ending, ErrorInfo, Message, Turn
from donegate.models.base import Model, ModelRequest
from donegate.results import RunResult
from donegate.testing.invariants import transcript_problems
from donegate.testing.player import SDK_APIS, ScriptedModel, sdk_client
from donegate.testing.script import Script

__all__ = ["Replay", "replay", "sdk_model"]


def sdk_model(api: str, player: ScriptedModel) -> Model:
    """donegate's SDK-backed model for `api`, wired to `player` over a mock HTTP transport."""
    from donegate.models.google import GeminiModel
    from donegate.models.sdk import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel

    if api not in SDK_APIS:
        raise UserError(f"--api must be one of {', '.join(SDK_APIS)}, got {api!r}")
    client = sdk_client(api, player)
    if api == "openai-chat":
        return OpenAIChatModel(client, "gpt-4o-mini")
    if api == "openai-responses":
        return OpenAIResponsesModel(client, "gpt-4o-mini")
    if api == "anthropic-messages":
        return AnthropicModel(client, "claude-sonnet-4-5")
    return GeminiModel(client, "gemini-2.5-flash")


@dataclass(frozen=True, kw_only=True, slots=True)
class Replay:
    """A replayed script: the run, what the provider saw, and what failed."""

    result: RunResult
    """The loop's result."""
    player: ScriptedModel
    """The player (its requests are what the provider received)."""
    failures: list[str] = field(default_factory=list)
    """Broken invariants, unmet expectations and the player's problems; empty when all hold."""
    warnings: list[str] = field(default_factory=list)
    """What held but looks wrong: turns calling a tool the run did not offer."""

    def summary(self) -> dict[str, Any]:
        """The ``--json`` object of ``donegate replay``."""
        output = self.result.output
        if hasattr(output, "model_dump"):
            output = output.model_dump(mode="json")
        return {
            "status": self.result.status.value,
            "text": self.result.text,
            "output": output,
            "model_calls": self.player.calls,
            "tool_calls": self.result.tool_counts,
            "unused_turns": len(self.player.unused_turns),
            "ending": self.result.ending.value if self.result.ending else None,
            "reason": self.result.reason,
            "failures": self.failures,
            "warnings": self.warnings,
        }


def replay(
    script: Script, *, api: str | None = None, stream: bool = False, max_steps: int | None = None
) -> Replay:
    """Run `script` and check the transcript invariants, its ``expect`` and the player's verdict.

    Raises `ScriptError` when the script has no prompt (only ``donegate run`` supplies one).
    """
    prompt = script.require_prompt("a replay")
    player = ScriptedModel(script)
    model: Model = _OutOfTurns(player) if api is None else sdk_model(api, player)
    options: dict[str, Any] = {
        "tools": script.tools(),
        "max_steps": max_steps if max_steps is not None else script.max_steps,
        "system": script.system,
        "finish_tool": script.finish_tool,
    }
    if stream:

        async def consume() -> RunResult:
            async for event in donegate.stream(prompt, model=model, **options):
                if isinstance(event, RunEnded):
                    return event.result
            raise AssertionError("the event stream ended without RunEnded")

        result = asyncio.run(consume())
    else:
        result = donegate.run(prompt, model=model, **options)
    done = Replay(result=result, player=player)
    done.failures.extend(transcript_problems(result.transcript, prompt=prompt))
    done.failures.extend(_unmet(script, done.summary()))
    done.failures.extend(player.problems(unused=script.expect.unused_turns is None))
    done.warnings.extend(player.warnings)
    return done


class _OutOfTurns:
    """The direct player, with a call past the script's end answered as an HTTP replay answers it.

    Over HTTP that call is a 500 the SDK reports as an error turn; raising instead would leave no
    run to report. The player has recorded `ScriptExhausted` either way, so the replay fails on
    the player's message.
    """

    def __init__(self, player: ScriptedModel) -> None:
        self.player = player

    @property
    def name(self) -> str:
        return self.player.name

    def request(self, request: ModelRequest) -> Turn:
        try:
            return self.player.request(request)
        except ScriptExhausted as exc:
            return _exhausted(exc)

    async def arequest(self, request: ModelRequest) -> Turn:
        return self.request(request)

    async def astream(self, request: ModelRequest) -> AsyncIterator[str | Turn]:
        try:
            async for item in self.player.astream(request):
                yield item
        except ScriptExhausted as exc:  # raised before anything is yielded
            yield _exhausted(exc)


def _exhausted(exc: ScriptExhausted) -> Turn:
    return Turn(
        message=Message(role="assistant", parts=()),
        ending=Ending.ERROR,
        detail=str(exc),
        error=ErrorInfo(type="ScriptExhausted", status=500, message=str(exc)),
    )


def _unmet(script: Script, got: dict[str, Any]) -> list[str]:
    expect = script.expect
    wanted: dict[str, Any] = {
        "status": expect.status,
        "model_calls": expect.model_calls,
        "text": expect.text,
        "output": expect.output,
        "ending": expect.ending,
        "unused_turns": expect.unused_turns,
    }
    failures = [
        f"expect.{key}: wanted {value!r}, got {got[key]!r}"
        for key, value in wanted.items()
        if value is not None and _value(value) != got[key]
    ]
    for name, count in expect.tool_calls.items():
        if got["tool_calls"].get(name, 0) != count:
            failures.append(
                f"expect.tool_calls.{name}: wanted {count}, got {got['tool_calls'].get(name, 0)}"
            )
    return failures


def _value(value: Any) -> Any:
    return getattr(value, "value", value)
