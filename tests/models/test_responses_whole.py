"""A whole Responses stream classified at once (deltas decoded only when the final event does not
carry the output, events nothing reads not decoded) gives the very turn the event-by-event
accumulator gives: for every typical turn, cut after any event, mutated, or mislabelled."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from donegate.errors import DonegateError, UnsupportedTurn
from donegate.messages import (
    Ending,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
)
from donegate.models._rules import make_turn
from donegate.models._sse import iter_sse
from donegate.models.openai_responses import WIRE
from donegate.models.openai_responses._stream import ResponsesStream


def turns() -> list[Turn]:
    call = ToolCall.from_args(id="c1", name="get_order", arguments={"order_id": "55219"})
    text = "I've started a refund of EUR 14.99 for order 55219. " * 3
    return [
        make_turn(api="t", signal=Ending.COMPLETE, parts=[TextPart(text=text)], raw_reason="s"),
        make_turn(
            api="t",
            signal=Ending.TOOL_USE,
            parts=[ThinkingPart(text="the order first"), TextPart(text="Let me look."), call],
            raw_reason="t",
        ),
        make_turn(api="t", signal=Ending.TRUNCATED, parts=[TextPart(text=text)], raw_reason="l"),
        make_turn(
            api="t", signal=Ending.COMPLETE, parts=[RefusalPart(text="I can't.")], raw_reason="s"
        ),
    ]


def streams() -> list[str]:
    out = []
    for turn in turns():
        with contextlib.suppress(UnsupportedTurn):
            body = WIRE.render_response(turn, stream=True).body
            out.append(body if isinstance(body, str) else body.decode())
    return out


STREAMS = streams()


def one_by_one(text: str) -> Turn:
    acc = ResponsesStream()
    for event, data in iter_sse(text):
        acc.feed(event, data)
    return acc.finish()


def outcome(classify: Any, text: str) -> Turn | str:
    try:
        turn: Turn = classify(text)
        return turn
    except DonegateError as e:
        return f"{type(e).__name__}: {e}"


def same(text: str) -> None:
    assert outcome(WIRE.parse_stream, text) == outcome(one_by_one, text)


def events_of(stream: str) -> list[str]:
    return [e for e in stream.split("\n\n") if e.strip()]


def test_the_streams_hold_deltas_and_events_nothing_reads() -> None:
    """What this file relies on: the typical streams have deltas to defer and events to skip."""
    text = "".join(STREAMS)
    for kind in ("output_text.delta", "function_call_arguments.delta", "content_part.added"):
        assert f"event: response.{kind}" in text


@pytest.mark.parametrize("stream", STREAMS, ids=range(len(STREAMS)))
def test_every_cut_gives_the_same_turn(stream: str) -> None:
    events = events_of(stream)
    for cut in range(len(events) + 1):
        same("\n\n".join(events[:cut]) + "\n\n")


def test_a_final_with_an_empty_output_is_built_from_the_deltas() -> None:
    """The ChatGPT backend's shape: ``response.completed`` with ``output: []``."""
    for stream in STREAMS:
        events = events_of(stream)
        head, _, payload = events[-1].rpartition("data: ")
        final = json.loads(payload)
        assert final["type"] in ("response.completed", "response.incomplete")
        final["response"]["output"] = []
        text = "\n\n".join([*events[:-1], head + "data: " + json.dumps(final)]) + "\n\n"
        whole = WIRE.parse_stream(text)
        assert whole == one_by_one(text)
        assert whole.text or whole.tool_calls or whole.message.parts


def test_an_event_line_that_disagrees_with_its_data_is_decoded() -> None:
    """Only an event whose data says the same type as its ``event:`` line is deferred or
    skipped: here a text delta is labelled as an event nothing reads."""
    stream = STREAMS[0]
    text = stream.replace(
        "event: response.output_text.delta\n", "event: response.content_part.added\n", 1
    )
    assert text != stream
    same(text)
    events = events_of(stream)
    cut = "\n\n".join(e for e in events if "response.completed" not in e) + "\n\n"
    mislabelled = cut.replace(
        "event: response.output_text.delta\n", "event: response.content_part.added\n"
    )
    assert WIRE.parse_stream(mislabelled).text == one_by_one(cut).text  # not skipped


def test_events_without_event_lines_are_read_alike() -> None:
    for stream in STREAMS:
        bare = "".join(line + "\n" for line in stream.split("\n") if not line.startswith("event:"))
        same(bare)


def mutate(value: Any, data: st.DataObject) -> Any:
    if isinstance(value, dict) and value:
        key = data.draw(st.sampled_from(sorted(value)))
        choice = data.draw(st.sampled_from(["drop", "null", "recurse", "string"]))
        out = dict(value)
        if choice == "drop":
            del out[key]
        elif choice == "null":
            out[key] = None
        elif choice == "string":
            out[key] = "x"
        else:
            out[key] = mutate(value[key], data)
        return out
    if isinstance(value, list) and value:
        i = data.draw(st.integers(0, len(value) - 1))
        return [*value[:i], mutate(value[i], data), *value[i + 1 :]]
    return value


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_cut_and_mutated_streams_give_the_same_turn(data: st.DataObject) -> None:
    events = events_of(data.draw(st.sampled_from(STREAMS)))
    kept = events[: data.draw(st.integers(0, len(events)))]
    for _ in range(data.draw(st.integers(0, 3))):
        if not kept:
            break
        i = data.draw(st.integers(0, len(kept) - 1))
        head, _, payload = kept[i].rpartition("data: ")
        with contextlib.suppress(ValueError):
            kept[i] = head + "data: " + json.dumps(mutate(json.loads(payload), data))
    same("\n\n".join(kept) + ("\n\n" if kept else ""))
