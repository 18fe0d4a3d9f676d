"""Rendered histories: a growing transcript renders as a whole one would, whatever is kept."""

from __future__ import annotations

from typing import Any

from donegate.messages import Message, TextPart, ToolCall, ToolResult
from donegate.models._cache import HistoryCache, LastRendered
from donegate.models.base import ModelRequest, ToolSpec
from donegate.models.openai_chat import WIRE


def rendered_alone(message: Message) -> list[dict[str, Any]]:
    calls.append(message)
    return [{"role": message.role, "text": message.text}]


calls: list[Message] = []


def conversation(turns: int, tag: str = "") -> list[Message]:
    out = [Message.user(f"start{tag}")]
    for i in range(turns):
        call = ToolCall.from_args(id=f"c{i}", name="get", arguments={"i": i})
        out.append(Message(role="assistant", parts=(TextPart(text=f"t{i}"), call)))
        out.append(Message.tool_results([ToolResult(call_id=f"c{i}", name="get", content="ok")]))
    return out


def whole(messages: list[Message]) -> list[dict[str, Any]]:
    return [{"role": m.role, "text": m.text} for m in messages]


def test_a_growing_transcript_renders_only_the_new_messages_and_equals_a_whole_render() -> None:
    cache = HistoryCache(rendered_alone)
    history = conversation(3)
    calls.clear()
    for n in range(1, len(history) + 1):
        assert cache.render(tuple(history[:n])) == whole(history[:n])
    assert calls == history  # each message rendered once
    again = cache.render(tuple(history))
    assert again == whole(history) and calls == history


def test_the_list_handed_out_is_the_callers_and_a_list_argument_is_copied() -> None:
    cache = HistoryCache(rendered_alone)
    history = conversation(1)
    first = cache.render(history)
    first.append({"role": "user", "text": "mutated by the caller"})
    history.append(Message.user("appended in place"))
    assert cache.render(history) == whole(history)
    assert cache.render(history[:3]) == whole(history[:3])


def test_an_edited_history_with_equal_but_other_messages_is_rendered_again() -> None:
    cache = HistoryCache(rendered_alone)
    history = conversation(2)
    cache.render(tuple(history))
    edited = [history[0], Message.user("replaced"), *history[2:]]
    assert cache.render(tuple(edited)) == whole(edited)
    calls.clear()
    copy = [Message(role=m.role, parts=m.parts) for m in history]  # equal, not identical
    assert copy == history
    assert cache.render(tuple(copy)) == whole(copy)
    assert calls == copy


def test_the_cache_holds_at_most_size_transcripts() -> None:
    cache = HistoryCache(rendered_alone, size=3)
    runs = [conversation(1, tag=str(i)) for i in range(5)]
    for run in runs:
        cache.render(tuple(run))
    calls.clear()
    for run in runs[2:]:  # the three latest are kept
        cache.render(tuple(run))
    assert calls == []
    cache.render(tuple(runs[0]))
    assert calls == runs[0]


def test_last_rendered_renders_a_new_object_and_reuses_the_same_one() -> None:
    seen: list[tuple[int, ...]] = []

    def render(value: tuple[int, ...]) -> list[int]:
        seen.append(value)
        return [v * 2 for v in value]

    last: LastRendered[tuple[int, ...]] = LastRendered(render)
    one = (1, 2)
    assert last.render(one) == [2, 4]
    out = last.render(one)
    out.append(99)
    assert last.render(one) == [2, 4] and seen == [one]
    assert last.render((3,)) == [6] and len(seen) == 2


def test_openai_chat_bodies_of_a_growing_run_equal_fresh_renders() -> None:
    tools = (ToolSpec(name="get", parameters={"type": "object", "properties": {}}),)
    history = conversation(4)
    for n in range(1, len(history) + 1):
        request = ModelRequest(model="m", messages=tuple(history[:n]), tools=tools)
        fresh = ModelRequest(
            model="m",
            messages=tuple(Message(role=m.role, parts=m.parts) for m in history[:n]),
            tools=(ToolSpec(name="get", parameters={"type": "object", "properties": {}}),),
        )
        assert WIRE.render_request(request) == WIRE.render_request(fresh)
    body = WIRE.render_request(ModelRequest(model="m", messages=tuple(history), tools=tools))
    assert [m["role"] for m in body["messages"]] == ["user"] + ["assistant", "tool"] * 4
    assert body["messages"][3]["tool_calls"][0]["function"] == {
        "name": "get",
        "arguments": '{"i":1}',
    }


def test_a_messages_derived_views_are_computed_once() -> None:
    message = conversation(1)[1]
    assert message.tool_calls is message.tool_calls
    assert message.text == "t0" and message.results == ()
    assert [c.id for c in message.tool_calls] == ["c0"]
