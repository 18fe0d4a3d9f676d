"""cohere: v2 chat bodies (and v1), stream events, error bodies, requests.

Fixtures are written from Cohere's v2 chat reference (response, streaming events, tool use with
``tool_plan``, reasoning ``thinking`` content, errors page) and the v1 chat reference, not copied
from the recorded corpus. There is no SDK check: Cohere is not served by the emulator, so
render_response refuses every turn.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import strategies as st
from tests.models import _shared

from donegate.errors import WireFormatError
from donegate.messages import (
    Ending,
    MediaPart,
    Message,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Usage,
)
from donegate.models import registry
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.cohere import WIRE, Cohere
from donegate.models.cohere._parse import TOOL_PLAN

API = "cohere"
RID = "c14c80c3-18eb-4519-9460-6c92edd8cfb4"


# -- builders --------------------------------------------------------------------------------


def body(message: Any, finish: Any = "COMPLETE", **extra: Any) -> dict[str, Any]:
    """A ``/v2/chat`` response body."""
    out: dict[str, Any] = {
        "id": RID,
        "finish_reason": finish,
        "message": message,
        "usage": {
            "billed_units": {"input_tokens": 5, "output_tokens": 9},
            "tokens": {"input_tokens": 71, "output_tokens": 9},
        },
    }
    out.update(extra)
    return out


def answer(*texts: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": t} for t in texts]}


def call(
    call_id: str = "get_weather_1byjy32y4hvq", arguments: Any = '{"location":"Toronto"}'
) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }


def calling(
    *calls: dict[str, Any], plan: str = "I will look up the weather in Toronto."
) -> dict[str, Any]:
    return {"role": "assistant", "tool_plan": plan, "tool_calls": list(calls)}


def sse(*events: dict[str, Any] | str, done: bool = True) -> str:
    """Named SSE events as the v2 stream frames them (the event name repeats ``type``)."""
    out = []
    for e in events:
        if isinstance(e, str):
            out.append(f"data: {e}\n\n")
        else:
            out.append(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out)


MESSAGE_START = {
    "id": RID,
    "type": "message-start",
    "delta": {
        "message": {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
    },
}


def content_start(index: int = 0, kind: str = "text") -> dict[str, Any]:
    return {
        "type": "content-start",
        "index": index,
        "delta": {"message": {"content": {"type": kind, kind: ""}}},
    }


def content_delta(piece: str, index: int = 0, key: str = "text") -> dict[str, Any]:
    return {
        "type": "content-delta",
        "index": index,
        "delta": {"message": {"content": {key: piece}}},
    }


def content_end(index: int = 0) -> dict[str, Any]:
    return {"type": "content-end", "index": index}


def plan_delta(piece: str) -> dict[str, Any]:
    return {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}}


def call_start(index: int, call_id: str = "get_weather_1byjy32y4hvq") -> dict[str, Any]:
    return {
        "type": "tool-call-start",
        "index": index,
        "delta": {
            "message": {
                "tool_calls": {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            }
        },
    }


def call_delta(fragment: str, index: int) -> dict[str, Any]:
    return {
        "type": "tool-call-delta",
        "index": index,
        "delta": {"message": {"tool_calls": {"function": {"arguments": fragment}}}},
    }


def message_end(finish: str = "COMPLETE", **delta: Any) -> dict[str, Any]:
    return {
        "type": "message-end",
        "delta": {
            "finish_reason": finish,
            "usage": {
                "billed_units": {"input_tokens": 5, "output_tokens": 9},
                "tokens": {"input_tokens": 71, "output_tokens": 9},
            },
            **delta,
        },
    }


# -- the protocol ----------------------------------------------------------------------------


def test_wire_implements_the_protocol_and_is_registered() -> None:
    _shared.check_registered(WIRE, API, Cohere)
    assert registry.classify(API, body(answer("Hi"))).ending is Ending.COMPLETE


# -- parse_response --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "message", "ending"),
    [
        ("COMPLETE", answer("Hello!"), Ending.COMPLETE),
        ("STOP_SEQUENCE", answer("The capital of France is"), Ending.COMPLETE),
        ("TOOL_CALL", calling(call()), Ending.TOOL_USE),
        ("MAX_TOKENS", answer("**The History of"), Ending.TRUNCATED),
        ("ERROR_TOXIC", answer(""), Ending.FILTERED),
        ("ERROR", answer(""), Ending.ERROR),
        ("TIMEOUT", answer("par"), Ending.ERROR),
        ("ERROR_LIMIT", answer(""), Ending.CONTEXT_EXCEEDED),
        ("USER_CANCEL", answer(""), Ending.ERROR),
    ],
)
def test_every_finish_reason_maps_to_its_ending(finish: str, message: Any, ending: Ending) -> None:
    turn = WIRE.parse_response(body(message, finish))
    assert turn.ending is ending and turn.raw_reason == finish and turn.response_id == RID


def test_unknown_and_missing_finish_reasons_are_errors_that_say_why() -> None:
    unknown = WIRE.parse_response(body(answer("hi"), "NEW_REASON"))
    assert unknown.ending is Ending.ERROR and unknown.raw_reason == "NEW_REASON"
    assert unknown.detail is not None and "NEW_REASON" in unknown.detail
    missing = WIRE.parse_response(body(answer("hi"), None))
    assert missing.ending is Ending.ERROR and missing.raw_reason is None and missing.detail


def test_the_tool_plan_is_thinking_not_visible_text() -> None:
    turn = WIRE.parse_response(body(calling(call()), "TOOL_CALL"))
    assert turn.ending is Ending.TOOL_USE and turn.text == ""
    assert turn.thinking == (
        ThinkingPart(text="I will look up the weather in Toronto.", provider_details=TOOL_PLAN),
    )
    (c,) = turn.tool_calls
    assert (c.id, c.name, c.arguments) == (
        "get_weather_1byjy32y4hvq",
        "get_weather",
        {"location": "Toronto"},
    )


def test_null_arguments_parse_to_no_arguments() -> None:
    turn = WIRE.parse_response(body(calling(call(arguments="null")), "TOOL_CALL"))
    assert turn.ending is Ending.TOOL_USE and turn.tool_calls[0].arguments == {}
    assert turn.tool_calls[0].arguments_raw == "null"


@pytest.mark.parametrize(
    "message",
    [
        answer(),
        answer(""),
        answer("   "),
        {"role": "assistant"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Let me think."}]},
        {"role": "assistant", "tool_plan": "I will answer directly.", "content": []},
    ],
)
def test_no_visible_output_is_empty(message: Any) -> None:
    assert WIRE.parse_response(body(message)).ending is Ending.EMPTY


def test_complete_with_a_tool_call_is_tool_use() -> None:
    assert WIRE.parse_response(body(calling(call()), "COMPLETE")).ending is Ending.TOOL_USE


@pytest.mark.parametrize("arguments", ['{"location": "Tor', "[1]", "true"])
def test_unparseable_arguments_are_malformed(arguments: str) -> None:
    turn = WIRE.parse_response(body(calling(call(arguments=arguments)), "TOOL_CALL"))
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert turn.tool_calls[0].arguments is None and turn.tool_calls[0].arguments_raw == arguments


def test_max_tokens_mid_tool_call_is_truncated_and_keeps_the_call() -> None:
    turn = WIRE.parse_response(body(calling(call(arguments='{"location": "Tor')), "MAX_TOKENS"))
    assert (
        turn.ending is Ending.TRUNCATED and turn.tool_calls[0].arguments_raw == '{"location": "Tor'
    )


def test_arguments_sent_as_an_object_are_tolerated() -> None:
    turn = WIRE.parse_response(body(calling(call(arguments={"location": "Oslo"})), "TOOL_CALL"))
    assert turn.tool_calls[0].arguments == {"location": "Oslo"}
    assert turn.tool_calls[0].arguments_raw == '{"location":"Oslo"}'


def test_thinking_content_and_unknown_items() -> None:
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "2+2 is 4."},
            {"type": "text", "text": "4"},
            {"type": "image", "url": "x"},
        ],
    }
    turn = WIRE.parse_response(body(message))
    assert turn.ending is Ending.COMPLETE and turn.text == "4"
    assert turn.message.parts == (
        ThinkingPart(text="2+2 is 4."),
        TextPart(text="4"),
        ServerToolPart(name="image", data={"type": "image", "url": "x"}),
    )


def test_usage_prefers_tokens_over_billed_units() -> None:
    turn = WIRE.parse_response(
        body(answer("hi"), usage={**body(answer("hi"))["usage"], "cached_tokens": 448})
    )
    assert turn.usage == Usage(input_tokens=71, output_tokens=9, cache_read_tokens=448)
    billed = WIRE.parse_response(
        body(answer("hi"), usage={"billed_units": {"input_tokens": 5.0, "output_tokens": 9}})
    )
    assert billed.usage == Usage(input_tokens=5, output_tokens=9)
    assert WIRE.parse_response(body(answer("hi"), usage="x")).usage == Usage()


def test_v1_bodies_are_read() -> None:
    v1 = {
        "response_id": "8b6c2c4e",
        "text": "",
        "generation_id": "b0e8a0d3",
        "chat_history": [],
        "finish_reason": "COMPLETE",
        "tool_calls": [
            {"name": "query_daily_sales_report", "parameters": {"day": "2023-09-29"}},
            {"name": "query_daily_sales_report", "parameters": {"day": "2023-09-30"}},
        ],
        "meta": {"billed_units": {"input_tokens": 10, "output_tokens": 20}},
    }
    turn = WIRE.parse_response(v1)
    assert turn.ending is Ending.TOOL_USE and turn.response_id == "8b6c2c4e"
    assert [(c.id, c.arguments) for c in turn.tool_calls] == [
        ("query_daily_sales_report_0", {"day": "2023-09-29"}),
        ("query_daily_sales_report_1", {"day": "2023-09-30"}),
    ]
    assert turn.usage == Usage(input_tokens=10, output_tokens=20)
    text = WIRE.parse_response(
        {"text": "Hello", "generation_id": "g", "finish_reason": "MAX_TOKENS"}
    )
    assert text.ending is Ending.TRUNCATED and text.text == "Hello"


def test_a_200_error_body_is_an_error_turn() -> None:
    turn = WIRE.parse_response({"id": "x", "message": "internal server error"})
    assert turn.ending is Ending.ERROR and turn.error is not None
    assert turn.error.message == "internal server error" and turn.error.status is None


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ({"id": "x", "finish_reason": "COMPLETE"}, "message"),
        (body(answer("x"), 3), "finish_reason"),
        (body({"role": "assistant", "content": 3}), "message.content"),
        (body({"role": "assistant", "content": [3]}), "message.content[0]"),
        (
            body({"role": "assistant", "content": [{"type": "text", "text": 3}]}),
            "message.content[0].text",
        ),
        (body({"role": "assistant", "tool_plan": 3}), "message.tool_plan"),
        (body({"role": "assistant", "tool_calls": "x"}), "message.tool_calls"),
        (
            body({"role": "assistant", "tool_calls": [{"id": "x"}]}),
            "message.tool_calls[0].function",
        ),
        (
            body({"role": "assistant", "tool_calls": [{"function": {}}]}),
            "message.tool_calls[0].function.name",
        ),
        ({"text": 3, "generation_id": "g"}, "text"),
    ],
)
def test_malformed_bodies_raise_wire_format_errors_naming_the_field(bad: Any, path: str) -> None:
    _shared.check_malformed(WIRE, bad, path, api=API)


test_a_non_object_body_raises = _shared.non_object_test(WIRE)


_json = _shared.json_values()
_messages = _shared.with_any_field(
    st.just({**calling(call()), "content": [{"type": "text", "text": "x"}]}),
    ["content", "tool_plan", "tool_calls", "role", "citations"],
    _json,
)
_mutated = _shared.with_any_field(
    st.builds(
        body,
        st.one_of(_messages, _json),
        st.sampled_from(["COMPLETE", "TOOL_CALL", "MAX_TOKENS", None, 3]),
    ),
    ["usage", "id", "message", "text", "tool_calls", "meta", "extra"],
    _json,
)


test_arbitrary_bodies_give_a_turn_or_a_wire_format_error = _shared.any_body_test(
    WIRE, st.one_of(_json, _mutated)
)


# -- parse_error -----------------------------------------------------------------------------


MAX_TOKENS_TOO_HIGH = (
    "too many tokens: max tokens must be less than or equal to 4096, "
    "the maximum output for this model - received 8192."
)
PROMPT_TOO_LONG = (
    "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4292. "
    "Try using a shorter prompt, or enabling prompt truncating."
)


@pytest.mark.parametrize(
    ("status", "error_body", "ending", "message"),
    [
        (400, {"message": PROMPT_TOO_LONG}, Ending.CONTEXT_EXCEEDED, PROMPT_TOO_LONG),
        (
            400,
            {"message": MAX_TOKENS_TOO_HIGH},
            Ending.ERROR,
            MAX_TOKENS_TOO_HIGH,
        ),
        (
            400,
            {"id": "2f4e", "message": "invalid request: message must not be empty in a turn"},
            Ending.ERROR,
            "invalid request: message must not be empty in a turn",
        ),
        (
            429,
            {"message": "You are using a Trial key, which is limited to 10 API calls / minute."},
            Ending.ERROR,
            "You are using a Trial key, which is limited to 10 API calls / minute.",
        ),
        (
            429,
            {"message": "too many tokens per minute"},
            Ending.ERROR,
            "too many tokens per minute",
        ),
        (
            500,
            {"message": "internal server error, this has been reported to our developers"},
            Ending.ERROR,
            "internal server error, this has been reported to our developers",
        ),
        (499, {"message": "request cancelled"}, Ending.ERROR, "request cancelled"),
        (502, "<html>Bad Gateway</html>", Ending.ERROR, "<html>Bad Gateway</html>"),
        (503, None, Ending.ERROR, ""),
        (400, [{"message": PROMPT_TOO_LONG}], Ending.CONTEXT_EXCEEDED, PROMPT_TOO_LONG),
        (400, json.dumps({"message": PROMPT_TOO_LONG}), Ending.CONTEXT_EXCEEDED, PROMPT_TOO_LONG),
        (400, {"error": {"message": PROMPT_TOO_LONG}}, Ending.CONTEXT_EXCEEDED, PROMPT_TOO_LONG),
    ],
)
def test_error_bodies(status: int, error_body: Any, ending: Ending, message: str) -> None:
    turn = WIRE.parse_error(status, error_body, retry_after=1.0)
    _shared.check_error_turn(turn, status=status, ending=ending, message=message, retry_after=1.0)


test_parse_error_never_raises = _shared.any_error_body_test(WIRE, _shared.error_bodies(_json))


# -- streams ---------------------------------------------------------------------------------


TEXT_STREAM = [
    MESSAGE_START,
    content_start(),
    content_delta("Hello"),
    content_delta(" there!"),
    content_end(),
    message_end(),
]


def test_text_stream() -> None:
    turn = WIRE.parse_stream(sse(*TEXT_STREAM))
    assert turn.ending is Ending.COMPLETE and turn.text == "Hello there!"
    assert turn.raw_reason == "COMPLETE" and turn.response_id == RID
    assert turn.usage == Usage(input_tokens=71, output_tokens=9)


def test_feed_returns_visible_text_deltas_only() -> None:
    acc = WIRE.stream()
    events = [
        MESSAGE_START,
        content_start(0, "thinking"),
        content_delta("hmm", 0, "thinking"),
        content_start(1),
        content_delta("4", 1),
        plan_delta("I will"),
    ]
    assert [acc.feed(e["type"], json.dumps(e)) for e in events] == ["", "", "", "", "4", ""]


def test_tool_call_stream_gives_the_same_turn_as_the_body() -> None:
    events = [
        MESSAGE_START,
        plan_delta("I will look up "),
        plan_delta("the weather in Toronto."),
        call_start(0),
        call_delta('{"loca', 0),
        call_delta('tion":"Toronto"}', 0),
        {"type": "tool-call-end", "index": 0},
        call_start(1, "get_weather_2"),
        {"type": "tool-call-end", "index": 1},
        message_end("TOOL_CALL"),
    ]
    streamed = WIRE.parse_stream(sse(*events))
    whole = WIRE.parse_response(body(calling(call(), call("get_weather_2", "")), "TOOL_CALL"))
    _shared.check_same_turn(streamed, whole, Ending.TOOL_USE, "response_id")


def test_thinking_stream_matches_the_body() -> None:
    events = [
        MESSAGE_START,
        content_start(0, "thinking"),
        content_delta("2+2 ", 0, "thinking"),
        content_delta("is 4.", 0, "thinking"),
        content_end(0),
        content_start(1),
        content_delta("4", 1),
        content_end(1),
        message_end(),
    ]
    message = {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "2+2 is 4."}, {"type": "text", "text": "4"}],
    }
    assert WIRE.parse_stream(sse(*events)).message == WIRE.parse_response(body(message)).message


test_a_stream_without_message_end_is_truncated = _shared.cut_off_test(
    WIRE, sse(*TEXT_STREAM[:4], done=False), ""
)
test_a_stream_that_reaches_done_without_message_end_is_an_error = _shared.no_reason_test(
    WIRE, sse(*TEXT_STREAM[:4]), text="Hello there!"
)


def test_a_stream_cut_mid_tool_call_keeps_the_partial_call() -> None:
    turn = WIRE.parse_stream(
        sse(MESSAGE_START, call_start(0), call_delta('{"location": "To', 0), done=False)
    )
    assert turn.ending is Ending.TRUNCATED
    assert (
        turn.tool_calls[0].arguments_raw == '{"location": "To'
        and turn.tool_calls[0].arguments is None
    )


def test_stream_finish_reasons_follow_the_body_table() -> None:
    for finish, ending in [
        ("MAX_TOKENS", Ending.TRUNCATED),
        ("ERROR_TOXIC", Ending.FILTERED),
        ("STOP_SEQUENCE", Ending.COMPLETE),
        ("NEW", Ending.ERROR),
    ]:
        assert (
            WIRE.parse_stream(sse(MESSAGE_START, content_delta("x"), message_end(finish))).ending
            is ending
        )


def test_an_error_finish_keeps_the_error_text_and_the_partial_text() -> None:
    turn = WIRE.parse_stream(
        sse(MESSAGE_START, content_delta("Part"), message_end("ERROR", error="internal error"))
    )
    assert turn.ending is Ending.ERROR and turn.text == "Part" and turn.detail == "internal error"


def test_an_error_event_is_an_error_and_keeps_the_partial_text() -> None:
    stream = (
        sse(MESSAGE_START, content_delta("Part"), done=False)
        + 'data: {"message": "stream broke"}\n\n'
    )
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.ERROR and turn.text == "Part"
    assert (
        turn.error is not None
        and turn.error.message == "stream broke"
        and turn.error.status is None
    )


def test_v1_stream_events_are_read() -> None:
    events = [
        {"is_finished": False, "event_type": "stream-start", "generation_id": "g-1"},
        {"is_finished": False, "event_type": "text-generation", "text": "Hel"},
        {"is_finished": False, "event_type": "text-generation", "text": "lo"},
        {
            "is_finished": True,
            "event_type": "stream-end",
            "finish_reason": "COMPLETE",
            "response": {
                "text": "Hello",
                "meta": {"tokens": {"input_tokens": 3, "output_tokens": 2}},
            },
        },
    ]
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    turn = WIRE.parse_stream(text)
    assert turn.ending is Ending.COMPLETE and turn.text == "Hello" and turn.response_id == "g-1"
    assert turn.usage == Usage(input_tokens=3, output_tokens=2)
    calls = {
        "event_type": "tool-calls-generation",
        "tool_calls": [{"name": "f", "parameters": {"a": 1}}],
    }
    end = {"event_type": "stream-end", "finish_reason": "COMPLETE"}
    turn = WIRE.parse_stream(f"data: {json.dumps(calls)}\n\ndata: {json.dumps(end)}\n\n")
    assert turn.ending is Ending.TOOL_USE and turn.tool_calls[0].arguments == {"a": 1}


def test_garbage_lines_are_ignored() -> None:
    assert WIRE.parse_stream(sse("not json", "3", *TEXT_STREAM)).ending is Ending.COMPLETE


test_garbage_events_never_crash_the_accumulator = _shared.any_events_test(
    WIRE,
    st.lists(
        st.tuples(
            st.sampled_from(
                [None, "message-start", "content-delta", "tool-call-start", "message-end", "error"]
            ),
            st.one_of(
                _json.map(json.dumps),
                st.text(max_size=10),
                st.builds(
                    lambda kind, index, delta: json.dumps(
                        {"type": kind, "index": index, "delta": delta}
                    ),
                    st.sampled_from(
                        [
                            "content-start",
                            "content-delta",
                            "tool-call-start",
                            "tool-call-delta",
                            "tool-plan-delta",
                            "message-end",
                            "tool-calls-generation",
                        ]
                    ),
                    _json,
                    st.one_of(_json, st.builds(lambda m: {"message": m}, _json)),
                ),
            ),
        ),
        max_size=12,
    ),
)


# -- requests --------------------------------------------------------------------------------


def transcript() -> tuple[Message, ...]:
    plan = ThinkingPart(text="I will check the weather.", provider_details=TOOL_PLAN)
    c = ToolCall.from_raw(
        id="get_weather_1byjy32y4hvq", name="get_weather", arguments_raw='{"location":"Toronto"}'
    )
    return (
        Message.system("You are a weather bot."),
        Message.user("Weather in Toronto?"),
        Message(role="assistant", parts=(plan, c)),
        Message.tool_results(
            [
                ToolResult(
                    call_id="get_weather_1byjy32y4hvq",
                    name="get_weather",
                    content='{"temperature": 20}',
                )
            ]
        ),
        Message(role="assistant", parts=(TextPart(text="It is 20C."),)),
        Message.user("Thanks."),
    )


def test_render_request_builds_the_documented_body() -> None:
    request = ModelRequest(
        model="command-a-03-2025",
        messages=transcript(),
        tools=(
            ToolSpec(
                name="get_weather",
                description="Gets the weather of a given location",
                parameters={
                    "type": "object",
                    "properties": {"location": {"type": "string"}},
                    "required": ["location"],
                },
            ),
        ),
        settings=ModelSettings(
            max_tokens=300, temperature=0.3, top_p=0.75, stop=("END",), tool_choice="required"
        ),
        stream=True,
    )
    assert WIRE.render_request(request) == {
        "model": "command-a-03-2025",
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "Weather in Toronto?"},
            {
                "role": "assistant",
                "tool_plan": "I will check the weather.",
                "tool_calls": [
                    {
                        "id": "get_weather_1byjy32y4hvq",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"location":"Toronto"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "get_weather_1byjy32y4hvq",
                "content": '{"temperature": 20}',
            },
            {"role": "assistant", "content": [{"type": "text", "text": "It is 20C."}]},
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Gets the weather of a given location",
                    "parameters": {
                        "type": "object",
                        "properties": {"location": {"type": "string"}},
                        "required": ["location"],
                    },
                },
            }
        ],
        "tool_choice": "REQUIRED",
        "max_tokens": 300,
        "temperature": 0.3,
        "p": 0.75,
        "stop_sequences": ["END"],
        "stream": True,
    }


@pytest.mark.parametrize(
    ("choice", "wire", "back"),
    [
        ("auto", None, None),
        ("required", "REQUIRED", "required"),
        ("none", "NONE", "none"),
        (None, None, None),
    ],
)
def test_tool_choice(choice: str | None, wire: str | None, back: str | None) -> None:
    request = ModelRequest(
        model="m",
        messages=(Message.user("hi"),),
        tools=(ToolSpec(name="a"),),
        settings=ModelSettings(tool_choice=choice),
    )
    rendered = WIRE.render_request(request)
    assert rendered.get("tool_choice") == wire
    assert WIRE.parse_request(rendered).settings.tool_choice == back


def test_a_named_tool_choice_offers_only_that_tool_and_requires_a_call() -> None:
    request = ModelRequest(
        model="m",
        messages=(Message.user("hi"),),
        tools=(ToolSpec(name="a"), ToolSpec(name="b", strict=True)),
        settings=ModelSettings(tool_choice="b"),
    )
    rendered = WIRE.render_request(request)
    assert rendered["tool_choice"] == "REQUIRED" and rendered["strict_tools"] is True
    assert [t["function"]["name"] for t in rendered["tools"]] == ["b"]
    parsed = WIRE.parse_request(rendered)
    assert parsed.tools == (ToolSpec(name="b", strict=True),)


def test_assistant_thinking_and_user_images_round_trip() -> None:
    messages = (
        Message(
            role="user",
            parts=(
                TextPart(text="What is this?"),
                MediaPart(mime_type="image/png", data="iVBORw0KGgo="),
            ),
        ),
        Message(role="assistant", parts=(ThinkingPart(text="An icon."), TextPart(text="A logo."))),
    )
    rendered = WIRE.render_request(ModelRequest(model="m", messages=messages))
    assert rendered["messages"][0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    assert rendered["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "An icon."},
        {"type": "text", "text": "A logo."},
    ]
    assert WIRE.parse_request(rendered).messages == messages


def test_parse_request_tolerates_unknown_roles_fields_and_document_results() -> None:
    parsed = WIRE.parse_request(
        {
            "model": "command-r-plus",
            "messages": [
                {"role": "developer", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "chatbot", "content": "old"},
                {"role": "assistant", "tool_calls": [call("c1", "{}")], "citations": []},
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": [
                        {"type": "document", "document": {"data": {"temp": 20}}},
                        {"type": "text", "text": "!"},
                    ],
                },
            ],
            "documents": [{"data": {"text": "x"}}],
            "safety_mode": "STRICT",
            "max_tokens": "lots",
        }
    )
    assert [m.role for m in parsed.messages] == ["system", "user", "assistant", "tool"]
    assert parsed.messages[3].results == (
        ToolResult(call_id="c1", name="get_weather", content='{"temp": 20}!'),
    )
    assert parsed.settings.extra_body == {
        "documents": [{"data": {"text": "x"}}],
        "safety_mode": "STRICT",
    }
    assert parsed.settings.max_tokens is None


def test_parse_request_rejects_non_bodies() -> None:
    with pytest.raises(WireFormatError):
        WIRE.parse_request({"messages": "hi"})
    with pytest.raises(WireFormatError):
        WIRE.parse_request({"messages": [3]})


def test_round_trip_gives_back_the_request() -> None:
    request = ModelRequest(
        model="command-a-03-2025",
        messages=transcript(),
        tools=(ToolSpec(name="get_weather", description="d"),),
        settings=ModelSettings(
            max_tokens=5,
            temperature=0.5,
            top_p=0.5,
            stop=("x",),
            tool_choice="none",
            extra_body={"seed": 3},
        ),
        stream=True,
    )
    assert WIRE.parse_request(WIRE.render_request(request)) == request


_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=12, max_size=12).map(
    lambda s: "f_" + s
)


test_round_trip_property = _shared.round_trip_test(
    WIRE,
    _shared.transcripts(
        _ids,
        thinking=_shared.THINKING,
        plan=st.builds(ThinkingPart, text=_shared.TEXTS, provider_details=st.just(TOOL_PLAN)),
        raw_arguments=True,
    ),
)


# -- render_response -------------------------------------------------------------------------


test_render_response_refuses_naming_the_ending_and_the_api = _shared.refusal_test(
    WIRE, body(calling(call()), "TOOL_CALL"), r"tool_use.*cohere"
)
