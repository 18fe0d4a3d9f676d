"""Fault turns: ``{delay: S}`` and ``{disconnect: true}``, parsed, played and served for real.

Direct mode and ``ScriptedModel.handler`` have no clock: a fault fails its attempt at once and
is retried like a 5xx. The emulator really holds the answer and really drops the connection, and
the official openai and anthropic SDKs, over loopback, retry and read the next turn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from donegate.errors import ScriptError
from donegate.messages import Ending, ErrorInfo, Message
from donegate.models.base import ModelRequest
from donegate.models.sdk import AnthropicModel, OpenAIChatModel
from donegate.testing.emulator import CONVERSATION_HEADER, Emulator
from donegate.testing.player import ScriptedModel, sdk_client
from donegate.testing.script import Fault, Script, describe_turn, parse_script

TOOLS: dict[str, Any] = {"search": {"returns": []}}
DROPPED = {"disconnect": True}
HELD = {"delay": 5, "text": "Too late."}  # every client below waits less than 5 s


def script_of(*turns: Any) -> Script:
    return parse_script({"prompt": "p", "tools": TOOLS, "turns": list(turns)}, source="f.yaml")


def req() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("p"),))


# -- parsing ---------------------------------------------------------------------------------


def test_a_disconnect_turn_is_a_fault_with_no_answer() -> None:
    script = script_of(DROPPED, {"text": "ok"})
    assert script.faults == {0: Fault(disconnect=True)}
    turn = script.turns[0]
    assert (turn.ending, turn.message.parts) == (Ending.ERROR, ())
    assert turn.error == ErrorInfo(type="APIConnectionError", message="Connection error.")
    assert turn.raw_reason == "APIConnectionError"


def test_a_delay_holds_the_answer_given_with_it() -> None:
    script = script_of({"delay": 1.5, "tool_call": "search", "args": {"q": "x"}}, {"text": "ok"})
    assert script.faults == {0: Fault(delay=1.5)}
    assert script.turns[0].tool_calls[0].arguments == {"q": "x"}
    slow_error = script_of({"delay": 0.2, "http_error": 503, "retry_after": 0.01})
    assert slow_error.faults == {0: Fault(delay=0.2)}
    assert slow_error.turns[0].error == ErrorInfo(status=503, retry_after=0.01)


def test_a_delay_with_no_answer_is_a_hang_then_a_drop() -> None:
    script = script_of({"delay": 3})
    assert script.faults == {0: Fault(delay=3.0, disconnect=True)}
    assert script.turns[0].error == ErrorInfo(type="APITimeoutError", message="Request timed out.")
    assert script_of({"delay": 3, "disconnect": True}).faults == script.faults


def test_fault_turns_are_described() -> None:
    script = script_of(DROPPED, {"delay": 3}, {"delay": 0.5, "text": "late"})
    described = [describe_turn(t, script.faults.get(i)) for i, t in enumerate(script.turns)]
    assert described == ["disconnect", "delay 3s, disconnect", "delay 0.5s, complete: 'late'"]
    player = ScriptedModel(script)
    with pytest.raises(AssertionError) as info:
        player.assert_exhausted()
    assert "  turns[0]: disconnect\n  turns[1]: delay 3s, disconnect\n" in str(info.value)


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        ({"disconnect": True, "text": "x"},
         "f.yaml: turns[0].text: cannot be combined with disconnect"),
        ({"delay": 1, "disconnect": True, "http_error": 500},
         "f.yaml: turns[0].http_error: cannot be combined with disconnect"),
        ({"disconnect": "yes"}, "f.yaml: turns[0].disconnect: expected true or false"),
        ({"disconnect": False}, "f.yaml: turns[0]: an empty turn"),
        ({"delay": 0, "text": "x"}, "f.yaml: turns[0].delay: expected a number of seconds > 0"),
        ({"delay": -1}, "f.yaml: turns[0].delay: expected a number >= 0"),
        ({"delay": "soon"}, "f.yaml: turns[0].delay: expected a number >= 0, got a string"),
        ({"delay": True}, "f.yaml: turns[0].delay: expected a number >= 0, got a boolean"),
        ({"delai": 1, "text": "x"}, "f.yaml: turns[0].delai: unknown key 'delai'"),
        ({"delay": 1, "retry_after": 1},
         "f.yaml: turns[0].retry_after: only applies to an http_error turn"),
    ],
)  # fmt: skip
def test_fault_errors_name_the_file_and_the_field(turn: dict[str, Any], message: str) -> None:
    with pytest.raises(ScriptError) as info:
        script_of(turn)
    assert str(info.value).startswith(message), str(info.value)


@settings(deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["delay", "disconnect", "text", "http_error", "tool_call", "ending"]),
            st.sampled_from([True, False, 0, 0.5, 3, -1, "x", 503, "search", "complete", None]),
            max_size=3,
        ),
        min_size=1,
        max_size=3,
    )
)
def test_any_fault_data_parses_or_raises_a_script_error(raw: list[dict[str, Any]]) -> None:
    try:
        script = parse_script({"prompt": "p", "tools": TOOLS, "turns": raw}, source="s.yaml")
    except ScriptError as exc:
        assert str(exc).startswith("s.yaml: ")
        return
    for index, fault in script.faults.items():
        assert fault.delay > 0 or fault.disconnect
        if fault.disconnect:
            assert script.turns[index] == fault.error_turn()


# -- direct mode and the in-process handler --------------------------------------------------


def test_the_player_retries_faults_like_a_5xx() -> None:
    script = script_of(DROPPED, HELD, {"text": "ok"})
    player = ScriptedModel(script)
    turn = player.request(req())
    assert (turn.text, player.calls) == ("ok", 3)
    player.assert_exhausted()


@pytest.mark.parametrize(
    ("fault", "error_type"), [(DROPPED, "APIConnectionError"), (HELD, "APITimeoutError")]
)
def test_when_retries_are_spent_the_fault_is_an_error_turn(
    fault: dict[str, Any], error_type: str
) -> None:
    player = ScriptedModel(script_of(fault, fault, fault, {"text": "never"}))
    turn = player.request(req())
    assert turn.ending is Ending.ERROR and turn.error is not None
    assert (turn.error.status, turn.error.type) == (None, error_type)
    assert player.calls == 3 and len(player.unused_turns) == 1


@pytest.mark.parametrize(
    ("fault", "raised"),
    [(DROPPED, httpx2.RemoteProtocolError), (HELD, httpx2.ReadTimeout)],
)
def test_the_handler_raises_what_httpx_raises_for_the_fault(
    fault: dict[str, Any], raised: type[Exception]
) -> None:
    handle = ScriptedModel(script_of(fault)).handler("openai-chat")
    body = b'{"model": "m", "messages": [{"role": "user", "content": "p"}]}'
    with pytest.raises(raised):
        handle(httpx2.Request("POST", "http://x/v1/chat/completions", content=body))


@pytest.mark.parametrize("api", ["openai-chat", "anthropic-messages"])
def test_the_sdks_retry_in_process_faults_as_the_player_does(api: str) -> None:
    script = script_of(DROPPED, {"text": "ok"})
    over_http, direct = ScriptedModel(script), ScriptedModel(script)
    client = sdk_client(api, over_http)
    model = OpenAIChatModel(client, "m") if api == "openai-chat" else AnthropicModel(client, "m")
    assert model.request(req()).text == direct.request(req()).text == "ok"
    assert over_http.calls == direct.calls == 2
    over_http.assert_exhausted()


# -- the emulator, over loopback -------------------------------------------------------------


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


def ask(sdk: str, emu: Emulator, *, timeout: float, retries: int = 2, stream: bool = False) -> str:
    """One question through the real SDK client; the text answered."""
    messages: Any = [{"role": "user", "content": "p"}]
    if sdk == "anthropic":
        an = anthropic.Anthropic(
            api_key="k", base_url=emu.base_url, timeout=timeout, max_retries=retries
        )
        if stream:
            with an.messages.stream(model="m", max_tokens=10, messages=messages) as s:
                return s.get_final_text()
        block = an.messages.create(model="m", max_tokens=10, messages=messages).content[0]
        assert block.type == "text"
        return block.text
    oa = openai.OpenAI(
        api_key="k", base_url=emu.base_url + "/v1", timeout=timeout, max_retries=retries
    )
    if stream:
        chunks = oa.chat.completions.create(model="m", messages=messages, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return oa.chat.completions.create(model="m", messages=messages).choices[0].message.content or ""


def served(emu: Emulator) -> list[tuple[int, Any, Any]]:
    """(turn, status, fault) of each request the emulator received."""
    return [(e["turn"], e["status"], e.get("fault")) for e in emu.requests]


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_a_dropped_connection_is_retried_by_the_sdk(emulator: Emulator, sdk: str) -> None:
    emulator.load(script_of(DROPPED, {"text": "ok"}))
    assert ask(sdk, emulator, timeout=5) == "ok"
    assert served(emulator) == [(0, None, {"delay": 0.0, "disconnect": True}), (1, 200, None)]
    emulator.assert_exhausted()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_an_answer_held_past_the_timeout_is_retried(
    emulator: Emulator, sdk: str, stream: bool
) -> None:
    emulator.load(script_of(HELD, {"text": "ok"}))
    started = time.monotonic()
    assert ask(sdk, emulator, timeout=0.3, stream=stream) == "ok"
    assert time.monotonic() - started < 4  # the client gave up; it did not wait the 5 s out
    assert served(emulator) == [(0, 200, {"delay": 5.0, "disconnect": False}), (1, 200, None)]
    emulator.assert_exhausted()


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_a_delay_within_the_timeout_is_only_slow(emulator: Emulator, sdk: str) -> None:
    emulator.load(script_of({"delay": 0.2, "text": "slow"}))
    started = time.monotonic()
    assert ask(sdk, emulator, timeout=5) == "slow"
    assert time.monotonic() - started >= 0.2
    assert len(emulator.requests) == 1


def test_faults_outlasting_the_retries_reach_the_model_as_an_error_turn(
    emulator: Emulator,
) -> None:
    emulator.load(script_of(DROPPED, {"delay": 5}, DROPPED), name="anthropic")
    emulator.load(script_of({"delay": 5}, DROPPED, {"delay": 5}), name="openai")
    an = anthropic.Anthropic(
        api_key="k", base_url=emulator.base_url, timeout=0.3, max_retries=2,
        default_headers={CONVERSATION_HEADER: "anthropic"},
    )  # fmt: skip
    oa = openai.OpenAI(
        api_key="k", base_url=emulator.base_url + "/v1", timeout=0.3, max_retries=2,
        default_headers={CONVERSATION_HEADER: "openai"},
    )  # fmt: skip
    with ThreadPoolExecutor(2) as pool:  # concurrently: each spends ~2 s in the SDK's backoff
        dropping = pool.submit(AnthropicModel(an, "m").request, req())
        timed_out = OpenAIChatModel(oa, "m").request(req())
        dropped = dropping.result()
    assert dropped.ending is timed_out.ending is Ending.ERROR
    assert dropped.error is not None and dropped.error.type == "APIConnectionError"
    assert timed_out.error is not None and timed_out.error.type == "APITimeoutError"
    # The direct player ends the same scripts with the same error turns, after as many calls.
    for conv in emulator.conversations:
        assert conv.model.script is not None
        direct = ScriptedModel(conv.model.script)
        turn = direct.request(req())
        assert turn.error is not None
        assert turn.error.type in ("APIConnectionError", "APITimeoutError")
        assert direct.calls == conv.model.calls == 3
    emulator.assert_exhausted()


def test_stopping_the_emulator_drops_a_held_answer_at_once() -> None:
    emu = Emulator(script_of({"delay": 30, "text": "never"})).start()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            ask("openai", emu, timeout=20, retries=0)
        except openai.APIConnectionError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 5
    while not emu.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    emu.stop()
    caller.join(5)
    assert time.monotonic() - started < 3
    assert len(errors) == 1 and isinstance(errors[0].__cause__, httpx2.RemoteProtocolError)
