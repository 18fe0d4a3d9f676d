"""The strict player: direct, and over HTTP through the official SDK clients."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from donegate.errors import ScriptExhausted, UnsupportedTurn, UserError
from donegate.events import RunEnded
from donegate.loop import RunResult
from donegate.messages import Ending, Message, ToolResult, Turn
from donegate.models.base import Model, ModelRequest, ToolSpec
from donegate.run import run, stream
from donegate.testing.player import ScriptedModel, is_retryable, sdk_client
from donegate.testing.script import Script, StubTool, load_script, parse_script

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
ALL_SCRIPTS = sorted(SCRIPTS.glob("*.yaml"))


def script_of(*turns: Any, tools: dict[str, Any] | None = None) -> Script:
    return parse_script(
        {"prompt": "p", "tools": tools or {"search": {"returns": []}}, "turns": list(turns)},
        source="t.yaml",
    )


def req(text: str = "p") -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user(text),))


# -- direct mode -----------------------------------------------------------------------------


def test_plays_turns_in_order_and_records_every_request() -> None:
    script = script_of({"tool_call": "search", "args": {"q": "x"}}, {"text": "done"})
    player = ScriptedModel(script)
    first, second = req("a"), req("b")
    assert player.request(first) is script.turns[0]
    assert player.request(second) is script.turns[1]
    assert player.requests == [first, second]
    assert player.calls == 2
    assert player.unused_turns == ()
    player.assert_exhausted()


def test_it_is_a_model() -> None:
    player = ScriptedModel(SCRIPTS / "refund.yaml", name="script:refund")
    assert isinstance(player, Model)
    assert player.name == "script:refund"
    assert player.source == str(SCRIPTS / "refund.yaml")
    assert len(player.turns) == 4


def test_an_extra_call_raises_with_the_exact_message() -> None:
    player = ScriptedModel(script_of({"text": "one"}, {"text": "two"}))
    player.request(req())
    player.request(req())
    with pytest.raises(ScriptExhausted) as info:
        player.request(req())
    assert str(info.value) == "model called 3 times but script has 2 turns"
    assert (info.value.calls, info.value.turns) == (3, 2)
    assert player.calls == 3
    with pytest.raises(AssertionError, match="model called 3 times but script has 2 turns"):
        player.assert_exhausted()


def test_unused_turns_are_reported() -> None:
    script = script_of(
        {"tool_call": "search", "args": {"q": "x"}},
        {"tool_call": "search", "args": {"q": "y"}},
        {"text": "Found it."},
    )
    player = ScriptedModel(script)
    player.request(req())
    assert player.unused_turns == script.turns[1:]
    with pytest.raises(AssertionError) as info:
        player.assert_exhausted()
    assert str(info.value) == (
        "t.yaml: 2 unused turns: model called 1 time but script has 3 turns\n"
        "  turns[1]: tool_use: search(c2)\n"
        "  turns[2]: complete: 'Found it.'"
    )


def test_a_call_to_a_tool_not_offered_is_served_and_warned_once_per_turn() -> None:
    script = parse_script(
        {"turns": [{"tool_call": "Bash", "args": {"command": "ls"}}, {"text": "done"}]},
        source="t.yaml",
    )
    player = ScriptedModel(script)
    served = player.request(req())
    assert [c.name for c in served.tool_calls] == ["Bash"]
    assert player.warnings == [
        "t.yaml: turns[0]: calls 'Bash', a tool the request did not offer (offered: no "
        "tools); served as scripted"
    ]
    player.request(req())
    player.assert_exhausted()  # a warning is not a failure


def test_a_call_the_request_offers_is_not_warned_about() -> None:
    player = ScriptedModel(parse_script({"turns": [{"tool_call": "Bash"}]}))
    offered = ModelRequest(model="m", messages=(Message.user("p"),), tools=(ToolSpec(name="Bash"),))
    player.request(offered)
    assert player.warnings == []


def test_problems_leave_out_unused_turns_when_asked() -> None:
    player = ScriptedModel(script_of({"text": "one"}, {"text": "two"}))
    player.request(req())
    assert player.problems(unused=False) == []
    assert player.problems()[0].startswith("t.yaml: 1 unused turn:")


def test_plain_turns_play_too() -> None:
    turns = script_of({"text": "hi"}).turns
    player = ScriptedModel(list(turns))
    assert player.script is None and player.source is None
    assert player.request(req()).text == "hi"
    player.assert_exhausted()


def test_a_retryable_http_error_is_retried_by_the_player() -> None:
    player = ScriptedModel(script_of({"http_error": 529}, {"text": "ok"}))
    request = req()
    turn = player.request(request)
    assert (turn.ending, turn.text) == (Ending.COMPLETE, "ok")
    assert player.calls == 2
    assert player.requests == [request, request]


def test_when_retries_are_spent_the_error_turn_is_returned() -> None:
    script = script_of(
        {"http_error": 503}, {"http_error": 429}, {"http_error": 500, "message": "boom"},
        {"text": "too late"},
    )  # fmt: skip
    player = ScriptedModel(script)
    turn = player.request(req())
    assert turn is script.turns[2]
    assert turn.ending is Ending.ERROR and turn.error is not None
    assert (turn.error.status, turn.error.message) == (500, "boom")
    assert player.calls == 3
    assert player.unused_turns == script.turns[3:]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_a_non_retryable_error_is_returned_at_once(status: int) -> None:
    player = ScriptedModel(script_of({"http_error": status}, {"text": "never"}))
    assert player.request(req()).error is not None
    assert player.calls == 1


def test_max_retries_zero_returns_the_first_error() -> None:
    player = ScriptedModel(script_of({"http_error": 529}, {"text": "x"}), max_retries=0)
    assert player.request(req()).ending is Ending.ERROR
    assert player.calls == 1


def test_an_error_ending_without_a_status_is_not_retried() -> None:
    player = ScriptedModel(script_of({"text": "half", "ending": "error"}, {"text": "x"}))
    assert player.request(req()).ending is Ending.ERROR
    assert player.calls == 1


def test_retrying_into_the_end_of_the_script_raises() -> None:
    player = ScriptedModel(script_of({"http_error": 529}))
    with pytest.raises(ScriptExhausted, match="model called 2 times but script has 1 turn"):
        player.request(req())


@pytest.mark.parametrize(
    ("status", "retried"),
    [(408, True), (409, True), (429, True), (500, True), (529, True), (599, True),
     (400, False), (404, False), (413, False), (None, False)],
)  # fmt: skip
def test_is_retryable(status: int | None, retried: bool) -> None:
    assert is_retryable(status) is retried


async def test_astream_yields_text_pieces_then_the_turn() -> None:
    text = "I've started a refund of EUR 14.99 for order 55219."
    player = ScriptedModel(script_of({"text": text}))
    items = [item async for item in player.astream(req())]
    *pieces, last = items
    assert isinstance(last, Turn) and last.text == text
    assert all(isinstance(p, str) for p in pieces)
    assert 1 < len(pieces) <= 3
    assert "".join(str(p) for p in pieces) == text


async def test_astream_of_a_tool_call_yields_only_the_turn() -> None:
    player = ScriptedModel(script_of({"tool_call": "search"}))
    assert [type(i) for i in [i async for i in player.astream(req())]] == [Turn]


async def test_arequest() -> None:
    player = ScriptedModel(script_of({"http_error": 429}, {"text": "ok"}))
    assert (await player.arequest(req())).text == "ok"
    assert player.calls == 2


# -- the loop, directly ----------------------------------------------------------------------


def test_the_refund_conversation_runs_to_completion() -> None:
    """Seed 004's assertions, on the transcript the loop built."""
    script = load_script(SCRIPTS / "refund.yaml")
    player = ScriptedModel(script)
    tools = {t.name: t for t in script.tools()}
    result = run(
        script.prompt, model=player, tools=list(tools.values()), system=script.system,
        max_steps=script.max_steps,
    )  # fmt: skip
    assert result.status == "complete"
    assert player.calls == 4
    player.assert_exhausted()
    assert [len(t.calls) for t in tools.values()] == [1, 1, 1]

    last = player.requests[-1].messages
    call_ids = [c.id for m in last if m.role == "assistant" for c in m.tool_calls]
    result_ids = [r.call_id for m in last if m.role == "tool" for r in m.results]
    assert call_ids == result_ids == ["c1", "c2", "c3"]
    # each result comes right after the assistant message that asked for it
    for i, m in enumerate(last):
        if m.role == "tool":
            assert [r.call_id for r in m.results] == [c.id for c in last[i - 1].tool_calls]
    users = [i for i, m in enumerate(last) if m.role == "user"]
    assert users == [1] and last[0].role == "system"
    # the dependent call used what get_order returned
    policy_call = player.requests[2].messages[-2].tool_calls[0]
    order_result = player.requests[1].messages[-1].results[0]
    assert policy_call.arguments is not None
    assert policy_call.arguments["sku"] == "MUG-01"
    assert '"sku": "MUG-01"' in order_result.content


def test_same_tool_twice_pairs_each_result_with_its_own_call() -> None:
    script = load_script(SCRIPTS / "same_tool_twice.yaml")
    player = ScriptedModel(script)
    (weather,) = script.tools()
    run(script.prompt, model=player, tools=[weather], max_steps=script.max_steps)
    results: tuple[ToolResult, ...] = player.requests[-1].messages[-1].results
    assert [r.call_id for r in results] == ["w_paris", "w_london"]
    by_id = {r.call_id: r.content for r in results}
    paris_args = weather.calls.index({"city": "Paris"})
    assert ("Paris" in by_id["w_paris"]) == (paris_args == 0)


def check_expect(script: Script, result: RunResult, player: ScriptedModel,
                 tools: list[StubTool]) -> list[str]:  # fmt: skip
    """The script's expectations that the run did not meet (model_calls counts requests)."""
    e = script.expect
    counts = {t.name: len(t.calls) for t in tools}
    got: dict[str, Any] = {
        "status": result.status.value,
        "model_calls": player.calls,
        "text": result.text,
        "output": result.output,
        "ending": result.ending.value if result.ending else None,
        "unused_turns": len(player.unused_turns),
    }
    problems = [
        f"{key}: expected {getattr(e, key)!r}, got {value!r}"
        for key, value in got.items()
        if getattr(e, key) is not None and getattr(e, key) != value
    ]
    problems += [
        f"tool_calls.{name}: expected {n}, got {counts.get(name)}"
        for name, n in e.tool_calls.items()
        if counts.get(name) != n
    ]
    return problems


def replay(script: Script, model: Any, *, streamed: bool, model_name: str | None = None,
           player: ScriptedModel) -> list[str]:  # fmt: skip
    tools = script.tools()
    kwargs: dict[str, Any] = dict(
        model=model, model_name=model_name, tools=tools, system=script.system,
        max_steps=script.max_steps, finish_tool=script.finish_tool,
    )  # fmt: skip
    if streamed:

        async def go() -> RunResult:
            events = [e async for e in stream(script.prompt, **kwargs)]
            assert isinstance(events[-1], RunEnded)
            return events[-1].result

        result = asyncio.run(go())
    else:
        result = run(script.prompt, **kwargs)
    return check_expect(script, result, player, tools)


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("path", ALL_SCRIPTS, ids=lambda p: p.stem)
def test_every_script_meets_its_expectations_directly(path: Path, streamed: bool) -> None:
    script = load_script(path)
    player = ScriptedModel(script)
    assert replay(script, player, streamed=streamed, player=player) == []


# -- HTTP mode: the official SDKs parse what the wire formats render -------------------------


def test_openai_chat_through_the_sdk() -> None:
    script = script_of(
        {"tool_calls": [{"tool": "search", "args": {"q": "x"}}, {"tool": "search", "id": "k"}]},
        {"text": "The refund has been", "ending": "truncated"},
        {"text": "bad", "ending": "filtered"},
        {"text": "Found one result.", "usage": {"input_tokens": 12, "output_tokens": 4}},
    )
    player = ScriptedModel(script)
    client = sdk_client("openai-chat", player)
    messages: Any = [{"role": "user", "content": "find x"}]
    tools: Any = [{"type": "function", "function": {"name": "search", "parameters": {}}}]

    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls] == [
        ("c1", "search", '{"q":"x"}'),
        ("k", "search", "{}"),
    ]
    reasons = [
        client.chat.completions.create(model="gpt-4o-mini", messages=messages).choices[0]
        for _ in range(3)
    ]
    assert [(c.finish_reason, c.message.content) for c in reasons] == [
        ("length", "The refund has been"),
        ("content_filter", "bad"),
        ("stop", "Found one result."),
    ]
    player.assert_exhausted()
    assert player.bodies[0]["model"] == "gpt-4o-mini"
    assert player.bodies[0]["tools"] == tools
    assert player.requests[0].messages == (Message.user("find x"),)
    assert [t.name for t in player.requests[0].tools] == ["search"]
    assert not player.requests[0].stream


def test_openai_chat_streams_through_the_sdk() -> None:
    text = "I've started a refund of EUR 14.99 for order 55219."
    player = ScriptedModel(script_of({"tool_call": "search", "args": {"q": "x"}}, {"text": text}))
    client = sdk_client("openai-chat", player)
    messages: Any = [{"role": "user", "content": "hi"}]
    chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True))
    args = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    )
    assert args == '{"q":"x"}'
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True))
    deltas = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(deltas) > 1
    assert "".join(deltas) == text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert player.requests[0].stream and player.bodies[0]["stream"] is True
    player.assert_exhausted()


def test_the_sdk_retries_an_http_error_as_the_player_does() -> None:
    script = load_script(SCRIPTS / "http_error_then_text.yaml")
    over_http, direct = ScriptedModel(script), ScriptedModel(script)
    client = sdk_client("openai-chat", over_http)
    messages: Any = [{"role": "user", "content": "hi"}]
    answer = client.chat.completions.create(model="m", messages=messages)
    assert answer.choices[0].message.content == direct.request(req()).text
    assert over_http.calls == direct.calls == 2


def test_when_the_sdk_gives_up_it_saw_as_many_calls_as_the_player() -> None:
    import openai

    script = script_of(*[{"http_error": 529, "retry_after": 0.01}] * 3, {"text": "late"})
    over_http, direct = ScriptedModel(script), ScriptedModel(script)
    with pytest.raises(openai.InternalServerError) as info:
        sdk_client("openai-chat", over_http).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert info.value.status_code == 529
    assert direct.request(req()).error is not None
    assert over_http.calls == direct.calls == 3


def test_an_extra_call_over_http_is_a_500_naming_the_counts_and_not_retried() -> None:
    import openai

    player = ScriptedModel(script_of({"text": "only"}))
    client = sdk_client("openai-chat", player)
    messages: Any = [{"role": "user", "content": "hi"}]
    client.chat.completions.create(model="m", messages=messages)
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(model="m", messages=messages)
    assert info.value.status_code == 500
    assert "model called 2 times but script has 1 turn" in str(info.value)
    assert player.calls == 2
    assert [str(e) for e in player.errors] == ["model called 2 times but script has 1 turn"]
    with pytest.raises(AssertionError, match="model called 2 times but script has 1 turn"):
        player.assert_exhausted()


def test_a_turn_the_wire_format_cannot_express_is_a_usage_error_naming_both() -> None:
    player = ScriptedModel(SCRIPTS / "pause_then_text.yaml")
    with pytest.raises(UnsupportedTurn) as info:
        sdk_client("openai-chat", player)
    message = str(info.value)
    assert message.startswith(f"{SCRIPTS / 'pause_then_text.yaml'}: turns[0]: ")
    assert "paused" in message and "openai-chat" in message
    assert isinstance(info.value, UserError)
    assert player.calls == 0


def test_an_unknown_api_is_a_usage_error() -> None:
    with pytest.raises(UserError, match="no SDK client for 'bedrock-converse'"):
        sdk_client("bedrock-converse", ScriptedModel(script_of({"text": "x"})))


async def test_async_openai_client() -> None:
    import openai

    player = ScriptedModel(script_of({"text": "hello there"}))
    client = sdk_client("openai-chat", player, asynchronous=True)
    assert isinstance(client, openai.AsyncOpenAI)
    answer = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.choices[0].message.content == "hello there"
    player.assert_exhausted()


def test_openai_responses_through_the_sdk() -> None:
    player = ScriptedModel(
        script_of(
            {"tool_call": "search", "args": {"q": "x"}},
            {"text": "The refund has been", "ending": "truncated"},
            {"text": "Found it."},
        )
    )
    client = sdk_client("openai-responses", player)
    first = client.responses.create(model="gpt-4.1", input="find x")
    calls = [o for o in first.output if o.type == "function_call"]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("c1", "search", '{"q":"x"}')]
    cut = client.responses.create(model="gpt-4.1", input="find x")
    assert cut.status == "incomplete"
    assert cut.incomplete_details is not None
    assert cut.incomplete_details.reason == "max_output_tokens"
    events = list(client.responses.create(model="gpt-4.1", input="find x", stream=True))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "Found it."
    assert events[-1].type == "response.completed"
    player.assert_exhausted()


def test_anthropic_through_the_sdk() -> None:
    player = ScriptedModel(
        script_of(
            {"text": "Let me look.", "tool_call": "search", "args": {"q": "x"}},
            {"text": "The refund has been", "ending": "truncated"},
            {"text": "Searching the web.", "ending": "paused"},
            {"text": "I can't help with that.", "ending": "refused"},
            {"text": "Found one result."},
        )
    )
    client = sdk_client("anthropic-messages", player)
    messages: Any = [{"role": "user", "content": "find x"}]
    replies = [
        client.messages.create(model="claude-sonnet-5-5", max_tokens=1024, messages=messages)
        for _ in range(4)
    ]
    first = replies[0]
    assert first.stop_reason == "tool_use"
    assert [b.type for b in first.content] == ["text", "tool_use"]
    tool_use: Any = first.content[1]
    assert (tool_use.id, tool_use.name, tool_use.input) == ("c1", "search", {"q": "x"})
    assert [r.stop_reason for r in replies[1:]] == ["max_tokens", "pause_turn", "refusal"]
    with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=1024, messages=messages
    ) as events:
        text = "".join(events.text_stream)
        final = events.get_final_message()
    assert text == "Found one result."
    assert final.stop_reason == "end_turn"
    assert player.bodies[-1]["stream"] is True
    player.assert_exhausted()


def test_anthropic_retries_an_overloaded_error() -> None:
    player = ScriptedModel(SCRIPTS / "http_error_then_text.yaml")
    reply = sdk_client("anthropic-messages", player).messages.create(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.stop_reason == "end_turn"
    assert player.calls == 2


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("api", ["openai-chat", "anthropic-messages"])
def test_the_sdk_clients_retry_without_waiting(
    api: str, asynchronous: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script's 5xx is retried by the SDK itself, with zero back-off (no 0.5 s doubling)."""
    import time

    import anyio

    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def asleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    monkeypatch.setattr(anyio, "sleep", asleep)
    monkeypatch.setattr(asyncio, "sleep", asleep)
    script = script_of({"http_error": 503}, {"http_error": 500}, {"text": "late"})
    player = ScriptedModel(script)
    client = sdk_client(api, player, asynchronous=asynchronous)
    messages: Any = [{"role": "user", "content": "hi"}]
    if api == "openai-chat":
        call: Any = lambda: client.chat.completions.create(model="m", messages=messages)  # noqa: E731
    else:
        call = lambda: client.messages.create(model="m", max_tokens=8, messages=messages)  # noqa: E731
    answer = asyncio.run(call()) if asynchronous else call()
    assert answer is not None
    assert player.calls == 3  # the SDK retried twice, as `max_retries` says
    assert waits and all(w == 0 for w in waits), waits


def test_gemini_through_the_sdk() -> None:
    player = ScriptedModel(
        script_of(
            {"tool_call": "search", "args": {"q": "x"}},
            {"text": "The refund has been", "ending": "truncated"},
            {"text": "Found one result."},
        )
    )
    client = sdk_client("gemini", player)
    first = client.models.generate_content(model="gemini-2.5-flash", contents="find x")
    assert first.function_calls is not None
    assert [(c.id, c.name, c.args) for c in first.function_calls] == [("c1", "search", {"q": "x"})]
    cut = client.models.generate_content(model="gemini-2.5-flash", contents="find x")
    assert cut.candidates is not None
    assert cut.candidates[0].finish_reason == "MAX_TOKENS"
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="x"))
    assert "".join(c.text or "" for c in chunks) == "Found one result."
    assert player.requests[-1].stream and not player.requests[0].stream
    assert player.requests[0].model == "gemini-2.5-flash"
    player.assert_exhausted()


async def test_gemini_async_and_retries() -> None:
    player = ScriptedModel(SCRIPTS / "http_error_then_text.yaml")
    client = sdk_client("gemini", player, asynchronous=True)
    reply = await client.aio.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert reply.text == "The customer wants a refund for a broken mug."
    assert player.calls == 2


@pytest.mark.parametrize("name", ["pause_then_text", "refused"])
def test_gemini_cannot_express_pauses_or_refusals(name: str) -> None:
    with pytest.raises(UnsupportedTurn, match=r"turns\[0\]: .*gemini"):
        sdk_client("gemini", ScriptedModel(SCRIPTS / f"{name}.yaml"))


# -- the loop over HTTP ----------------------------------------------------------------------

ONLY = {
    "pause_then_text": {"anthropic-messages"},
    "refused": {"openai-chat", "openai-responses", "anthropic-messages"},
}
"""Scripts a wire format cannot express everywhere, and where they run."""


def loop_model(api: str, player: ScriptedModel) -> tuple[Any, str | None]:
    from donegate.models.google import GeminiModel
    from donegate.models.sdk import OpenAIResponsesModel

    client = sdk_client(api, player)
    if api == "openai-responses":
        return OpenAIResponsesModel(client, "gpt-4.1"), None
    if api == "gemini":
        return GeminiModel(client, "gemini-2.5-flash"), None
    return client, {"openai-chat": "gpt-4o-mini", "anthropic-messages": "claude-sonnet-5-5"}[api]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic-messages", "gemini"])
@pytest.mark.parametrize("path", ALL_SCRIPTS, ids=lambda p: p.stem)
def test_every_script_meets_its_expectations_over_http(
    path: Path, api: str, streamed: bool
) -> None:
    script = load_script(path)
    player = ScriptedModel(script)
    if api not in ONLY.get(path.stem, {api}):
        with pytest.raises(UnsupportedTurn):
            sdk_client(api, player)
        return
    model, name = loop_model(api, player)
    assert replay(script, model, model_name=name, streamed=streamed, player=player) == []
    if not streamed:
        assert player.bodies and all(isinstance(b, dict) for b in player.bodies)
