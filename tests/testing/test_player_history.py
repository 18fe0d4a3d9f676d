"""The player refuses a request whose history leaves a tool call unanswered, as providers do."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from donegate.errors import UnansweredCalls
from donegate.messages import Ending, Message, TextPart, ToolCall, ToolResult
from donegate.models.base import ModelRequest
from donegate.testing.player import ScriptedModel, sdk_client, unanswered
from donegate.testing.script import parse_script

CALL = ToolCall.from_args(id="call_1", name="search", arguments={"q": "x"})
ANSWER = ToolResult(call_id="call_1", name="search", content="[]")


def player() -> ScriptedModel:
    raw: dict[str, Any] = {
        "prompt": "p",
        "tools": {"search": {"returns": []}},
        "turns": [{"tool_call": "search", "args": {"q": "x"}}, {"text": "Done."}],
    }
    return ScriptedModel(parse_script(raw, source="s.yaml"))


def history(*, answered: bool) -> tuple[Message, ...]:
    out = [Message.user("p"), Message(role="assistant", parts=(CALL,))]
    if answered:
        out.append(Message.tool_results([ANSWER]))
    return tuple(out)


def test_unanswered_names_the_calls_no_later_result_answers() -> None:
    other = ToolCall.from_args(id="call_2", name="search", arguments={})
    assert unanswered(history(answered=True)) == []
    assert unanswered(history(answered=False)) == ["call_1"]
    two = (Message.user("p"), Message(role="assistant", parts=(CALL, other)))
    assert unanswered((*two, Message.tool_results([ANSWER]))) == ["call_2"]
    early = (Message.user("p"), Message.tool_results([ANSWER]), two[1])  # before its call
    assert unanswered(early) == ["call_1", "call_2"]
    assert (
        unanswered((Message.user("p"), Message(role="assistant", parts=(TextPart(text="t"),))))
        == []
    )


def test_direct_mode_answers_the_400_a_provider_would_and_records_it() -> None:
    model = player()
    model.request(ModelRequest(model="m", messages=(Message.user("p"),)))
    turn = model.request(ModelRequest(model="m", messages=history(answered=False)))
    assert turn.ending is Ending.ERROR
    assert turn.error is not None and turn.error.status == 400
    assert turn.detail is not None and "'call_1'" in turn.detail
    assert [type(e) for e in model.errors] == [UnansweredCalls]
    with pytest.raises(AssertionError, match="tool calls with no result: 'call_1'"):
        model.assert_exhausted()


def test_an_answered_history_is_served_as_scripted() -> None:
    model = player()
    model.request(ModelRequest(model="m", messages=(Message.user("p"),)))
    assert model.request(ModelRequest(model="m", messages=history(answered=True))).text == "Done."
    model.assert_exhausted()


def test_over_http_the_openai_sdk_gets_a_400_it_does_not_retry() -> None:
    model = player()
    client = sdk_client("openai-chat", model)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "p"}])
    dropped: list[Any] = [
        {"role": "user", "content": "p"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
        ]},
    ]  # fmt: skip
    with pytest.raises(openai.BadRequestError, match="tool calls with no result: 'call_1'"):
        client.chat.completions.create(model="m", messages=dropped)
    assert model.calls == 2 and [type(e) for e in model.errors] == [UnansweredCalls]


def test_over_http_the_anthropic_sdk_gets_the_400_too() -> None:
    model = player()
    client = sdk_client("anthropic-messages", model)
    client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "p"}])
    dropped: list[Any] = [
        {"role": "user", "content": "p"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}
        ]},
        {"role": "user", "content": "go on"},
    ]  # fmt: skip
    with pytest.raises(anthropic.BadRequestError, match="'toolu_1'"):
        client.messages.create(model="m", max_tokens=10, messages=dropped)
