"""mistral: chat completion bodies, streamed chunks, error bodies, requests.

Fixtures are written from Mistral's API reference (chat completion, streaming, function calling,
Magistral reasoning chunks, error objects), not copied from the recorded corpus. There is no SDK
check: Mistral is not served by the emulator, so render_response refuses every turn.
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
from donegate.models.mistral import WIRE, Mistral

API = "mistral"
MODEL = "mistral-small-latest"
RID = "cmpl-e5cc70bb28c444948073e77776eb30ef"


# -- builders --------------------------------------------------------------------------------


def body(
    content: Any = "Hello!", finish: Any = "stop", calls: Any = None, **extra: Any
) -> dict[str, Any]:
    """A chat completion body."""
    out: dict[str, Any] = {
        "id": RID,
        "object": "chat.completion",
        "created": 1702256327,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "tool_calls": calls},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 16, "completion_tokens": 34, "total_tokens": 50},
    }
    out.update(extra)
    return out


def call(
    call_id: str = "D681PevKs", arguments: Any = '{"transaction_id": "T1001"}', index: int = 0
) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "retrieve_payment_status", "arguments": arguments},
        "index": index,
    }


def thinking(*texts: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": [{"type": "text", "text": t} for t in texts]}


def chunk(delta: dict[str, Any], finish: str | None = None, usage: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": RID,
        "object": "chat.completion.chunk",
        "created": 1702256327,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage:
        out["usage"] = {"prompt_tokens": 16, "completion_tokens": 34, "total_tokens": 50}
    return out


def sse(*events: dict[str, Any] | str, done: bool = True) -> str:
    out = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out)


# -- the protocol ----------------------------------------------------------------------------


def test_wire_implements_the_protocol_and_is_registered() -> None:
    _shared.check_registered(WIRE, API, Mistral)
    assert registry.classify(API, body()).ending is Ending.COMPLETE


# -- parse_response --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "content", "calls", "ending"),
    [
        ("stop", "Hello!", None, Ending.COMPLETE),
        ("tool_calls", "", [call()], Ending.TOOL_USE),
        ("length", "The sky appears blue due", None, Ending.TRUNCATED),
        ("model_length", "The sky appears blue due", None, Ending.TRUNCATED),
        ("error", "", None, Ending.ERROR),
    ],
)
def test_every_finish_reason_maps_to_its_ending(
    finish: str, content: Any, calls: Any, ending: Ending
) -> None:
    turn = WIRE.parse_response(body(content, finish, calls))
    assert turn.ending is ending and turn.raw_reason == finish
    assert turn.model == MODEL and turn.response_id == RID


def test_unknown_and_missing_finish_reasons_are_errors_that_say_why() -> None:
    unknown = WIRE.parse_response(body("hi", "something_new"))
    assert unknown.ending is Ending.ERROR and unknown.raw_reason == "something_new"
    assert unknown.detail is not None and "something_new" in unknown.detail
    missing = WIRE.parse_response(body("hi", None))
    assert missing.ending is Ending.ERROR and missing.raw_reason is None and missing.detail


@pytest.mark.parametrize(
    "content", ["", None, "  \n", [thinking("Just say ok.")], [{"type": "text", "text": " "}]]
)
def test_no_visible_output_is_empty(content: Any) -> None:
    assert WIRE.parse_response(body(content)).ending is Ending.EMPTY


def test_stop_with_tool_calls_is_tool_use() -> None:
    turn = WIRE.parse_response(body("", "stop", [call()]))
    assert turn.ending is Ending.TOOL_USE


def test_arguments_may_be_a_string_or_an_object() -> None:
    turn = WIRE.parse_response(
        body(
            "",
            "tool_calls",
            [
                call("a", '{"transaction_id": "T1"}', 0),
                call("b", {"transaction_id": "T2"}, 1),
                call("c", None, 2),
            ],
        )
    )
    assert turn.ending is Ending.TOOL_USE
    a, b, c = turn.tool_calls
    assert (a.id, a.name, a.arguments, a.arguments_raw) == (
        "a",
        "retrieve_payment_status",
        {"transaction_id": "T1"},
        '{"transaction_id": "T1"}',
    )
    assert (b.arguments, b.arguments_raw) == ({"transaction_id": "T2"}, '{"transaction_id":"T2"}')
    assert c.arguments == {}


@pytest.mark.parametrize("arguments", ['{"transaction_id": "T1', "[1, 2]", "3"])
def test_unparseable_arguments_are_malformed(arguments: str) -> None:
    turn = WIRE.parse_response(body("", "tool_calls", [call(arguments=arguments)]))
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert turn.tool_calls[0].arguments is None and turn.tool_calls[0].arguments_raw == arguments
    assert turn.detail is not None and turn.detail.startswith("retrieve_payment_status:")


def test_length_mid_tool_call_is_truncated_and_keeps_the_call() -> None:
    turn = WIRE.parse_response(body("", "length", [call(arguments='{"transaction_id": "T')]))
    assert turn.ending is Ending.TRUNCATED
    assert turn.tool_calls[0].arguments_raw == '{"transaction_id": "T'


def test_thinking_chunks_are_not_visible_text() -> None:
    turn = WIRE.parse_response(
        body(
            [
                thinking("Two plus ", "two."),
                {"type": "text", "text": "4"},
                {"type": "reference", "reference_ids": [1]},
            ]
        )
    )
    assert turn.ending is Ending.COMPLETE and turn.text == "4"
    assert turn.thinking == (ThinkingPart(text="Two plus two."),)
    assert turn.message.parts[2] == ServerToolPart(
        name="reference", data={"type": "reference", "reference_ids": [1]}
    )


def test_an_image_chunk_is_media() -> None:
    turn = WIRE.parse_response(
        body([{"type": "image_url", "image_url": {"url": "https://x/y.png"}}])
    )
    assert turn.message.parts == (MediaPart(mime_type="image/*", uri="https://x/y.png"),)


def test_usage_reads_cached_tokens() -> None:
    usage = {
        "prompt_tokens": 109,
        "completion_tokens": 19,
        "total_tokens": 128,
        "prompt_tokens_details": {"cached_tokens": 64},
    }
    turn = WIRE.parse_response(body(usage=usage))
    assert turn.usage == Usage(input_tokens=109, output_tokens=19, cache_read_tokens=64)
    assert WIRE.parse_response(body(usage=None)).usage == Usage()


@pytest.mark.parametrize(
    "envelope",
    [
        {
            "object": "error",
            "message": "Service unavailable.",
            "type": "internal_server_error",
            "param": None,
            "code": "1000",
        },
        {"detail": "Internal error"},
        {"message": "Requests rate limit exceeded"},
    ],
)
def test_a_200_error_body_is_an_error_turn(envelope: dict[str, Any]) -> None:
    turn = WIRE.parse_response(envelope)
    assert turn.ending is Ending.ERROR and turn.error is not None and turn.error.message


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ({"id": "x", "choices": []}, "choices"),
        ({"id": "x", "choices": "x"}, "choices"),
        ({"choices": [3]}, "choices[0]"),
        ({"choices": [{"finish_reason": "stop"}]}, "choices[0].message"),
        (body(3), "choices[0].message.content"),
        (body([3]), "choices[0].message.content[0]"),
        (body([{"type": "text", "text": 3}]), "choices[0].message.content[0].text"),
        (body("", "tool_calls", "x"), "choices[0].message.tool_calls"),
        (body("", "tool_calls", [{"id": "x"}]), "choices[0].message.tool_calls[0].function"),
        (
            body("", "tool_calls", [{"function": {"arguments": "{}"}}]),
            "choices[0].message.tool_calls[0].function.name",
        ),
        (body("hi", 3), "choices[0].finish_reason"),
    ],
)
def test_malformed_bodies_raise_wire_format_errors_naming_the_field(bad: Any, path: str) -> None:
    _shared.check_malformed(WIRE, bad, path, api=API)


test_a_non_object_body_raises = _shared.non_object_test(WIRE)


_json = _shared.json_values()
_mutated = _shared.with_any_field(
    st.builds(
        body,
        st.one_of(
            st.just("hi"),
            st.lists(
                st.sampled_from([thinking("t"), {"type": "text", "text": "x"}]) | _json,
                max_size=3,
            ),
        ),
        st.sampled_from(["stop", "tool_calls", "length", None, 3]),
        st.one_of(st.none(), st.lists(st.just(call()) | _json, max_size=3)),
    ),
    ["usage", "model", "id", "choices", "object", "detail", "extra"],
    _json,
)


test_arbitrary_bodies_give_a_turn_or_a_wire_format_error = _shared.any_body_test(
    WIRE, st.one_of(_json, _mutated)
)


# -- parse_error -----------------------------------------------------------------------------


CONTEXT_MESSAGE = (
    "Prompt contains 150004 tokens and 0 draft tokens, "
    "too large for model with 131072 maximum context length"
)


@pytest.mark.parametrize(
    ("status", "error_body", "ending", "kind", "message"),
    [
        (
            400,
            {
                "object": "error",
                "message": CONTEXT_MESSAGE,
                "type": "invalid_request_invalid_args",
                "param": None,
                "code": "3051",
            },
            Ending.CONTEXT_EXCEEDED,
            "invalid_request_invalid_args",
            CONTEXT_MESSAGE,
        ),
        (
            422,
            {
                "object": "error",
                "message": {
                    "detail": [
                        {
                            "type": "extra_forbidden",
                            "loc": ["body", "safe_mode"],
                            "msg": "Extra inputs are not permitted",
                        }
                    ]
                },
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            },
            Ending.ERROR,
            "invalid_request_error",
            "body.safe_mode: Extra inputs are not permitted",
        ),
        (
            422,
            {"detail": [{"type": "missing", "loc": ["body", "messages"], "msg": "Field required"}]},
            Ending.ERROR,
            None,
            "body.messages: Field required",
        ),
        (
            429,
            {"message": "Requests rate limit exceeded"},
            Ending.ERROR,
            None,
            "Requests rate limit exceeded",
        ),
        (
            403,
            {
                "object": "error",
                "message": "This model is not available in your subscription tier",
                "type": "tier_not_allowed",
                "param": None,
                "code": "1910",
            },
            Ending.ERROR,
            "tier_not_allowed",
            "This model is not available in your subscription tier",
        ),
        (
            401,
            {"message": "Unauthorized", "request_id": "3f2a"},
            Ending.ERROR,
            None,
            "Unauthorized",
        ),
        (500, "<html>oops</html>", Ending.ERROR, None, "<html>oops</html>"),
        (503, None, Ending.ERROR, None, ""),
        (
            400,
            [{"object": "error", "message": CONTEXT_MESSAGE}],
            Ending.CONTEXT_EXCEEDED,
            None,
            CONTEXT_MESSAGE,
        ),
        (
            400,
            json.dumps({"object": "error", "message": CONTEXT_MESSAGE}),
            Ending.CONTEXT_EXCEEDED,
            None,
            CONTEXT_MESSAGE,
        ),
        (
            400,
            {"error": {"message": CONTEXT_MESSAGE, "type": "upstream_error"}},
            Ending.CONTEXT_EXCEEDED,
            "upstream_error",
            CONTEXT_MESSAGE,
        ),
        (400, {"object": "error", "message": "bad", "code": 3001}, Ending.ERROR, "3001", "bad"),
    ],
)
def test_error_bodies(
    status: int, error_body: Any, ending: Ending, kind: str | None, message: str
) -> None:
    turn = WIRE.parse_error(status, error_body)
    _shared.check_error_turn(turn, status=status, ending=ending, type=kind, message=message)


def test_a_rate_limit_never_reads_as_context_exceeded() -> None:
    turn = WIRE.parse_error(
        429, {"message": "too many tokens per minute for the context window"}, retry_after=3
    )
    assert turn.ending is Ending.ERROR
    assert turn.error is not None and turn.error.retry_after == 3


test_parse_error_never_raises = _shared.any_error_body_test(WIRE, _shared.error_bodies(_json))


# -- streams ---------------------------------------------------------------------------------


TEXT_STREAM = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hello"}),
    chunk({"content": " there!"}),
    chunk({"content": ""}, "stop", usage=True),
]


def test_text_stream() -> None:
    turn = WIRE.parse_stream(sse(*TEXT_STREAM))
    assert turn.ending is Ending.COMPLETE and turn.text == "Hello there!"
    assert turn.raw_reason == "stop" and turn.model == MODEL and turn.response_id == RID
    assert turn.usage == Usage(input_tokens=16, output_tokens=34)


def test_feed_returns_visible_text_deltas_only() -> None:
    acc = WIRE.stream()
    events = [
        chunk({"role": "assistant", "content": [thinking("hmm")]}),
        chunk({"content": [{"type": "text", "text": "4"}]}),
        chunk({"content": "2"}),
        chunk({"tool_calls": [call()]}),
    ]
    assert [acc.feed(None, json.dumps(e)) for e in events] + [acc.feed(None, "[DONE]")] == [
        "",
        "4",
        "2",
        "",
        "",
    ]


def test_stream_gives_the_same_turn_as_the_body() -> None:
    events = [
        chunk({"role": "assistant", "content": [thinking("Check ")]}),
        chunk({"content": [thinking("payment.")]}),
        chunk({"content": "Looking."}),
        chunk({"tool_calls": [call("D681PevKs", '{"transaction_id": ', 0)]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"T1001"}'}}]}),
        chunk(
            {"tool_calls": [call("Xy12AbCdE", {"transaction_id": "T1002"}, 1)]},
            "tool_calls",
            usage=True,
        ),
    ]
    streamed = WIRE.parse_stream(sse(*events))
    whole = WIRE.parse_response(
        body(
            [thinking("Check payment."), {"type": "text", "text": "Looking."}],
            "tool_calls",
            [
                call("D681PevKs", '{"transaction_id": "T1001"}', 0),
                call("Xy12AbCdE", {"transaction_id": "T1002"}, 1),
            ],
        )
    )
    _shared.check_same_turn(streamed, whole, Ending.TOOL_USE, "model", "response_id")


def test_whole_calls_sent_at_the_same_index_stay_apart() -> None:
    events = [
        chunk({"tool_calls": [call("aaaaaaaaa", "{}", 0)]}),
        chunk({"tool_calls": [call("bbbbbbbbb", "{}", 0)]}),
        chunk({}, "tool_calls"),
    ]
    turn = WIRE.parse_stream(sse(*events))
    assert [c.id for c in turn.tool_calls] == ["aaaaaaaaa", "bbbbbbbbb"]
    assert turn.ending is Ending.TOOL_USE


test_a_stream_without_a_finish_reason_is_truncated = _shared.cut_off_test(
    WIRE, sse(*TEXT_STREAM[:3], done=False), ""
)
test_a_stream_that_reaches_done_without_a_finish_reason_is_an_error = _shared.no_reason_test(
    WIRE, sse(*TEXT_STREAM[:3]), text="Hello there!"
)


def test_a_stream_cut_mid_tool_call_keeps_the_partial_call() -> None:
    turn = WIRE.parse_stream(
        sse(chunk({"tool_calls": [call(arguments='{"transaction_id": "T')]}), done=False)
    )
    assert turn.ending is Ending.TRUNCATED
    assert turn.tool_calls[0].arguments_raw == '{"transaction_id": "T'
    assert turn.tool_calls[0].arguments is None


def test_length_and_error_finish_reasons_in_streams() -> None:
    assert WIRE.parse_stream(sse(chunk({"content": "abc"}, "length"))).ending is Ending.TRUNCATED
    assert (
        WIRE.parse_stream(sse(chunk({"content": "abc"}, "model_length"))).ending is Ending.TRUNCATED
    )
    assert WIRE.parse_stream(sse(chunk({"content": "abc"}, "error"))).ending is Ending.ERROR


def test_an_error_chunk_is_an_error_and_keeps_the_partial_text() -> None:
    failure = {
        "object": "error",
        "message": "Internal server error",
        "type": "internal_server_error",
        "code": "1000",
    }
    turn = WIRE.parse_stream(sse(chunk({"content": "Partial"}), failure, done=False))
    assert turn.ending is Ending.ERROR and turn.text == "Partial"
    assert turn.error is not None
    assert (turn.error.type, turn.error.message, turn.error.status) == (
        "internal_server_error",
        "Internal server error",
        None,
    )


def test_garbage_lines_are_ignored() -> None:
    noisy = sse("not json", "3", *TEXT_STREAM)
    assert WIRE.parse_stream(noisy).ending is Ending.COMPLETE


test_garbage_events_never_crash_the_accumulator = _shared.any_events_test(
    WIRE,
    st.lists(
        st.tuples(
            st.sampled_from([None, "message", "error"]),
            st.one_of(
                _json.map(json.dumps),
                st.text(max_size=10),
                st.builds(
                    lambda d, f: json.dumps(chunk(d, f)),
                    st.dictionaries(st.sampled_from(["content", "tool_calls", "role"]), _json),
                    st.sampled_from([None, "stop", 3]),
                ),
            ),
        ),
        max_size=12,
    ),
)


# -- requests --------------------------------------------------------------------------------


def transcript() -> tuple[Message, ...]:
    calls = (
        ToolCall.from_args(
            id="D681PevKs", name="retrieve_payment_status", arguments={"transaction_id": "T1001"}
        ),
        ToolCall.from_raw(
            id="Xy12AbCdE",
            name="retrieve_payment_date",
            arguments_raw='{"transaction_id": "T1001"}',
        ),
    )
    return (
        Message.system("You are a payments assistant."),
        Message.user("Status and date of T1001?"),
        Message(role="assistant", parts=(TextPart(text="Checking both."), *calls)),
        Message.tool_results(
            [
                ToolResult(
                    call_id="D681PevKs",
                    name="retrieve_payment_status",
                    content='{"status": "Paid"}',
                ),
                ToolResult(
                    call_id="Xy12AbCdE",
                    name="retrieve_payment_date",
                    content='{"date": "2021-10-05"}',
                ),
            ]
        ),
        Message.user("Thanks."),
    )


def test_render_request_builds_the_documented_body() -> None:
    request = ModelRequest(
        model=MODEL,
        messages=transcript(),
        tools=(
            ToolSpec(
                name="retrieve_payment_status",
                description="Get payment status of a transaction",
                parameters={
                    "type": "object",
                    "properties": {"transaction_id": {"type": "string"}},
                    "required": ["transaction_id"],
                },
                strict=True,
            ),
        ),
        settings=ModelSettings(
            max_tokens=256,
            temperature=0.3,
            top_p=0.9,
            stop=("END",),
            tool_choice="auto",
            parallel_tool_calls=False,
        ),
        stream=True,
    )
    assert WIRE.render_request(request) == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are a payments assistant."},
            {"role": "user", "content": "Status and date of T1001?"},
            {
                "role": "assistant",
                "content": "Checking both.",
                "tool_calls": [
                    {
                        "id": "D681PevKs",
                        "type": "function",
                        "function": {
                            "name": "retrieve_payment_status",
                            "arguments": '{"transaction_id":"T1001"}',
                        },
                    },
                    {
                        "id": "Xy12AbCdE",
                        "type": "function",
                        "function": {
                            "name": "retrieve_payment_date",
                            "arguments": '{"transaction_id": "T1001"}',
                        },
                    },
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "D681PevKs",
                "name": "retrieve_payment_status",
                "content": '{"status": "Paid"}',
            },
            {
                "role": "tool",
                "tool_call_id": "Xy12AbCdE",
                "name": "retrieve_payment_date",
                "content": '{"date": "2021-10-05"}',
            },
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "retrieve_payment_status",
                    "description": "Get payment status of a transaction",
                    "parameters": {
                        "type": "object",
                        "properties": {"transaction_id": {"type": "string"}},
                        "required": ["transaction_id"],
                    },
                    "strict": True,
                },
            }
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "max_tokens": 256,
        "temperature": 0.3,
        "top_p": 0.9,
        "stop": ["END"],
        "stream": True,
    }


def test_assistant_thinking_goes_back_as_chunks_and_tool_only_turns_have_no_content() -> None:
    request = ModelRequest(
        model=MODEL,
        messages=(
            Message.user("hi"),
            Message(role="assistant", parts=(ThinkingPart(text="hmm"), TextPart(text="Hello."))),
            Message.user("call it"),
            Message(
                role="assistant",
                parts=(ToolCall.from_args(id="abcdefghi", name="f", arguments={}),),
            ),
        ),
    )
    messages = WIRE.render_request(request)["messages"]
    assert messages[1]["content"] == [
        {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
        {"type": "text", "text": "Hello."},
    ]
    assert "content" not in messages[3]


@pytest.mark.parametrize(
    ("choice", "wire", "back"),
    [
        ("auto", "auto", "auto"),
        ("none", "none", "none"),
        ("required", "any", "required"),
        (
            "retrieve_payment_status",
            {"type": "function", "function": {"name": "retrieve_payment_status"}},
            "retrieve_payment_status",
        ),
        (None, None, None),
    ],
)
def test_tool_choice(choice: str | None, wire: Any, back: str | None) -> None:
    request = ModelRequest(
        model=MODEL, messages=(Message.user("hi"),), settings=ModelSettings(tool_choice=choice)
    )
    rendered = WIRE.render_request(request)
    assert rendered.get("tool_choice") == wire
    assert WIRE.parse_request(rendered).settings.tool_choice == back
    assert (
        WIRE.parse_request({**rendered, "tool_choice": "required"}).settings.tool_choice
        == "required"
    )


def test_user_images_go_as_image_url_chunks_and_come_back() -> None:
    message = Message(
        role="user",
        parts=(
            TextPart(text="What is this?"),
            MediaPart(mime_type="image/png", data="iVBORw0KGgo="),
        ),
    )
    rendered = WIRE.render_request(ModelRequest(model=MODEL, messages=(message,)))
    assert rendered["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": "data:image/png;base64,iVBORw0KGgo="},
    ]
    assert WIRE.parse_request(rendered).messages == (message,)


def test_parse_request_tolerates_developer_and_unknown_roles_and_fields() -> None:
    parsed = WIRE.parse_request(
        {
            "model": MODEL,
            "messages": [
                {"role": "developer", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "function", "content": "old"},
                {"role": "assistant", "content": None, "tool_calls": [call("abcdefghi", {"a": 1})]},
                {"role": "tool", "tool_call_id": "abcdefghi", "content": "ok"},
            ],
            "stop": "END",
            "random_seed": 7,
            "safe_prompt": True,
            "tools": [{"type": "function", "function": {"name": "f"}}, {"type": "web_search"}],
        }
    )
    assert [m.role for m in parsed.messages] == ["system", "user", "assistant", "tool"]
    assert parsed.messages[3].results == (
        ToolResult(call_id="abcdefghi", name="retrieve_payment_status", content="ok"),
    )
    assert parsed.settings.stop == ("END",)
    assert parsed.settings.extra_body == {"random_seed": 7, "safe_prompt": True}
    assert parsed.tools == (ToolSpec(name="f", parameters={"type": "object"}),)


def test_parse_request_rejects_non_bodies() -> None:
    with pytest.raises(WireFormatError):
        WIRE.parse_request({"messages": "hi"})
    with pytest.raises(WireFormatError):
        WIRE.parse_request({"messages": ["hi"]})


def test_round_trip_gives_back_the_request() -> None:
    request = ModelRequest(
        model=MODEL,
        messages=transcript(),
        tools=(ToolSpec(name="retrieve_payment_status", description="d", strict=True),),
        settings=ModelSettings(
            max_tokens=5,
            temperature=0.5,
            top_p=1.0,
            stop=("x", "y"),
            tool_choice="required",
            parallel_tool_calls=True,
            extra_body={"random_seed": 1},
        ),
        stream=True,
    )
    assert WIRE.parse_request(WIRE.render_request(request)) == request


_ids = st.text(alphabet="abcdefABCDEF0123456789", min_size=9, max_size=9)


test_round_trip_property = _shared.round_trip_test(
    WIRE,
    _shared.transcripts(_ids, thinking=_shared.THINKING, raw_arguments=True),
    model=MODEL,
)


# -- render_response -------------------------------------------------------------------------


test_render_response_refuses_naming_the_ending_and_the_api = _shared.refusal_test(
    WIRE, body("x", "length"), r"truncated.*mistral"
)
