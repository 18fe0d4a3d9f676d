"""Latency turns: ``{latency: S}`` answers after S seconds, as a slow model does; no fault.

The waits are seen through the player's seams (`ScriptedModel.sleep`, `ScriptedModel.asleep`)
and the emulator's reply, never by a clock: these tests assert the wait asked for, not how long
anything took.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest

from donegate.errors import ScriptError
from donegate.messages import Ending, Message
from donegate.models.base import ModelRequest
from donegate.models.sdk import OpenAIChatModel
from donegate.testing.emulator import Emulator
from donegate.testing.player import ScriptedModel, sdk_client
from donegate.testing.script import Script, parse_script

TOOLS: dict[str, Any] = {"search": {"returns": []}}
SLOW = {"latency": 2, "tool_call": "search", "args": {"q": "x"}}


def script_of(*turns: Any) -> Script:
    return parse_script({"prompt": "p", "tools": TOOLS, "turns": list(turns)}, source="f.yaml")


def req() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("p"),))


def seamed(script: Script) -> tuple[ScriptedModel, list[float]]:
    """A player whose waits are recorded instead of taken."""
    player, waits = ScriptedModel(script), []
    player.sleep = waits.append

    async def asleep(seconds: float) -> None:
        waits.append(seconds)

    player.asleep = asleep
    return player, waits


# -- parsing ---------------------------------------------------------------------------------


def test_a_latency_turn_is_the_same_answer_and_no_fault() -> None:
    fast = {k: v for k, v in SLOW.items() if k != "latency"}
    slow, plain = script_of(SLOW, {"text": "ok"}), script_of(fast, {"text": "ok"})
    assert slow.turns == plain.turns
    assert (slow.faults, slow.latencies, plain.latencies) == ({}, {0: 2.0}, {})


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        ({"latency": 0, "text": "x"}, "f.yaml: turns[0].latency: expected a number of seconds > 0"),
        ({"latency": -1, "text": "x"}, "f.yaml: turns[0].latency: expected a number >= 0"),
        ({"latency": "2s", "text": "x"},
         "f.yaml: turns[0].latency: expected a number >= 0, got a string"),
        ({"latency": True, "text": "x"},
         "f.yaml: turns[0].latency: expected a number >= 0, got a boolean"),
        ({"latency": float("nan"), "text": "x"}, "f.yaml: turns[0].latency: "),
        ({"latency": 1}, "f.yaml: turns[0].latency: needs an answer"),
        ({"latency": 1, "delay": 1, "text": "x"},
         "f.yaml: turns[0].delay: cannot be combined with latency"),
        ({"latency": 1, "disconnect": True},
         "f.yaml: turns[0].disconnect: cannot be combined with latency"),
    ],
)  # fmt: skip
def test_bad_latency_is_one_line_naming_the_field(turn: dict[str, Any], message: str) -> None:
    with pytest.raises(ScriptError) as info:
        script_of(turn)
    text = str(info.value)
    assert text.startswith(message), text
    assert "\n" not in text


# -- the player ------------------------------------------------------------------------------


def test_the_player_waits_the_latency_then_answers() -> None:
    player, waits = seamed(script_of(SLOW, {"text": "ok"}))
    first = player.request(req())
    assert (first.ending, waits) == (Ending.TOOL_USE, [2.0])
    assert player.request(req()).text == "ok"
    assert waits == [2.0]  # the plain turn is answered at once
    player.assert_exhausted()


def test_the_async_player_awaits_the_latency_without_blocking() -> None:
    player, waits = seamed(script_of({"latency": 0.5, "text": "ok"}))
    player.sleep = lambda s: pytest.fail("the async path must not block on time.sleep")
    assert asyncio.run(player.arequest(req())).text == "ok"
    assert waits == [0.5]


def test_a_slow_error_turn_is_retried_and_each_attempt_waits() -> None:
    script = script_of({"latency": 1, "http_error": 503}, {"latency": 3, "text": "ok"})
    player, waits = seamed(script)
    assert player.request(req()).text == "ok"
    assert waits == [4.0]


def test_unused_latency_turns_say_so() -> None:
    player = ScriptedModel(script_of({"text": "a"}, {"latency": 2.5, "text": "b"}))
    player.request(req())
    with pytest.raises(AssertionError, match=r"turns\[1\]: latency 2.5s, complete: 'b'"):
        player.assert_exhausted()


def test_the_in_process_transport_waits_too() -> None:
    player, waits = seamed(script_of({"latency": 2, "text": "ok"}))
    model = OpenAIChatModel(sdk_client("openai-chat", player), "m")
    assert model.request(req()).text == "ok"
    assert waits == [2.0]


# -- the emulator ----------------------------------------------------------------------------


def test_the_emulator_holds_the_answer_for_the_latency() -> None:
    with Emulator(script_of({"latency": 2, "text": "ok"}, {"text": "fast"})) as emu:
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "p"}]})
        slow = emu.handle("POST", "/v1/chat/completions", body=body.encode())
        fast = emu.handle("POST", "/v1/chat/completions", body=body.encode())
        assert (slow.status, slow.delay, slow.disconnect) == (200, 2.0, False)
        assert json.loads(slow.body)["choices"][0]["message"]["content"] == "ok"
        assert fast.delay == 0.0
        assert [e.get("latency") for e in emu.requests] == [2.0, None]
        assert [e.get("fault") for e in emu.requests] == [None, None]


@pytest.mark.slow
def test_an_sdk_over_loopback_gets_the_slow_answer() -> None:
    """Served for real: the SDK waits the (short) latency out and reads the answer."""
    with Emulator(script_of({"latency": 0.1, "text": "slow"})) as emu:
        client = openai.OpenAI(api_key="k", base_url=emu.base_url + "/v1", max_retries=0)
        answer = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "p"}]
        )
        assert answer.choices[0].message.content == "slow"
        assert emu.requests[0].get("latency") == 0.1
        emu.assert_exhausted()
