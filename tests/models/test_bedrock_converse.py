"""bedrock-converse: Converse bodies, ConverseStream events, error bodies, requests.

Fixtures are written from the Bedrock Runtime API reference (Converse, ConverseStream, ContentBlock,
ToolUseBlock, ReasoningContentBlock, error types), not copied from the recorded corpus. There is
no SDK check: Bedrock is not served by the emulator, so render_response refuses every turn.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
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
    Turn,
    Usage,
)
from donegate.models import registry
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.bedrock_converse import WIRE, BedrockConverse

API = "bedrock-converse"


# -- builders --------------------------------------------------------------------------------


def body(content: Any, stop: Any = "end_turn", **extra: Any) -> dict[str, Any]:
    """A Converse response body."""
    out: dict[str, Any] = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 30, "outputTokens": 12, "totalTokens": 42},
        "metrics": {"latencyMs": 412},
    }
    out.update(extra)
    return out


def text(t: str) -> dict[str, Any]:
    return {"text": t}


def tool_use(call_id: str = "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", **args: Any) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": call_id, "name": "get_weather", "input": args}}


def reasoning(t: str, signature: str | None = "ErcBCkgIBRABGAIiQ") -> dict[str, Any]:
    inner: dict[str, Any] = {"text": t}
    if signature is not None:
        inner["signature"] = signature
    return {"reasoningContent": {"reasoningText": inner}}


def sse(*events: dict[str, Any] | str, named: bool = False) -> str:
    """ConverseStream events as SSE: boto3's wrapped dicts on ``data:`` lines, or (``named``)
    the event name on an ``event:`` line and the inner payload as data."""
    out = []
    for ev in events:
        if isinstance(ev, str):
            out.append(f"data: {ev}\n\n")
        elif named:
            ((name, payload),) = ev.items()
            out.append(f"event: {name}\ndata: {json.dumps(payload)}\n\n")
        else:
            out.append(f"data: {json.dumps(ev)}\n\n")
    return "".join(out)


START = {"messageStart": {"role": "assistant"}}


def text_delta(t: str, index: int = 0) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"text": t}, "contentBlockIndex": index}}


def stop_block(index: int = 0) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def message_stop(reason: str = "end_turn") -> dict[str, Any]:
    return {"messageStop": {"stopReason": reason}}


METADATA = {
    "metadata": {
        "usage": {"inputTokens": 30, "outputTokens": 12, "totalTokens": 42},
        "metrics": {"latencyMs": 412},
    }
}


def tool_start(index: int, call_id: str = "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q") -> dict[str, Any]:
    return {
        "contentBlockStart": {
            "start": {"toolUse": {"toolUseId": call_id, "name": "get_weather"}},
            "contentBlockIndex": index,
        }
    }


def tool_delta(fragment: str, index: int) -> dict[str, Any]:
    return {
        "contentBlockDelta": {"delta": {"toolUse": {"input": fragment}}, "contentBlockIndex": index}
    }


# -- the protocol ----------------------------------------------------------------------------


def test_wire_implements_the_protocol_and_is_registered() -> None:
    _shared.check_registered(WIRE, API, BedrockConverse)


def test_classify_goes_through_the_registry() -> None:
    turn = registry.classify(API, body([text("Paris.")]))
    assert turn.ending is Ending.COMPLETE and turn.api == API and turn.text == "Paris."


# -- parse_response --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stop", "content", "ending"),
    [
        ("end_turn", [text("Paris.")], Ending.COMPLETE),
        ("stop_sequence", [text("1, 2, 3")], Ending.COMPLETE),
        ("tool_use", [text("Checking."), tool_use(city="Paris")], Ending.TOOL_USE),
        ("max_tokens", [text("The capital of")], Ending.TRUNCATED),
        ("guardrail_intervened", [text("{ADDRESS} is a city.")], Ending.FILTERED),
        ("content_filtered", [text("The generated text has been blocked.")], Ending.FILTERED),
        ("model_context_window_exceeded", [text("partial")], Ending.CONTEXT_EXCEEDED),
        ("malformed_model_output", [], Ending.MALFORMED_TOOL_CALL),
        ("malformed_tool_use", [], Ending.MALFORMED_TOOL_CALL),
    ],
)
def test_every_stop_reason_maps_to_its_ending(
    stop: str, content: list[Any], ending: Ending
) -> None:
    turn = WIRE.parse_response(body(content, stop))
    assert turn.ending is ending
    assert turn.raw_reason == stop


def test_unknown_and_missing_stop_reasons_are_errors_that_say_why() -> None:
    unknown = WIRE.parse_response(body([text("hi")], "brand_new_reason"))
    assert unknown.ending is Ending.ERROR
    assert unknown.raw_reason == "brand_new_reason"
    assert unknown.detail is not None and "brand_new_reason" in unknown.detail
    missing = body([text("hi")])
    del missing["stopReason"]
    turn = WIRE.parse_response(missing)
    assert turn.ending is Ending.ERROR and turn.raw_reason is None and turn.detail


@pytest.mark.parametrize(
    "content",
    [[], [text("")], [text("  \n ")], [reasoning("I should say ok.")], [reasoning("x"), text(" ")]],
)
def test_no_visible_output_is_empty(content: list[Any]) -> None:
    assert WIRE.parse_response(body(content)).ending is Ending.EMPTY


def test_end_turn_with_a_tool_use_block_is_tool_use() -> None:
    turn = WIRE.parse_response(body([tool_use(city="Oslo")], "end_turn"))
    assert turn.ending is Ending.TOOL_USE
    assert turn.tool_calls[0].arguments == {"city": "Oslo"}


def test_tool_calls_keep_order_ids_and_arguments() -> None:
    turn = WIRE.parse_response(
        body(
            [text("Two lookups."), tool_use("tooluse_a", city="Oslo"), tool_use("tooluse_b")],
            "tool_use",
        )
    )
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("tooluse_a", "get_weather", {"city": "Oslo"}),
        ("tooluse_b", "get_weather", {}),
    ]
    assert turn.tool_calls[0].arguments_raw == '{"city":"Oslo"}'
    assert turn.text == "Two lookups."


@pytest.mark.parametrize("value", ['{"city": "Os', [1, 2], 3])
def test_input_that_is_not_an_object_is_malformed(value: Any) -> None:
    block = {"toolUse": {"toolUseId": "tooluse_x", "name": "get_weather", "input": value}}
    turn = WIRE.parse_response(body([block], "tool_use"))
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert turn.tool_calls[0].arguments is None
    assert turn.detail is not None and turn.detail.startswith("get_weather:")


def test_input_as_a_json_string_of_an_object_is_parsed() -> None:
    block = {"toolUse": {"toolUseId": "tooluse_x", "name": "f", "input": '{"a": 1}'}}
    turn = WIRE.parse_response(body([block], "tool_use"))
    assert turn.ending is Ending.TOOL_USE and turn.tool_calls[0].arguments == {"a": 1}


def test_reasoning_blocks_are_thinking_with_signatures() -> None:
    redacted = {"reasoningContent": {"redactedContent": "EmwKAhgBEgy3va3pzix/LafPsn4a"}}
    turn = WIRE.parse_response(body([reasoning("Let me think."), redacted, text("42")]))
    assert turn.ending is Ending.COMPLETE
    first, second = turn.thinking
    assert first == ThinkingPart(text="Let me think.", signature="ErcBCkgIBRABGAIiQ")
    assert second.redacted and second.signature == "EmwKAhgBEgy3va3pzix/LafPsn4a"
    assert turn.text == "42"


def test_server_tool_use_is_not_a_client_call() -> None:
    server = {
        "toolUse": {
            "toolUseId": "tooluse_srv",
            "name": "nova_grounding",
            "input": {"query": "x"},
            "type": "server_tool_use",
        }
    }
    result = {"toolResult": {"toolUseId": "tooluse_srv", "content": [{"text": "found"}]}}
    turn = WIRE.parse_response(body([server, result, text("Answer.")]))
    assert turn.ending is Ending.COMPLETE and turn.tool_calls == ()
    kinds = [type(p) for p in turn.message.parts]
    assert kinds == [ServerToolPart, ServerToolPart, TextPart]
    assert turn.message.parts[0] == ServerToolPart(
        name="nova_grounding", id="tooluse_srv", data=server
    )


def test_tool_use_typed_tool_use_is_a_client_call() -> None:
    block = tool_use(query="ruby")
    block["toolUse"]["type"] = "tool_use"
    assert WIRE.parse_response(body([block], "tool_use")).ending is Ending.TOOL_USE


def test_citations_content_is_visible_text_and_unknown_blocks_are_kept() -> None:
    cited = {
        "citationsContent": {
            "content": [{"text": "Ruby was created by Matz."}],
            "citations": [{"title": "doc", "sourceContent": [{"text": "Matz"}]}],
        }
    }
    unknown = {"someFutureBlock": {"x": 1}}
    turn = WIRE.parse_response(body([cited, unknown]))
    assert turn.ending is Ending.COMPLETE and turn.text == "Ruby was created by Matz."
    assert turn.message.parts[1] == ServerToolPart(name="someFutureBlock", data=unknown)


def test_an_image_block_is_media_output() -> None:
    image = {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}
    turn = WIRE.parse_response(body([image]))
    assert turn.ending is Ending.COMPLETE
    assert turn.message.parts == (MediaPart(mime_type="image/png", data="iVBORw0KGgo="),)


def test_usage_counts_cache_reads_and_writes_as_prompt_tokens() -> None:
    usage = {
        "inputTokens": 10,
        "outputTokens": 5,
        "totalTokens": 1015,
        "cacheReadInputTokens": 800,
        "cacheWriteInputTokens": 200,
    }
    turn = WIRE.parse_response(body([text("hi")], usage=usage))
    assert turn.usage == Usage(
        input_tokens=1010, output_tokens=5, cache_read_tokens=800, cache_write_tokens=200
    )
    assert WIRE.parse_response(body([text("hi")], usage={"inputTokens": None})).usage == Usage()


def test_guardrail_trace_does_not_change_the_text() -> None:
    turn = WIRE.parse_response(
        body([text("{ADDRESS} is the capital.")], "guardrail_intervened", trace={"guardrail": {}})
    )
    assert turn.ending is Ending.FILTERED and turn.text == "{ADDRESS} is the capital."


def test_a_200_error_body_is_an_error_turn() -> None:
    turn = WIRE.parse_response({"__type": "ThrottlingException", "message": "Rate exceeded"})
    assert turn.ending is Ending.ERROR
    assert turn.error is not None and turn.error.type == "ThrottlingException"
    assert turn.error.message == "Rate exceeded" and turn.error.status is None


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ({"stopReason": "end_turn"}, "output"),
        ({"output": {"message": "hi"}, "stopReason": "end_turn"}, "output.message"),
        (body("hi"), "output.message.content"),
        (body(["hi"]), "output.message.content[0]"),
        (body([{"text": 3}]), "output.message.content[0].text"),
        (
            body([{"toolUse": {"name": "f", "input": {}}}]),
            "output.message.content[0].toolUse.toolUseId",
        ),
        (body([{"toolUse": "x"}]), "output.message.content[0].toolUse"),
        (body([text("x")], 7), "stopReason"),
    ],
)
def test_malformed_bodies_raise_wire_format_errors_naming_the_field(bad: Any, path: str) -> None:
    _shared.check_malformed(WIRE, bad, path, api=API)


test_a_non_object_body_raises = _shared.non_object_test(WIRE)


_json = _shared.json_values()
_blocks = st.sampled_from(
    [
        text("hi"),
        tool_use(city="x"),
        reasoning("t"),
        {"reasoningContent": {"redactedContent": "d"}},
        {"citationsContent": {"content": [{"text": "c"}]}},
        {"image": {"format": "png", "source": {"bytes": "AA=="}}},
    ]
)
_mutated = _shared.with_any_field(
    st.builds(
        body,
        st.lists(_blocks | _json, max_size=4),
        st.sampled_from(["end_turn", "tool_use", "max_tokens", "guardrail_intervened", None, 3]),
    ),
    ["usage", "output", "stopReason", "message", "__type", "trace", "extra"],
    _json,
)
_mutated_blocks = st.builds(
    lambda key, value: body([{key: value}]),
    st.sampled_from(["text", "toolUse", "reasoningContent", "citationsContent", "image", "x"]),
    _json,
)


test_arbitrary_bodies_give_a_turn_or_a_wire_format_error = _shared.any_body_test(
    WIRE, st.one_of(_json, _mutated, _mutated_blocks)
)


# -- parse_error -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_body", "ending", "kind"),
    [
        (
            400,
            {"message": "Input is too long for requested model."},
            Ending.CONTEXT_EXCEEDED,
            None,
        ),
        (
            400,
            {
                "message": "The model returned the following errors: Input Tokens Exceeded: Number "
                "of input tokens exceeds maximum length. Please update the input to try again."
            },
            Ending.CONTEXT_EXCEEDED,
            None,
        ),
        (400, {"message": "Too many input tokens. Max: 8192"}, Ending.CONTEXT_EXCEEDED, None),
        (
            400,
            {
                "__type": "com.amazon.coral.validate#ValidationException",
                "message": "prompt is too long: 210000 tokens > 200000 maximum",
            },
            Ending.CONTEXT_EXCEEDED,
            "ValidationException",
        ),
        (
            400,
            {"message": "The maximum tokens you requested exceeds the model limit of 4096."},
            Ending.ERROR,
            None,
        ),
        (
            429,
            {
                "__type": "ThrottlingException",
                "message": "Too many tokens, please wait before trying again.",
            },
            Ending.ERROR,
            "ThrottlingException",
        ),
        (
            429,
            {"__type": "ThrottlingException", "message": "Rate exceeded"},
            Ending.ERROR,
            "ThrottlingException",
        ),
        (
            503,
            {"message": "Service capacity limit has been reached. Please try again later."},
            Ending.ERROR,
            None,
        ),
        (
            500,
            {"message": "The system encountered an unexpected error during processing."},
            Ending.ERROR,
            None,
        ),
        (
            424,
            {"message": "Model produced invalid sequence as part of ToolUse."},
            Ending.ERROR,
            None,
        ),
        (400, {"message": "Output blocked by content filtering policy"}, Ending.FILTERED, None),
        (
            403,
            {"Message": "User is not authorized to perform: bedrock:InvokeModel"},
            Ending.ERROR,
            None,
        ),
        (502, "<html><body>Bad Gateway</body></html>", Ending.ERROR, None),
        (500, None, Ending.ERROR, None),
        (
            400,
            [{"message": "Input is too long for requested model."}],
            Ending.CONTEXT_EXCEEDED,
            None,
        ),
        (
            400,
            '{"message": "Input is too long for requested model."}',
            Ending.CONTEXT_EXCEEDED,
            None,
        ),
        (
            400,
            {"Error": {"Code": "ValidationException", "Message": "bad"}},
            Ending.ERROR,
            "ValidationException",
        ),
    ],
)
def test_error_bodies(status: int, error_body: Any, ending: Ending, kind: str | None) -> None:
    turn = WIRE.parse_error(status, error_body)
    _shared.check_error_turn(turn, status=status, ending=ending, type=kind)
    assert turn.api == API and turn.text == ""


def test_retry_after_and_message_are_kept() -> None:
    turn = WIRE.parse_error(429, {"message": "Rate exceeded"}, retry_after=2.5)
    assert turn.error is not None
    assert turn.error.retry_after == 2.5 and turn.error.message == "Rate exceeded"
    assert turn.detail == "Rate exceeded"


def test_html_bodies_are_kept_as_text() -> None:
    turn = WIRE.parse_error(502, "<html>Bad Gateway</html>")
    assert turn.error is not None and turn.error.message == "<html>Bad Gateway</html>"


test_parse_error_never_raises = _shared.any_error_body_test(
    WIRE,
    _shared.error_bodies(_json),
    endings=(Ending.ERROR, Ending.CONTEXT_EXCEEDED, Ending.FILTERED),
)


# -- streams ---------------------------------------------------------------------------------


TEXT_STREAM = [
    START,
    text_delta("The capital "),
    text_delta("is Paris."),
    stop_block(),
    message_stop(),
    METADATA,
]


@pytest.mark.parametrize("named", [False, True])
def test_text_stream(named: bool) -> None:
    turn = WIRE.parse_stream(sse(*TEXT_STREAM, named=named))
    assert turn.ending is Ending.COMPLETE and turn.text == "The capital is Paris."
    assert turn.raw_reason == "end_turn"
    assert turn.usage == Usage(input_tokens=30, output_tokens=12)


def test_feed_returns_visible_text_deltas_only() -> None:
    acc = WIRE.stream()
    think = {
        "contentBlockDelta": {
            "delta": {"reasoningContent": {"text": "hmm"}},
            "contentBlockIndex": 0,
        }
    }
    got = [acc.feed(None, json.dumps(ev)) for ev in (START, think, text_delta("Hi", 1), METADATA)]
    assert got == ["", "", "Hi", ""]


def test_tool_call_stream_gives_the_same_turn_as_the_body() -> None:
    events = [
        START,
        text_delta("Looking it up."),
        stop_block(),
        tool_start(1),
        tool_delta('{"ci', 1),
        tool_delta('ty": "Paris"}', 1),
        stop_block(1),
        message_stop("tool_use"),
        METADATA,
    ]
    streamed = WIRE.parse_stream(sse(*events))
    whole = WIRE.parse_response(body([text("Looking it up."), tool_use(city="Paris")], "tool_use"))
    _shared.check_same_turn(streamed, whole, Ending.TOOL_USE)


def test_a_tool_call_without_input_deltas_has_no_arguments() -> None:
    events = [START, tool_start(0), stop_block(0), message_stop("tool_use")]
    turn = WIRE.parse_stream(sse(*events))
    assert turn.ending is Ending.TOOL_USE and turn.tool_calls[0].arguments == {}


def test_reasoning_stream_keeps_the_signature() -> None:
    def rdelta(**kw: str) -> dict[str, Any]:
        return {"contentBlockDelta": {"delta": {"reasoningContent": kw}, "contentBlockIndex": 0}}

    events = [
        START,
        rdelta(text="Let me "),
        rdelta(text="think."),
        rdelta(signature="Erc"),
        rdelta(signature="BCk"),
    ]
    events += [stop_block(0), text_delta("42", 1), stop_block(1), message_stop()]
    turn = WIRE.parse_stream(sse(*events))
    assert turn.thinking == (ThinkingPart(text="Let me think.", signature="ErcBCk"),)
    assert turn.ending is Ending.COMPLETE and turn.text == "42"
    redacted = WIRE.parse_stream(sse(START, rdelta(redactedContent="AAAA"), message_stop()))
    assert redacted.thinking[0].redacted and redacted.thinking[0].signature == "AAAA"
    assert redacted.ending is Ending.EMPTY


def test_a_stream_without_message_stop_is_truncated() -> None:
    _shared.check_cut_off(WIRE, sse(START, text_delta("The capital ")), text="The capital ")


def test_a_stream_that_reaches_metadata_without_message_stop_is_an_error() -> None:
    """``metadata`` is the stream's last event: it ended normally, with no stop reason."""
    stream = sse(START, text_delta("The capital "), METADATA)
    _shared.check_no_reason(WIRE, stream, text="The capital ")


def test_an_empty_stream_is_truncated_not_complete() -> None:
    assert WIRE.parse_stream("").ending is Ending.TRUNCATED


def test_a_stream_cut_mid_tool_call_keeps_the_partial_call() -> None:
    turn = WIRE.parse_stream(sse(START, tool_start(0), tool_delta('{"city": "Pa', 0)))
    assert turn.ending is Ending.TRUNCATED
    (call,) = turn.tool_calls
    assert call.arguments_raw == '{"city": "Pa' and call.arguments is None
    assert call.id == "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"


def test_max_tokens_mid_tool_call_is_truncated_with_the_partial_call() -> None:
    events = [
        START,
        tool_start(0),
        tool_delta('{"city": "Pa', 0),
        stop_block(0),
        message_stop("max_tokens"),
    ]
    turn = WIRE.parse_stream(sse(*events))
    assert turn.ending is Ending.TRUNCATED and turn.raw_reason == "max_tokens"
    assert turn.tool_calls[0].arguments_raw == '{"city": "Pa'


def test_unparseable_streamed_arguments_with_tool_use_are_malformed() -> None:
    events = [
        START,
        tool_start(0),
        tool_delta("{not json", 0),
        stop_block(0),
        message_stop("tool_use"),
    ]
    turn = WIRE.parse_stream(sse(*events))
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert turn.tool_calls[0].arguments_raw == "{not json"


@pytest.mark.parametrize("named", [False, True])
def test_an_exception_event_is_an_error_and_keeps_the_partial_text(named: bool) -> None:
    failure = {
        "modelStreamErrorException": {"message": "Model stream error", "originalStatusCode": 500}
    }
    turn = WIRE.parse_stream(sse(START, text_delta("Partial an"), failure, named=named))
    assert turn.ending is Ending.ERROR
    assert turn.text == "Partial an"
    assert turn.error is not None
    assert (
        turn.error.type == "modelStreamErrorException"
        and turn.error.message == "Model stream error"
    )
    assert turn.error.status is None


def test_a_throttling_exception_before_any_output_is_an_error() -> None:
    turn = WIRE.parse_stream(
        sse({"throttlingException": {"message": "Too many tokens, please wait."}})
    )
    assert turn.ending is Ending.ERROR and turn.text == ""


def test_stream_stop_reasons_follow_the_body_table() -> None:
    for reason, ending in [
        ("guardrail_intervened", Ending.FILTERED),
        ("max_tokens", Ending.TRUNCATED),
        ("stop_sequence", Ending.COMPLETE),
        ("something_new", Ending.ERROR),
    ]:
        assert WIRE.parse_stream(sse(START, text_delta("x"), message_stop(reason))).ending is ending


def test_garbage_lines_are_ignored() -> None:
    noisy = sse(START, "not json", "[DONE]", "3", text_delta("ok"), message_stop())
    assert WIRE.parse_stream(noisy).ending is Ending.COMPLETE


test_garbage_events_never_crash_the_accumulator = _shared.any_events_test(
    WIRE,
    st.lists(
        st.tuples(
            st.sampled_from(
                [None, "messageStart", "contentBlockDelta", "messageStop", "fooException"]
            ),
            st.one_of(_json.map(json.dumps), st.text(max_size=10)),
        ),
        max_size=12,
    ),
)


@given(
    st.lists(
        st.sampled_from(
            [
                START,
                text_delta("a"),
                tool_start(1),
                tool_delta('{"a":', 1),
                {"contentBlockDelta": {"delta": {"toolUse": 3}, "contentBlockIndex": "x"}},
                {"contentBlockStart": {"start": "x"}},
                message_stop(),
                {"messageStop": {"stopReason": 4}},
                {"metadata": {"usage": "x"}},
            ]
        ),
        max_size=10,
    )
)
def test_shuffled_events_never_crash(events: list[dict[str, Any]]) -> None:
    assert isinstance(WIRE.parse_stream(sse(*events)), Turn)


# -- requests --------------------------------------------------------------------------------


def transcript() -> tuple[Message, ...]:
    call = ToolCall.from_args(id="tooluse_1", name="get_weather", arguments={"city": "Paris"})
    return (
        Message.system("Be brief."),
        Message.user("Weather in Paris?"),
        Message(
            role="assistant",
            parts=(
                ThinkingPart(text="Need the tool.", signature="sig1"),
                TextPart(text="Checking."),
                call,
            ),
        ),
        Message.tool_results([ToolResult(call_id="tooluse_1", name="get_weather", content="18C")]),
        Message.user("And tomorrow?"),
    )


def test_render_request_builds_the_documented_body() -> None:
    request = ModelRequest(
        model="anthropic.claude-sonnet-4-5-20250929-v1:0",
        messages=transcript(),
        tools=(
            ToolSpec(
                name="get_weather",
                description="Current weather.",
                parameters={"type": "object", "properties": {"city": {"type": "string"}}},
            ),
        ),
        settings=ModelSettings(
            max_tokens=512, temperature=0.2, top_p=0.9, stop=("END",), tool_choice="auto"
        ),
    )
    assert WIRE.render_request(request) == {
        "modelId": "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "system": [{"text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "reasoningContent": {
                            "reasoningText": {"text": "Need the tool.", "signature": "sig1"}
                        }
                    },
                    {"text": "Checking."},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_1",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "18C"}]}},
                    {"text": "And tomorrow?"},
                ],
            },
        ],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "description": "Current weather.",
                        "inputSchema": {
                            "json": {"type": "object", "properties": {"city": {"type": "string"}}}
                        },
                    }
                }
            ],
            "toolChoice": {"auto": {}},
        },
        "inferenceConfig": {
            "maxTokens": 512,
            "temperature": 0.2,
            "topP": 0.9,
            "stopSequences": ["END"],
        },
    }


def test_error_results_unsigned_thinking_and_extra_body() -> None:
    request = ModelRequest(
        model="m",
        messages=(
            Message.user("go"),
            Message(
                role="assistant",
                parts=(
                    ThinkingPart(text="unsigned"),
                    ThinkingPart(text="", signature="RED", redacted=True),
                    ToolCall.from_raw(id="t1", name="f", arguments_raw="{bad"),
                ),
            ),
            Message.tool_results(
                [ToolResult(call_id="t1", name="f", content="boom", is_error=True)]
            ),
        ),
        settings=ModelSettings(extra_body={"additionalModelRequestFields": {"top_k": 5}}),
    )
    rendered = WIRE.render_request(request)
    assistant = rendered["messages"][1]["content"]
    assert assistant == [
        {"reasoningContent": {"redactedContent": "RED"}},
        {"toolUse": {"toolUseId": "t1", "name": "f", "input": "{bad"}},
    ]
    assert rendered["messages"][2]["content"] == [
        {"toolResult": {"toolUseId": "t1", "content": [{"text": "boom"}], "status": "error"}}
    ]
    assert rendered["additionalModelRequestFields"] == {"top_k": 5}
    parsed = WIRE.parse_request(rendered)
    assert parsed.messages[2].results[0].is_error
    assert parsed.messages[1].tool_calls[0].parse_error is not None
    assert parsed.settings.extra_body == {"additionalModelRequestFields": {"top_k": 5}}


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"auto": {}}),
        ("required", {"any": {}}),
        ("get_weather", {"tool": {"name": "get_weather"}}),
        (None, None),
    ],
)
def test_tool_choice(choice: str | None, wire: dict[str, Any] | None) -> None:
    request = ModelRequest(
        model="m",
        messages=(Message.user("hi"),),
        tools=(ToolSpec(name="get_weather"),),
        settings=ModelSettings(tool_choice=choice),
    )
    rendered = WIRE.render_request(request)
    assert rendered["toolConfig"].get("toolChoice") == wire
    assert WIRE.parse_request(rendered).settings.tool_choice == choice


def test_tool_choice_none_offers_no_tools_unless_the_history_needs_them() -> None:
    tools = (ToolSpec(name="f"),)
    plain = ModelRequest(
        model="m",
        messages=(Message.user("hi"),),
        tools=tools,
        settings=ModelSettings(tool_choice="none"),
    )
    assert "toolConfig" not in WIRE.render_request(plain)
    history = transcript()
    with_calls = ModelRequest(
        model="m", messages=history, tools=tools, settings=ModelSettings(tool_choice="none")
    )
    config = WIRE.render_request(with_calls)["toolConfig"]
    assert "toolChoice" not in config and config["tools"][0]["toolSpec"]["name"] == "f"


def test_parse_request_tolerates_unknown_roles_fields_and_blocks() -> None:
    parsed = WIRE.parse_request(
        {
            "modelId": "amazon.nova-lite-v1:0",
            "system": [{"text": "sys"}, {"cachePoint": {"type": "default"}}],
            "messages": [
                {"role": "user", "content": [{"text": "hi"}, {"document": {"name": "d"}}]},
                {"role": "narrator", "content": [{"text": "ignored"}]},
                {"role": "assistant", "content": [{"text": "yo"}]},
            ],
            "toolConfig": {
                "tools": [{"cachePoint": {"type": "default"}}, {"toolSpec": {"name": "f"}}]
            },
            "inferenceConfig": {"maxTokens": "many"},
            "guardrailConfig": {"guardrailIdentifier": "g"},
        }
    )
    assert parsed.model == "amazon.nova-lite-v1:0"
    assert [m.role for m in parsed.messages] == ["system", "user", "assistant"]
    assert parsed.messages[1].parts[1] == ServerToolPart(
        name="document", data={"document": {"name": "d"}}
    )
    assert parsed.tools == (ToolSpec(name="f", parameters={"type": "object"}),)
    assert parsed.settings.max_tokens is None
    assert parsed.settings.extra_body == {"guardrailConfig": {"guardrailIdentifier": "g"}}


def test_parse_request_names_results_after_their_calls() -> None:
    parsed = WIRE.parse_request(WIRE.render_request(ModelRequest(model="m", messages=transcript())))
    assert parsed.messages[3].results == (
        ToolResult(call_id="tooluse_1", name="get_weather", content="18C"),
    )


def test_parse_request_rejects_non_bodies() -> None:
    with pytest.raises(WireFormatError):
        WIRE.parse_request({"messages": "hi"})
    with pytest.raises(WireFormatError):
        WIRE.parse_request({"messages": [{"role": "user", "content": "hi"}]})


def test_round_trip_gives_back_the_request() -> None:
    request = ModelRequest(
        model="m",
        messages=transcript(),
        tools=(ToolSpec(name="get_weather", description="d"),),
        settings=ModelSettings(max_tokens=5, temperature=0.5, stop=("x",), tool_choice="required"),
    )
    assert WIRE.parse_request(WIRE.render_request(request)) == request


test_round_trip_property = _shared.round_trip_test(
    WIRE,
    _shared.transcripts(
        _shared.call_ids("tooluse_"), thinking=_shared.SIGNED_THINKING, result_errors=True
    ),
)


# -- render_response -------------------------------------------------------------------------


test_render_response_refuses_naming_the_ending_and_the_api = _shared.refusal_test(
    WIRE, body([text("hi")]), r"complete.*bedrock-converse"
)
