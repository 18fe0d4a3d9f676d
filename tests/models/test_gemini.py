"""Gemini wire format: responses, stop reasons, error bodies, streams, requests.

Fixtures are written from Google's documented ``GenerateContentResponse`` shapes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from donegate import classify
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
)
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.gemini import WIRE
from donegate.models.registry import wire_format


def body(*parts: dict[str, Any], reason: str | None = "STOP", **candidate: Any) -> dict[str, Any]:
    """A ``GenerateContentResponse`` with one candidate."""
    cand: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if reason is not None:
        cand["finishReason"] = reason
    cand.update(candidate)
    return {
        "candidates": [cand],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 4, "totalTokenCount": 16},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "WMVFafynEfiHz7IPqsGuuAQ",
    }


def sse(*chunks: Any) -> str:
    return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)


CALL = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}


def test_registry_hands_out_this_wire_format() -> None:
    assert wire_format("gemini") is WIRE
    assert classify("gemini", body({"text": "hi"})).ending is Ending.COMPLETE


# -- stop reasons ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "ending"),
    [
        ("STOP", Ending.COMPLETE),
        ("MAX_TOKENS", Ending.TRUNCATED),
        ("CONTINUATION", Ending.TRUNCATED),
        ("SAFETY", Ending.FILTERED),
        ("RECITATION", Ending.FILTERED),
        ("BLOCKLIST", Ending.FILTERED),
        ("PROHIBITED_CONTENT", Ending.FILTERED),
        ("SPII", Ending.FILTERED),
        ("IMAGE_SAFETY", Ending.FILTERED),
        ("IMAGE_PROHIBITED_CONTENT", Ending.FILTERED),
        ("IMAGE_RECITATION", Ending.FILTERED),
        ("MODEL_ARMOR", Ending.FILTERED),
        ("LANGUAGE", Ending.FILTERED),
        ("ESCALATION", Ending.FILTERED),
        ("MALFORMED_FUNCTION_CALL", Ending.MALFORMED_TOOL_CALL),
        ("UNEXPECTED_TOOL_CALL", Ending.MALFORMED_TOOL_CALL),
        ("TOO_MANY_TOOL_CALLS", Ending.MALFORMED_TOOL_CALL),
        ("FINISH_REASON_UNSPECIFIED", Ending.ERROR),
        ("OTHER", Ending.ERROR),
        ("IMAGE_OTHER", Ending.ERROR),
        ("NO_IMAGE", Ending.ERROR),
        ("MALFORMED_RESPONSE", Ending.ERROR),
        ("MISSING_THOUGHT_SIGNATURE", Ending.ERROR),
        ("SOMETHING_NEW", Ending.ERROR),
    ],
)
def test_finish_reasons(reason: str, ending: Ending) -> None:
    turn = WIRE.parse_response(body({"text": "Paris is sunny."}, reason=reason))
    assert turn.ending is ending
    assert turn.raw_reason == reason
    assert turn.text == "Paris is sunny."
    assert turn.api == "gemini"


def test_stop_with_a_function_call_is_tool_use() -> None:
    turn = WIRE.parse_response(body({"text": "Let me check."}, CALL))
    assert turn.ending is Ending.TOOL_USE
    (call,) = turn.tool_calls
    assert (call.name, call.arguments, call.arguments_raw) == (
        "get_weather",
        {"city": "Paris"},
        '{"city":"Paris"}',
    )


def test_calls_without_ids_get_stable_positional_ids() -> None:
    turn = WIRE.parse_response(body({"text": "x"}, CALL, {"text": "y"}, CALL))
    assert [c.id for c in turn.tool_calls] == ["call_0", "call_1"]
    assert all(c.provider_details == {"synthetic_id": True} for c in turn.tool_calls)


def test_a_real_call_id_and_thought_signature_are_kept() -> None:
    part = {
        "functionCall": {"name": "bash", "args": {"command": "ls"}, "id": "flveizpn"},
        "thoughtSignature": "EvwDCvkD",
    }
    (call,) = WIRE.parse_response(body(part)).tool_calls
    assert call.id == "flveizpn"
    assert call.provider_details == {"thoughtSignature": "EvwDCvkD"}


def test_function_call_without_args_has_empty_arguments() -> None:
    (call,) = WIRE.parse_response(body({"functionCall": {"name": "dice_roll"}})).tool_calls
    assert call.arguments == {}
    assert call.arguments_raw == "{}"


@pytest.mark.parametrize(
    "parts",
    [
        [],
        [{"text": ""}],
        [{"text": "  \n\t"}],
        [{"text": "I should answer briefly.", "thought": True}],
        [{"thoughtSignature": "c2ln"}],
    ],
)
def test_stop_without_visible_output_is_empty(parts: list[dict[str, Any]]) -> None:
    assert WIRE.parse_response(body(*parts)).ending is Ending.EMPTY


def test_stop_with_content_but_no_parts_is_empty() -> None:
    b = body()
    b["candidates"][0]["content"] = {"role": "model"}
    assert WIRE.parse_response(b).ending is Ending.EMPTY


def test_thinking_is_not_text_and_keeps_its_signature() -> None:
    turn = WIRE.parse_response(
        body(
            {"text": "Five plus three.", "thought": True, "thoughtSignature": "c2lnMQ=="},
            {"text": "5 + 3 = 8", "thoughtSignature": "c2lnMg=="},
        )
    )
    assert turn.ending is Ending.COMPLETE
    assert turn.text == "5 + 3 = 8"
    (thinking,) = turn.thinking
    assert (thinking.text, thinking.signature) == ("Five plus three.", "c2lnMQ==")
    assert turn.message.parts[1] == TextPart(
        text="5 + 3 = 8", provider_details={"thoughtSignature": "c2lnMg=="}
    )


def test_image_only_answer_is_complete_media() -> None:
    turn = WIRE.parse_response(body({"inlineData": {"mimeType": "image/png", "data": "iVBORw0"}}))
    assert turn.ending is Ending.COMPLETE
    assert turn.text == ""
    assert turn.message.parts == (MediaPart(mime_type="image/png", data="iVBORw0"),)
    uri = WIRE.parse_response(
        body({"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}})
    )
    assert uri.message.parts == (MediaPart(mime_type="video/mp4", uri="gs://b/v.mp4"),)


def test_code_execution_parts_are_server_tools() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    result = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}
    turn = WIRE.parse_response(body(code, result, {"text": "It prints 1."}))
    assert turn.ending is Ending.COMPLETE
    assert turn.tool_calls == ()
    assert [p.name for p in turn.message.parts if isinstance(p, ServerToolPart)] == [
        "executableCode",
        "codeExecutionResult",
    ]
    only_code = WIRE.parse_response(body(code, result))
    assert only_code.ending is Ending.EMPTY


def test_unknown_part_kinds_are_kept_not_fatal() -> None:
    turn = WIRE.parse_response(body({"videoMetadata": {"fps": 1}}, {"text": "ok"}))
    assert turn.ending is Ending.COMPLETE
    assert turn.message.parts[0] == ServerToolPart(
        name="videoMetadata", data={"videoMetadata": {"fps": 1}}
    )


def test_max_tokens_mid_call_is_truncated_with_the_call_kept() -> None:
    turn = WIRE.parse_response(body({"text": "Calling"}, CALL, reason="MAX_TOKENS"))
    assert turn.ending is Ending.TRUNCATED
    assert len(turn.tool_calls) == 1


def test_max_tokens_with_only_thoughts_is_truncated() -> None:
    b = body(reason="MAX_TOKENS")
    b["candidates"][0]["content"] = {"role": "model"}
    turn = WIRE.parse_response(b)
    assert (turn.ending, turn.text) == (Ending.TRUNCATED, "")


def test_safety_names_the_blocking_categories() -> None:
    b = body(reason="SAFETY")
    b["candidates"][0]["content"] = {}
    b["candidates"][0]["safetyRatings"] = [
        {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
        {"category": "HARM_CATEGORY_HARASSMENT", "probability": "LOW", "blocked": True},
    ]
    turn = WIRE.parse_response(b)
    assert turn.ending is Ending.FILTERED
    assert turn.detail == "SAFETY: HARM_CATEGORY_HARASSMENT"


def test_a_blocked_prompt_has_no_candidates() -> None:
    turn = WIRE.parse_response(
        {
            "promptFeedback": {
                "blockReason": "MODEL_ARMOR",
                "blockReasonMessage": "The prompt violated Prompt Injection filters.",
            },
            "usageMetadata": {"trafficType": "ON_DEMAND"},
            "modelVersion": "gemini-2.5-flash",
            "responseId": "mSEXaseKG",
        }
    )
    assert (turn.ending, turn.raw_reason, turn.detail) == (
        Ending.FILTERED,
        "MODEL_ARMOR",
        "MODEL_ARMOR",
    )


def test_no_candidates_and_no_block_reason_is_an_error() -> None:
    turn = WIRE.parse_response({"usageMetadata": {"promptTokenCount": 3}})
    assert turn.ending is Ending.ERROR
    assert turn.detail == "no finish reason"


def test_a_candidate_without_finish_reason_is_not_complete() -> None:
    assert WIRE.parse_response(body({"text": "hi"}, reason=None)).ending is Ending.ERROR


def test_malformed_call_keeps_its_finish_message() -> None:
    b = body(reason="MALFORMED_FUNCTION_CALL", finishMessage="Malformed function call: call:x{")
    b["candidates"][0]["content"] = {}
    turn = WIRE.parse_response(b)
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert turn.detail == "Malformed function call: call:x{"
    assert turn.tool_calls == ()


def test_unexpected_tool_call_keeps_the_call() -> None:
    part = {"functionCall": {"name": "list_files", "args": {}}, "thoughtSignature": "CqwL"}
    turn = WIRE.parse_response(
        body(part, reason="UNEXPECTED_TOOL_CALL", finishMessage="Unexpected tool call")
    )
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert [c.name for c in turn.tool_calls] == ["list_files"]


def test_usage() -> None:
    b = body({"text": "hi"})
    b["usageMetadata"] = {
        "promptTokenCount": 100,
        "cachedContentTokenCount": 60,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 30,
        "toolUsePromptTokenCount": 5,
        "totalTokenCount": 155,
    }
    u = WIRE.parse_response(b).usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens) == (
        105,
        50,
        60,
        30,
    )
    assert u.total_tokens == 155


def test_model_and_response_id() -> None:
    turn = WIRE.parse_response(body({"text": "hi"}))
    assert (turn.model, turn.response_id) == ("gemini-2.5-flash", "WMVFafynEfiHz7IPqsGuuAQ")


def test_an_error_envelope_with_200_is_an_error_turn() -> None:
    turn = WIRE.parse_response({"error": {"code": 500, "message": "boom", "status": "INTERNAL"}})
    assert turn.ending is Ending.ERROR
    assert turn.error is not None
    assert (turn.error.type, turn.error.message) == ("INTERNAL", "boom")


def test_a_list_body_is_read_as_a_json_array_stream() -> None:
    turn = WIRE.parse_response(
        [
            {"candidates": [{"content": {"parts": [{"text": "Hel"}], "role": "model"}}]},
            {"candidates": [{"content": {"parts": [{"text": "lo"}]}, "finishReason": "STOP"}]},
        ]
    )
    assert (turn.ending, turn.text) == (Ending.COMPLETE, "Hello")


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ("text", "$"),
        (None, "$"),
        ({"candidates": {}}, "candidates"),
        ({"candidates": ["x"]}, "candidates[0]"),
        ({"candidates": [{"content": []}]}, "candidates[0].content"),
        ({"candidates": [{"content": {"parts": {}}}]}, "candidates[0].content.parts"),
        ({"candidates": [{"content": {"parts": [1]}}]}, "candidates[0].content.parts[0]"),
        (
            {"candidates": [{"content": {"parts": [{"text": 3}]}}]},
            "candidates[0].content.parts[0].text",
        ),
        (
            {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": []}}]}}]},
            "candidates[0].content.parts[0].functionCall.args",
        ),
        (
            {"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]},
            "candidates[0].content.parts[0].functionCall.name",
        ),
        ({"candidates": [{"finishReason": [1]}]}, "candidates[0].finishReason"),
        (
            {"candidates": [], "usageMetadata": {"promptTokenCount": "3"}},
            "usageMetadata.promptTokenCount",
        ),
        ({"candidates": [], "usageMetadata": []}, "usageMetadata"),
        ({"promptFeedback": "blocked"}, "promptFeedback"),
    ],
)
def test_bodies_of_the_wrong_shape_name_the_field(bad: Any, path: str) -> None:
    with pytest.raises(WireFormatError) as info:
        WIRE.parse_response(bad)
    assert info.value.path == path


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "candidates",
        "content",
        "parts",
        "text",
        "thought",
        "functionCall",
        "args",
        "name",
        "id",
        "finishReason",
        "usageMetadata",
        "promptFeedback",
        "blockReason",
        "safetyRatings",
        "inlineData",
        "fileData",
        "thoughtSignature",
        "error",
        "code",
        "message",
        "status",
    ]
)


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    """A valid body with one field somewhere replaced by arbitrary JSON."""
    doc: Any = body(
        {"text": "hi", "thoughtSignature": "c2ln"}, CALL, {"thought": True, "text": "t"}
    )
    doc["promptFeedback"] = {"blockReason": "SAFETY", "safetyRatings": [{"blocked": True}]}
    node = doc
    for _ in range(draw(st.integers(0, 6))):
        if isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node)))
            if not isinstance(node[key], dict | list) or draw(st.booleans()):
                node[key] = draw(JSON)
                return doc
            node = node[key]
        elif isinstance(node, list) and node:
            i = draw(st.integers(0, len(node) - 1))
            if not isinstance(node[i], dict | list) or draw(st.booleans()):
                node[i] = draw(JSON)
                return doc
            node = node[i]
    if isinstance(node, dict):
        node[draw(KEYS)] = draw(JSON)
    return doc


@settings(deadline=None)
@given(st.one_of(JSON, mutated(), st.dictionaries(KEYS, JSON, max_size=4)))
def test_parse_response_raises_only_wire_format_errors(doc: Any) -> None:
    try:
        turn = WIRE.parse_response(doc)
    except WireFormatError:
        return
    assert turn.ending in Ending
    assert turn.ending is not Ending.COMPLETE or turn.raw_reason == "STOP"


@settings(deadline=None)
@given(st.lists(st.one_of(JSON, mutated()), max_size=4), st.text(max_size=20))
def test_parse_stream_raises_only_wire_format_errors(chunks: list[Any], garbage: str) -> None:
    text = sse(*chunks) + f"data: {garbage}\n\n"
    try:
        turn = WIRE.parse_stream(text)
    except WireFormatError:
        return
    assert turn.ending is not Ending.COMPLETE or turn.raw_reason == "STOP"


@settings(deadline=None)
@given(st.integers(100, 599), st.one_of(JSON, st.text(), mutated()))
def test_parse_error_never_raises(status: int, doc: Any) -> None:
    turn = WIRE.parse_error(status, doc)
    assert turn.error is not None and turn.error.status == status


# -- error bodies ------------------------------------------------------------------------------


def test_rate_limit_with_retry_info() -> None:
    turn = WIRE.parse_error(
        429,
        {
            "error": {
                "code": 429,
                "message": "You exceeded your current quota. Quota exceeded for metric: "
                "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
                ],
            }
        },
    )
    assert turn.ending is Ending.ERROR
    assert turn.error is not None
    assert (turn.error.status, turn.error.type, turn.error.retry_after) == (
        429,
        "RESOURCE_EXHAUSTED",
        37.0,
    )
    assert turn.raw_reason == "429"


def test_an_explicit_retry_after_wins() -> None:
    body_ = [{"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}]
    turn = WIRE.parse_error(429, body_, retry_after=2.5)
    assert turn.error is not None
    assert (turn.error.retry_after, turn.error.message) == (2.5, "slow down")


@pytest.mark.parametrize(
    "message",
    [
        "The input token count exceeds the maximum number of tokens allowed (1048576).",
        "The input token count (1250074) exceeds the maximum number of tokens allowed (1048576).",
        "Unable to submit request because the input token count is 1250074 but model only "
        "supports up to 1048576. Reduce the input token count and try again.",
    ],
)
def test_prompt_too_long_is_context_exceeded(message: str) -> None:
    turn = WIRE.parse_error(
        400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    )
    assert turn.ending is Ending.CONTEXT_EXCEEDED
    assert turn.detail == message


@pytest.mark.parametrize(
    ("status", "doc", "message"),
    [
        (
            500,
            {"error": {"code": 500, "message": "An internal error", "status": "INTERNAL"}},
            "An internal error",
        ),
        (
            503,
            [{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}],
            "overloaded",
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "Invalid JSON payload",
                    "status": "INVALID_ARGUMENT",
                }
            },
            "Invalid JSON payload",
        ),
        (502, "<html><body>Bad Gateway</body></html>", "<html><body>Bad Gateway</body></html>"),
        (500, '{"error": {"code": 500, "message": "as text", "status": "INTERNAL"}}', "as text"),
        (504, None, ""),
        (500, [], ""),
        (500, {"error": "plain"}, "plain"),
    ],
)
def test_other_errors(status: int, doc: Any, message: str) -> None:
    turn = WIRE.parse_error(status, doc)
    assert turn.ending is Ending.ERROR
    assert turn.error is not None
    assert (turn.error.status, turn.error.message) == (status, message)


# -- streams -----------------------------------------------------------------------------------


def chunk(*parts: dict[str, Any], reason: str | None = None, usage: int = 0) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if reason:
        cand["finishReason"] = reason
    return {
        "candidates": [cand],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": usage},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "Q5nyaIWZL",
    }


def test_stream_concatenates_text_and_thoughts() -> None:
    acc = WIRE.stream()
    deltas = [
        acc.feed(None, json.dumps(c))
        for c in (
            chunk({"text": "**Planning**", "thought": True}),
            chunk({"text": " more", "thought": True}),
            chunk({"text": "Here are "}),
            chunk({"text": "the states."}, usage=7),
            chunk({"text": "", "thoughtSignature": "c2ln"}, reason="STOP", usage=9),
        )
    ]
    assert deltas == ["", "", "Here are ", "the states.", ""]
    turn = acc.finish()
    assert turn.ending is Ending.COMPLETE
    assert turn.message.parts == (
        ThinkingPart(text="**Planning** more"),
        TextPart(text="Here are the states.", provider_details={"thoughtSignature": "c2ln"}),
    )
    assert (turn.usage.output_tokens, turn.model, turn.response_id) == (
        9,
        "gemini-2.5-flash",
        "Q5nyaIWZL",
    )


def test_stream_with_calls_numbers_them_across_chunks() -> None:
    turn = WIRE.parse_stream(
        sse(chunk({"text": "Checking."}), chunk(CALL), chunk(CALL, reason="STOP"))
    )
    assert turn.ending is Ending.TOOL_USE
    assert [c.id for c in turn.tool_calls] == ["call_0", "call_1"]
    assert turn.text == "Checking."


def test_stream_without_finish_reason_is_truncated() -> None:
    turn = WIRE.parse_stream(sse(chunk({"text": "Here are all 50"}), chunk({"text": " states"})))
    assert (turn.ending, turn.text) == (Ending.TRUNCATED, "Here are all 50 states")
    assert turn.detail == "stream ended before its final event"
    assert WIRE.parse_stream("").ending is Ending.TRUNCATED


def test_stream_cut_mid_call_keeps_the_call() -> None:
    turn = WIRE.parse_stream(sse(chunk({"text": "x"}), chunk(CALL)))
    assert turn.ending is Ending.TRUNCATED
    assert len(turn.tool_calls) == 1


def test_stream_finishing_on_max_tokens() -> None:
    turn = WIRE.parse_stream(sse(chunk({"text": "Here are all 50 U.S."}, reason="MAX_TOKENS")))
    assert (turn.ending, turn.text) == (Ending.TRUNCATED, "Here are all 50 U.S.")


def test_stream_breaking_with_an_error_chunk() -> None:
    err = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    turn = WIRE.parse_stream(sse(chunk({"text": "Partial answer"}), err))
    assert turn.ending is Ending.ERROR
    assert turn.text == "Partial answer"
    assert turn.error is not None
    assert (turn.error.status, turn.error.type, turn.error.message) == (
        None,
        "UNAVAILABLE",
        "The model is overloaded.",
    )


def test_stream_blocked_prompt_is_filtered() -> None:
    turn = WIRE.parse_stream(sse({"promptFeedback": {"blockReason": "SAFETY"}}))
    assert (turn.ending, turn.detail) == (Ending.FILTERED, "SAFETY")


def test_stream_filtered_after_some_text() -> None:
    last = chunk(reason="SAFETY")
    last["candidates"][0]["safetyRatings"] = [
        {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
    ]
    turn = WIRE.parse_stream(sse(chunk({"text": "Step one"}), last))
    assert (turn.ending, turn.text) == (Ending.FILTERED, "Step one")
    assert turn.detail == "SAFETY: HARM_CATEGORY_DANGEROUS_CONTENT"


def test_stream_ignores_garbage_and_done() -> None:
    text = "data: [DONE]\n\n: keep-alive\n\ndata: {not json\n\n" + sse(
        chunk({"text": "ok"}, reason="STOP")
    )
    assert WIRE.parse_stream(text).ending is Ending.COMPLETE


def test_json_array_stream_whole_and_cut_off() -> None:
    chunks = [chunk({"text": "Hello"}), chunk({"text": " world"}, reason="STOP")]
    whole = "[" + ",\r\n".join(json.dumps(c, indent=2) for c in chunks) + "]"
    assert (WIRE.parse_stream(whole).ending, WIRE.parse_stream(whole).text) == (
        Ending.COMPLETE,
        "Hello world",
    )
    cut = whole[: whole.index("world") - 5]
    turn = WIRE.parse_stream(cut)
    assert (turn.ending, turn.text) == (Ending.TRUNCATED, "Hello")


def test_stream_and_body_agree() -> None:
    parts = [{"text": "Thinking", "thought": True}, {"text": "Answer"}, CALL]
    whole = WIRE.parse_response(body(*parts))
    streamed = WIRE.parse_stream(
        sse(*(chunk(p) for p in parts[:-1]), chunk(parts[-1], reason="STOP"))
    )
    assert (streamed.ending, streamed.text, streamed.tool_calls) == (
        whole.ending,
        whole.text,
        whole.tool_calls,
    )
    assert streamed.thinking == whole.thinking


# -- requests ----------------------------------------------------------------------------------


WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
SYNTH = ToolCall.from_args(
    id="call_0",
    name="get_weather",
    arguments={"city": "Paris"},
    provider_details={"synthetic_id": True, "thoughtSignature": "c2ln"},
)
REAL = ToolCall.from_args(id="flveizpn", name="get_time", arguments={})


def transcript() -> tuple[Message, ...]:
    return (
        Message.system("You are terse."),
        Message.user("Weather and time in Paris?"),
        Message(
            role="assistant",
            parts=(ThinkingPart(text="Two tools.", signature="dGhpbms="), SYNTH, REAL),
        ),
        Message.tool_results(
            [
                ToolResult(call_id="call_0", name="get_weather", content="sunny"),
                ToolResult(call_id="flveizpn", name="get_time", content="boom", is_error=True),
            ]
        ),
        Message(role="assistant", parts=(TextPart(text="Sunny; time unknown."),)),
        Message.user("Thanks"),
    )


def test_render_request_body() -> None:
    req = ModelRequest(
        model="gemini-2.5-flash",
        messages=transcript(),
        tools=(WEATHER, ToolSpec(name="get_time")),
        settings=ModelSettings(
            max_tokens=256,
            temperature=0.2,
            top_p=0.9,
            stop=("END",),
            tool_choice="get_weather",
            extra_body={"generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}},
        ),
        stream=True,
    )
    out = WIRE.render_request(req)
    assert out == {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather and time in Paris?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Two tools.", "thought": True, "thoughtSignature": "dGhpbms="},
                    {
                        "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                        "thoughtSignature": "c2ln",
                    },
                    {"functionCall": {"name": "get_time", "args": {}, "id": "flveizpn"}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}}},
                    {
                        "functionResponse": {
                            "name": "get_time",
                            "response": {"error": "boom"},
                            "id": "flveizpn",
                        }
                    },
                ],
            },
            {"role": "model", "parts": [{"text": "Sunny; time unknown."}]},
            {"role": "user", "parts": [{"text": "Thanks"}]},
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather for a city.",
                        "parametersJsonSchema": dict(WEATHER.parameters),
                    },
                    {"name": "get_time"},
                ]
            }
        ],
        "toolConfig": {
            "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
        },
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "generationConfig": {
            "maxOutputTokens": 256,
            "temperature": 0.2,
            "topP": 0.9,
            "stopSequences": ["END"],
            "thinkingConfig": {"thinkingBudget": 0},
        },
    }


@pytest.mark.parametrize(
    ("choice", "mode"), [("auto", "AUTO"), ("required", "ANY"), ("none", "NONE")]
)
def test_tool_choice_modes(choice: str, mode: str) -> None:
    req = ModelRequest(model="m", messages=(), settings=ModelSettings(tool_choice=choice))
    out = WIRE.render_request(req)
    assert out["toolConfig"] == {"functionCallingConfig": {"mode": mode}}
    assert WIRE.parse_request(out).settings.tool_choice == choice


def test_split_tool_messages_answer_in_one_turn() -> None:
    msgs = (
        Message(role="assistant", parts=(REAL, SYNTH)),
        Message.tool_results([ToolResult(call_id="flveizpn", name="get_time", content="9")]),
        Message.tool_results([ToolResult(call_id="call_0", name="get_weather", content="x")]),
    )
    contents = WIRE.render_request(ModelRequest(model="m", messages=msgs))["contents"]
    assert len(contents) == 2
    assert [p["functionResponse"]["name"] for p in contents[1]["parts"]] == [
        "get_time",
        "get_weather",
    ]


def test_round_trip_of_a_transcript() -> None:
    req = ModelRequest(
        model="",
        messages=transcript(),
        tools=(WEATHER, ToolSpec(name="get_time", description="Now.")),
        settings=ModelSettings(
            max_tokens=9,
            temperature=1.0,
            stop=("a", "b"),
            tool_choice="required",
            extra_body={
                "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "OFF"}],
                "generationConfig": {"responseMimeType": "text/plain"},
                "tools": [{"googleSearch": {}}],
            },
        ),
    )
    assert WIRE.parse_request(WIRE.render_request(req)) == req


TEXT = st.text(max_size=12)
NAMES = st.sampled_from(["get_weather", "get_time", "search"])


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[Message, ...]:
    """Canonical transcripts: every call answered in one tool message right after it."""
    msgs: list[Message] = [Message.system(t) for t in draw(st.lists(TEXT, max_size=2))]
    for _ in range(draw(st.integers(0, 4))):
        msgs.append(Message.user(draw(TEXT)))
        parts: list[Any] = []
        if draw(st.booleans()):
            parts.append(ThinkingPart(text=draw(TEXT), signature=draw(st.none() | st.just("c2ln"))))
        if draw(st.booleans()):
            sig = draw(st.none() | st.just("c2ln"))
            parts.append(
                TextPart(
                    text=draw(TEXT), provider_details={"thoughtSignature": sig} if sig else None
                )
            )
        synthetic = draw(st.booleans())
        calls = []
        for i in range(draw(st.integers(0, 3))):
            details = {"synthetic_id": True} if synthetic else None
            call_id = f"call_{i}" if synthetic else f"id{i}x"
            args = draw(st.dictionaries(st.text(max_size=3), st.integers() | TEXT, max_size=2))
            calls.append(
                ToolCall.from_args(
                    id=call_id, name=draw(NAMES), arguments=args, provider_details=details
                )
            )
        parts.extend(calls)
        if draw(st.booleans()):
            parts.append(MediaPart(mime_type="image/png", data="iVBOR"))
        msgs.append(Message(role="assistant", parts=tuple(parts)))
        if calls:
            results = [
                ToolResult(
                    call_id=c.id,
                    name=c.name,
                    content=draw(TEXT | st.just('{"a": [1, 2]}')),
                    is_error=draw(st.booleans()),
                )
                for c in calls
            ]
            msgs.append(Message.tool_results(results))
    return tuple(msgs)


@settings(deadline=None)
@given(transcripts())
def test_round_trip_property(messages: tuple[Message, ...]) -> None:
    req = ModelRequest(model="", messages=messages)
    assert WIRE.parse_request(WIRE.render_request(req)).messages == messages


def test_parse_request_tolerates_foreign_shapes() -> None:
    req = WIRE.parse_request(
        {
            "model": "models/gemini-2.0-flash",
            "systemInstruction": "Be brief.",
            "contents": [
                {"role": "developer", "parts": [{"text": "Also be kind."}]},
                {"parts": [{"text": "Roll twice."}]},
                {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "dice_roll", "args": {}}},
                        {"functionCall": {"name": "dice_roll", "args": {"sides": 6}}},
                    ],
                },
                {
                    "role": "function",
                    "parts": [
                        {"functionResponse": {"name": "dice_roll", "response": {"value": 4}}},
                        {"functionResponse": {"name": "dice_roll", "response": {"output": "2"}}},
                        {"text": "Now add them."},
                    ],
                },
                {"role": "narrator", "parts": [{"text": "?"}], "extra": 1},
            ],
            "tools": [
                {
                    "functionDeclarations": [
                        {"name": "dice_roll", "parameters": {"type": "OBJECT", "properties": {}}}
                    ]
                }
            ],
            "toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}},
            "cachedContent": "cachedContents/abc",
        }
    )
    assert req.model == "gemini-2.0-flash"
    assert [m.role for m in req.messages] == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "user",
    ]
    assert req.messages[4].results == (
        ToolResult(call_id="call_0", name="dice_roll", content='{"value": 4}'),
        ToolResult(call_id="call_1", name="dice_roll", content="2"),
    )
    assert req.tools[0].parameters == {"type": "OBJECT", "properties": {}}
    assert req.settings.tool_choice is None
    assert req.settings.extra_body == {
        "cachedContent": "cachedContents/abc",
        "toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}},
    }


def test_parse_request_pairs_results_by_id_when_present() -> None:
    req = WIRE.parse_request(
        {
            "contents": [
                {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "f", "args": {}, "id": "a1"}},
                        {"functionCall": {"name": "f", "args": {}, "id": "b2"}},
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "name": "f",
                                "id": "b2",
                                "response": {"output": "B"},
                            }
                        },
                        {"functionResponse": {"name": "f", "response": {"output": "A"}}},
                    ],
                },
            ]
        }
    )
    assert [(r.call_id, r.content) for r in req.messages[1].results] == [("b2", "B"), ("a1", "A")]


def test_parse_request_rejects_a_body_of_the_wrong_shape() -> None:
    with pytest.raises(WireFormatError):
        WIRE.parse_request({"contents": {"role": "user"}})
