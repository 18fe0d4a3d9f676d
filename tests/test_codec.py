"""The one JSON codec: every canonical value survives a trip through JSON text unchanged."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from donegate.codec import (
    dumps,
    loads,
    message_from_json,
    message_to_json,
    part_from_json,
    part_to_json,
    record_from_json,
    record_to_json,
    to_data,
    turn_from_json,
    turn_to_json,
)
from donegate.messages import (
    Ending,
    ErrorInfo,
    MediaPart,
    Message,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)
from donegate.records.evidence import transcript_digest
from donegate.results import ToolCallRecord

text = st.text(max_size=20)
maybe_text = st.none() | text
scalars = st.none() | st.booleans() | st.integers() | text
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(text, json_values, max_size=3)
details = st.none() | json_objects

calls = st.builds(
    ToolCall,
    id=text,
    name=text,
    arguments_raw=text,
    arguments=st.none() | json_objects,
    parse_error=maybe_text,
    provider_details=details,
)
results = st.builds(ToolResult, call_id=text, name=text, content=text, is_error=st.booleans())
parts = st.one_of(
    st.builds(TextPart, text=text, provider_details=details),
    st.builds(
        ThinkingPart,
        text=text,
        signature=maybe_text,
        redacted=st.booleans(),
        progress=st.booleans(),
        provider_details=details,
    ),
    st.builds(RefusalPart, text=text, provider_details=details),
    st.builds(MediaPart, mime_type=text, data=maybe_text, uri=maybe_text, provider_details=details),
    calls,
    st.builds(ServerToolPart, name=text, id=maybe_text, data=json_objects),
    results,
)
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    parts=st.lists(parts, max_size=4).map(tuple),
)
counts = st.integers(min_value=0, max_value=10**9)
usages = st.builds(
    Usage,
    input_tokens=counts,
    output_tokens=counts,
    cache_read_tokens=counts,
    cache_write_tokens=counts,
    reasoning_tokens=counts,
)
errors = st.builds(
    ErrorInfo,
    status=st.none() | st.integers(min_value=100, max_value=599),
    type=maybe_text,
    message=text,
    retry_after=st.none() | st.floats(allow_nan=False, allow_infinity=False),
)
turns = st.builds(
    Turn,
    message=messages,
    ending=st.sampled_from(list(Ending)),
    raw_reason=maybe_text,
    detail=maybe_text,
    usage=usages,
    model=maybe_text,
    response_id=maybe_text,
    error=st.none() | errors,
    api=maybe_text,
)
times = st.none() | st.floats(min_value=0, max_value=4e9, allow_nan=False)
records = st.builds(
    ToolCallRecord,
    step=st.integers(min_value=0, max_value=1000),
    call=calls,
    result=results,
    executed=st.booleans(),
    idempotency_key=maybe_text,
    duration_s=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    started_at=times,
    ended_at=times,
)


def _through_text(data: Any) -> Any:
    return loads(dumps(data))


@given(parts)
def test_a_part_round_trips(part: Any) -> None:
    assert part_from_json(_through_text(part_to_json(part))) == part


@given(messages)
def test_a_message_round_trips(message: Message) -> None:
    assert message_from_json(_through_text(message_to_json(message))) == message


@given(turns)
def test_a_turn_round_trips(turn: Turn) -> None:
    assert turn_from_json(_through_text(turn_to_json(turn))) == turn


@given(records)
def test_a_tool_call_record_round_trips(record: ToolCallRecord) -> None:
    assert record_from_json(_through_text(record_to_json(record))) == record


@given(messages)
def test_the_form_with_every_default_written_decodes_too(message: Message) -> None:
    """What certificates embedded before this codec: every field of every part written out."""
    full = {
        "role": message.role,
        "parts": [
            {f.name: getattr(p, f.name) for f in dataclasses.fields(p)} for p in message.parts
        ],
    }
    assert message_from_json(_through_text(full)) == message


@given(st.lists(messages, max_size=3))
def test_a_transcript_digests_the_same_as_objects_and_as_the_data_embedded(
    transcript: list[Message],
) -> None:
    embedded = _through_text(to_data(transcript))
    assert transcript_digest(transcript) == transcript_digest(embedded)


def test_defaults_are_left_out() -> None:
    result = ToolResult(call_id="c1", name="t", content="ok")
    assert part_to_json(result) == {
        "kind": "tool_result",
        "call_id": "c1",
        "name": "t",
        "content": "ok",
    }
    turn = Turn(message=Message.user("hi"), ending=Ending.COMPLETE, usage=Usage(input_tokens=3))
    assert turn_to_json(turn) == {
        "message": {"role": "user", "parts": [{"kind": "text", "text": "hi"}]},
        "ending": "complete",
        "usage": {"input_tokens": 3},
    }
