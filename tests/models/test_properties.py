"""Property tests over every adapter: arbitrary and mutated bodies raise only donegate's own
typed errors, and no body ever yields `complete` with empty visible text."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from donegate import classify
from donegate.errors import DonegateError, UnsupportedTurn
from donegate.messages import Ending, TextPart, ThinkingPart, ToolCall, Turn
from donegate.models._rules import make_turn
from donegate.models.registry import APIS, wire_format

SERVED = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=30,
)

# Keys every adapter looks at, so mutations reach the interesting branches.
KEYS = [
    "choices",
    "message",
    "content",
    "tool_calls",
    "function",
    "arguments",
    "finish_reason",
    "refusal",
    "status",
    "output",
    "incomplete_details",
    "reason",
    "type",
    "text",
    "stop_reason",
    "candidates",
    "parts",
    "finishReason",
    "functionCall",
    "promptFeedback",
    "blockReason",
    "stopReason",
    "toolUse",
    "input",
    "error",
    "delta",
    "usage",
    "id",
    "name",
    "role",
]


def _turns() -> list[Turn]:
    call = ToolCall.from_args(id="c1", name="search", arguments={"q": "x"})
    return [
        make_turn(api="t", signal=Ending.COMPLETE, parts=[TextPart(text="Done.")], raw_reason="s"),
        make_turn(
            api="t", signal=Ending.TOOL_USE, parts=[TextPart(text="Let me"), call], raw_reason="t"
        ),
        make_turn(api="t", signal=Ending.TRUNCATED, parts=[TextPart(text="Half")], raw_reason="l"),
        make_turn(
            api="t", signal=Ending.COMPLETE, parts=[ThinkingPart(text="hmm")], raw_reason="s"
        ),
    ]


def _rendered(api: str, stream: bool) -> list[str]:
    wire = wire_format(api)
    out = []
    for turn in _turns():
        try:
            out.append(wire.render_response(turn, stream=stream).body)
        except UnsupportedTurn:
            continue
    return out


def check(turn: Turn) -> None:
    assert isinstance(turn.ending, Ending)
    if turn.ending is Ending.COMPLETE:
        has_output = bool(turn.text.strip()) or any(p.kind == "media" for p in turn.message.parts)
        assert has_output, "complete with empty visible text"
    if turn.ending is Ending.TOOL_USE:
        assert turn.tool_calls


def classify_safely(api: str, body: Any, **kwargs: Any) -> None:
    try:
        turn = classify(api, body, **kwargs)
    except DonegateError:
        return
    check(turn)


def mutate(value: Any, data: st.DataObject, depth: int = 0) -> Any:
    """Delete, replace or keep each field, recursively."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            action = data.draw(st.sampled_from(["keep", "keep", "drop", "replace", "recurse"]))
            if action == "drop":
                continue
            if action == "replace":
                out[key] = data.draw(json_values)
            elif action == "recurse" and depth < 6:
                out[key] = mutate(item, data, depth + 1)
            else:
                out[key] = item
        if data.draw(st.booleans()):
            out[data.draw(st.sampled_from(KEYS))] = data.draw(json_values)
        return out
    if isinstance(value, list):
        return [mutate(v, data, depth + 1) for v in value if data.draw(st.integers(0, 5))]
    if data.draw(st.integers(0, 4)) == 0:
        return data.draw(json_values)
    return value


PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("api", APIS)
@PROPERTY
@given(body=json_values)
def test_arbitrary_bodies_raise_only_typed_errors(api: str, body: Any) -> None:
    classify_safely(api, body)


@pytest.mark.parametrize("api", APIS)
@PROPERTY
@given(body=st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6))
def test_bodies_with_known_keys_raise_only_typed_errors(api: str, body: Any) -> None:
    classify_safely(api, body)


@pytest.mark.parametrize("api", APIS)
@PROPERTY
@given(body=json_values, status=st.sampled_from([400, 401, 404, 413, 429, 500, 503, 529]))
def test_error_bodies_never_raise(api: str, body: Any, status: int) -> None:
    turn = classify(api, body, status=status)
    assert turn.ending is not Ending.COMPLETE
    assert turn.ending is not Ending.TOOL_USE


@pytest.mark.parametrize("api", SERVED)
@PROPERTY
@given(data=st.data())
def test_mutated_real_shapes_raise_only_typed_errors(api: str, data: st.DataObject) -> None:
    bodies = [json.loads(b) for b in _rendered(api, stream=False)]
    body = mutate(data.draw(st.sampled_from(bodies)), data)
    classify_safely(api, body)


@pytest.mark.parametrize("api", APIS)
@PROPERTY
@given(
    events=st.lists(
        st.tuples(
            st.sampled_from(["", "message_delta", "error", "response.completed"]),
            json_values | st.text(max_size=30),
        ),
        max_size=8,
    )
)
def test_arbitrary_streams_raise_only_typed_errors(api: str, events: list[tuple[str, Any]]) -> None:
    text = "".join(
        (f"event: {name}\n" if name else "")
        + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        for name, data in events
    )
    classify_safely(api, text, stream=True)


@pytest.mark.parametrize("api", SERVED)
@PROPERTY
@given(data=st.data())
def test_cut_or_mutated_real_streams_are_never_complete_when_cut(
    api: str, data: st.DataObject
) -> None:
    stream = data.draw(st.sampled_from(_rendered(api, stream=True)))
    events = [e for e in stream.split("\n\n") if e.strip()]
    cut = data.draw(st.integers(0, len(events)))
    kept = events[:cut]
    if kept and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(kept) - 1))
        head, _, payload = kept[i].rpartition("data: ")
        with contextlib.suppress(ValueError):
            kept[i] = head + "data: " + json.dumps(mutate(json.loads(payload), data))
    text = "\n\n".join(kept) + ("\n\n" if kept else "")
    classify_safely(api, text, stream=True)
