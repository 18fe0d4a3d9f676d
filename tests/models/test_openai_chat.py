"""openai-chat: bodies, error bodies, streams, requests, and serving through the real SDK.

Fixtures follow OpenAI's Chat Completions reference (``chat.completion`` and
``chat.completion.chunk`` objects) and the documented deviations of compatible servers: Azure's
``content_filter_results``, Groq's ``tool_use_failed`` 400s, Gemini's id-less tool calls with
``finish_reason: stop``, DeepSeek's ``reasoning_content``, OpenRouter/vLLM's ``reasoning``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.models import _shared

from donegate.errors import UnsupportedTurn, WireFormatError
from donegate.messages import (
    Ending,
    ErrorInfo,
    MediaPart,
    Message,
    Part,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)
from donegate.models._sse import iter_sse
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.openai_chat import WIRE
from donegate.models.registry import classify

CID = "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"
MODEL = "gpt-4o-2024-08-06"
USAGE = {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
    "completion_tokens_details": {
        "reasoning_tokens": 12,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}

sdk = _shared.openai_sdk
_calls = _shared.call_triples


# -- fixtures: shapes from the API reference ---------------------------------------------------


def completion(finish: Any = "stop", **message: Any) -> dict[str, Any]:
    """A ``chat.completion`` object as ``POST /v1/chat/completions`` returns it."""
    return {
        "id": CID,
        "object": "chat.completion",
        "created": 1741570283,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "annotations": [],
                    **message,
                },
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": USAGE,
        "service_tier": "default",
        "system_fingerprint": "fp_fc9f1d7035",
    }


def call(name: str | None, args: Any, call_id: str | None = "call_8F2kQ") -> dict[str, Any]:
    raw: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if call_id is not None:
        raw["id"] = call_id
    return raw


# -- parse_response: every finish_reason -------------------------------------------------------


def test_stop_with_text_is_complete_with_usage_model_and_id() -> None:
    turn = WIRE.parse_response(completion(content="Paris is the capital of France."))
    assert (turn.ending, turn.raw_reason, turn.detail) == (Ending.COMPLETE, "stop", None)
    assert turn.text == "Paris is the capital of France."
    assert turn.message.parts == (TextPart(text="Paris is the capital of France."),)
    assert turn.usage == Usage(
        input_tokens=1117, output_tokens=46, cache_read_tokens=1024, reasoning_tokens=12
    )
    assert (turn.model, turn.response_id, turn.api, turn.error) == (
        MODEL,
        CID,
        "openai-chat",
        None,
    )


def test_tool_calls_are_tool_use_in_order_with_their_ids() -> None:
    turn = WIRE.parse_response(
        completion(
            "tool_calls",
            tool_calls=[
                call("get_weather", '{"location": "Paris"}', "call_a"),
                call("get_time", '{"tz":"Europe/Paris"}', "call_b"),
            ],
        )
    )
    assert (turn.ending, turn.raw_reason) == (Ending.TOOL_USE, "tool_calls")
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("call_a", "get_weather", {"location": "Paris"}),
        ("call_b", "get_time", {"tz": "Europe/Paris"}),
    ]
    assert turn.tool_calls[0].provider_details is None
    assert turn.text == ""


def test_text_beside_tool_calls_is_kept_and_the_turn_is_tool_use() -> None:
    turn = WIRE.parse_response(
        completion("tool_calls", content="Let me check.", tool_calls=[call("f", "{}")])
    )
    assert (turn.ending, turn.text) == (Ending.TOOL_USE, "Let me check.")
    assert isinstance(turn.message.parts[0], TextPart)


@pytest.mark.parametrize("finish", ["function_call", "stop"], ids=["legacy", "forced-legacy"])
def test_legacy_function_call_is_tool_use_whatever_the_finish_reason(finish: str) -> None:
    # A forced legacy call (``function_call={"name": ...}``) reports finish_reason "stop".
    legacy = {"name": "get_current_weather", "arguments": '{\n  "location": "Boston, MA"\n}'}
    turn = WIRE.parse_response(completion(finish, function_call=legacy))
    assert (turn.ending, turn.raw_reason) == (Ending.TOOL_USE, finish)
    (legacy_call,) = turn.tool_calls
    assert (legacy_call.id, legacy_call.name, legacy_call.arguments) == (
        "call_0",
        "get_current_weather",
        {"location": "Boston, MA"},
    )
    assert legacy_call.provider_details == {"legacy": True}


def test_gemini_compatible_calls_without_ids_and_stop_are_tool_use_with_synthetic_ids() -> None:
    # Gemini's OpenAI-compatible endpoint: ``"id": ""`` (or no id) and finish_reason "stop".
    body = completion(
        "stop",
        tool_calls=[
            call("web_search", '{"query":"AutoGen"}', ""),
            call("web_search", '{"query":"donegate"}', None),
        ],
    )
    body["id"] = ""
    turn = WIRE.parse_response(body)
    assert turn.ending is Ending.TOOL_USE
    assert [(c.id, c.arguments) for c in turn.tool_calls] == [
        ("call_0", {"query": "AutoGen"}),
        ("call_1", {"query": "donegate"}),
    ]
    assert all(c.provider_details == {"synthetic_id": True} for c in turn.tool_calls)


def test_custom_tool_call_keeps_its_free_form_input() -> None:
    custom = {"id": "call_C7", "type": "custom", "custom": {"name": "math", "input": "4 + 4"}}
    turn = WIRE.parse_response(completion("tool_calls", tool_calls=[custom]))
    expected = _shared.custom_call("call_C7", "math", "4 + 4", {"type": "custom"})
    _shared.check_custom_call(turn, expected)


def test_arguments_sent_as_an_object_are_parsed_as_given() -> None:
    # Some compatible servers (Ollama, older vLLM) send the arguments object itself.
    turn = WIRE.parse_response(
        completion("tool_calls", tool_calls=[call("add", {"a": 1, "b": [2, 3]})])
    )
    assert turn.ending is Ending.TOOL_USE
    (c,) = turn.tool_calls
    assert c.arguments == {"a": 1, "b": [2, 3]}
    assert json.loads(c.arguments_raw) == {"a": 1, "b": [2, 3]}


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ('{"location": "Par', "arguments are not valid JSON"),
        ("{'location': 'Paris'}", "arguments are not valid JSON"),
        ('["Paris"]', "arguments must be a JSON object, got list"),
        ('"Paris"', "arguments must be a JSON object, got str"),
    ],
)
def test_unparseable_arguments_are_malformed_naming_the_call(args: str, why: str) -> None:
    turn = WIRE.parse_response(
        completion("tool_calls", tool_calls=[call("ok", "{}", "c1"), call("get_weather", args)])
    )
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert turn.detail is not None and turn.detail.startswith(f"get_weather: {why}")
    assert [c.arguments_raw for c in turn.tool_calls] == ["{}", args]


@pytest.mark.parametrize("args", ["", "null", "{}", None])
def test_empty_and_null_arguments_are_an_argumentless_call(args: str | None) -> None:
    turn = WIRE.parse_response(completion("tool_calls", tool_calls=[call("now", args)]))
    assert turn.ending is Ending.TOOL_USE
    assert turn.tool_calls[0].arguments == {}


def test_length_keeps_the_cut_text() -> None:
    turn = WIRE.parse_response(completion("length", content="1. Alabama\n2. Alaska\n3. Ari"))
    assert (turn.ending, turn.raw_reason, turn.text) == (
        Ending.TRUNCATED,
        "length",
        "1. Alabama\n2. Alaska\n3. Ari",
    )


def test_length_mid_call_is_truncated_keeping_the_partial_call() -> None:
    cut = '{"path": "notes.md", "content": "Monday: met the'
    turn = WIRE.parse_response(completion("length", tool_calls=[call("write_file", cut)]))
    assert turn.ending is Ending.TRUNCATED  # not malformed: the limit cut it
    (partial,) = turn.tool_calls
    assert (partial.name, partial.arguments_raw, partial.arguments) == ("write_file", cut, None)
    assert partial.parse_error is not None


def test_length_with_only_reasoning_is_truncated_not_empty() -> None:
    turn = WIRE.parse_response(completion("length", content="", reasoning_content="Let me th"))
    assert turn.ending is Ending.TRUNCATED
    assert turn.thinking == (ThinkingPart(text="Let me th"),)


def test_azure_content_filter_is_filtered_naming_the_categories() -> None:
    body = completion("content_filter")
    del body["choices"][0]["message"]["content"]  # Azure omits the filtered content
    body["choices"][0]["content_filter_results"] = {
        "hate": {"filtered": False, "severity": "safe"},
        "self_harm": {"filtered": False, "severity": "safe"},
        "sexual": {"filtered": False, "severity": "safe"},
        "violence": {"filtered": True, "severity": "medium"},
        "protected_material_text": {"filtered": True, "detected": True},
    }
    body["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": {}}]
    turn = WIRE.parse_response(body)
    assert (turn.ending, turn.raw_reason, turn.text) == (Ending.FILTERED, "content_filter", "")
    assert turn.detail == "violence,protected_material_text"


def test_content_filter_keeps_partial_text_without_azure_results() -> None:
    turn = WIRE.parse_response(completion("content_filter", content="Here is how to"))
    assert (turn.ending, turn.text, turn.detail) == (Ending.FILTERED, "Here is how to", None)


@pytest.mark.parametrize(
    ("reason", "ending"),
    [
        ("eos", Ending.COMPLETE),
        ("end_turn", Ending.COMPLETE),
        ("stop_sequence", Ending.COMPLETE),
        ("max_tokens", Ending.TRUNCATED),
        ("model_context_window_exceeded", Ending.CONTEXT_EXCEEDED),
    ],
)
def test_compatible_servers_stop_reasons(reason: str, ending: Ending) -> None:
    turn = WIRE.parse_response(completion(reason, content="Some text"))
    assert (turn.ending, turn.raw_reason) == (ending, reason)


@pytest.mark.parametrize(
    "reason", ["recitation", "insufficient_system_resource", "error", "abort", ""]
)
def test_unknown_finish_reason_is_an_error_keeping_reason_and_text(reason: str) -> None:
    turn = WIRE.parse_response(completion(reason, content="Partial answer"))
    assert (turn.ending, turn.raw_reason, turn.text) == (Ending.ERROR, reason, "Partial answer")


@pytest.mark.parametrize("reason", [None, 7, ["stop"]])
def test_null_or_non_string_finish_reason_is_an_error_never_complete(reason: Any) -> None:
    turn = WIRE.parse_response(completion(reason, content="Looks finished"))
    assert (turn.ending, turn.raw_reason, turn.text) == (Ending.ERROR, None, "Looks finished")


def test_refusal_is_refused_and_not_text() -> None:
    turn = WIRE.parse_response(completion(refusal="I'm sorry, I can't assist with that request."))
    assert (turn.ending, turn.raw_reason) == (Ending.REFUSED, "stop")
    assert turn.refusal == "I'm sorry, I can't assist with that request."
    assert turn.text == ""
    assert turn.message.parts == (RefusalPart(text="I'm sorry, I can't assist with that request."),)


def test_refusal_cut_by_the_limit_is_truncated() -> None:
    assert WIRE.parse_response(completion("length", refusal="I'm sorr")).ending is Ending.TRUNCATED


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_fields_are_thinking_never_text(key: str) -> None:
    # DeepSeek/Qwen send ``reasoning_content``; OpenRouter, Groq and vLLM send ``reasoning``.
    turn = WIRE.parse_response(completion(content="42", **{key: "6 times 7 is 42."}))
    assert turn.ending is Ending.COMPLETE
    assert turn.text == "42"
    assert turn.message.parts == (ThinkingPart(text="6 times 7 is 42."), TextPart(text="42"))


@pytest.mark.parametrize(
    "message",
    [
        {"content": ""},
        {"content": None},
        {"content": "  \n\t "},
        {"content": [{"type": "text", "text": " "}]},
        {"content": "", "reasoning_content": "The user said nothing to answer."},
        {"content": None, "reasoning": "Thinking only."},
        {},
    ],
    ids=[
        "empty",
        "null",
        "whitespace",
        "parts-whitespace",
        "thinking-only",
        "reasoning-only",
        "{}",
    ],
)
def test_stop_without_visible_text_or_call_is_empty(message: dict[str, Any]) -> None:
    turn = WIRE.parse_response(completion(**message))
    assert turn.ending is Ending.EMPTY
    assert turn.tool_calls == ()


def test_missing_message_is_empty_not_an_exception() -> None:
    body = completion()
    del body["choices"][0]["message"]
    assert WIRE.parse_response(body).ending is Ending.EMPTY


def test_content_as_a_list_of_text_parts_is_joined() -> None:
    content = [
        {"type": "text", "text": "Hello, "},
        {"type": "image"},
        {"type": "text", "text": "you"},
    ]
    turn = WIRE.parse_response(completion(content=content))
    assert (turn.ending, turn.text) == (Ending.COMPLETE, "Hello, you")


def test_unknown_fields_are_ignored() -> None:
    body = completion(content="ok", audio=None, future_field={"x": 1})
    body["choices"][0]["native_finish_reason"] = "STOP"
    body["provider"] = "Google"
    turn = WIRE.parse_response(body)
    assert (turn.ending, turn.text) == (Ending.COMPLETE, "ok")


def test_missing_usage_is_zero_usage() -> None:
    body = completion(content="ok")
    body["usage"] = None
    assert WIRE.parse_response(body).usage == Usage()


@pytest.mark.parametrize(
    ("envelope", "ending", "kind"),
    [
        (
            {
                "error": {
                    "message": "quota",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            },
            Ending.ERROR,
            "insufficient_quota",
        ),
        (  # OpenRouter relays an upstream failure in a 200
            {"error": {"message": "Provider returned error", "code": 502}, "user_id": "u_1"},
            Ending.ERROR,
            None,
        ),
        (
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens.",
                    "code": "context_length_exceeded",
                }
            },
            Ending.CONTEXT_EXCEEDED,
            "context_length_exceeded",
        ),
    ],
    ids=["quota", "openrouter-upstream", "context"],
)
def test_a_200_error_envelope_is_an_error_turn(
    envelope: dict[str, Any], ending: Ending, kind: str | None
) -> None:
    turn = WIRE.parse_response(envelope)
    assert turn.ending is ending
    assert turn.error is not None
    assert (turn.error.type, turn.error.message) == (kind, envelope["error"]["message"])
    assert turn.message.parts == ()


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ([completion()], "$"),
        ("not json", "$"),
        (None, "$"),
        ({"id": CID, "object": "chat.completion"}, "choices"),
        (completion() | {"choices": []}, "choices"),
        (completion() | {"choices": {"0": {}}}, "choices"),
        (completion() | {"choices": ["x"]}, "choices[0]"),
        (
            completion() | {"choices": [{"message": "hi", "finish_reason": "stop"}]},
            "choices[0].message",
        ),
        (completion(content=7), "choices[0].message.content"),
        (completion(content={"text": "x"}), "choices[0].message.content"),
        (completion(tool_calls={"id": "c"}), "choices[0].message.tool_calls"),
        (completion(tool_calls=["c"]), "choices[0].message.tool_calls[0]"),
        (completion(tool_calls=[{"id": "c"}]), "choices[0].message.tool_calls[0].function"),
        (
            completion(tool_calls=[call(None, "{}")]),
            "choices[0].message.tool_calls[0].function.name",
        ),
        (
            completion(tool_calls=[call("f", 5)]),
            "choices[0].message.tool_calls[0].function.arguments",
        ),
        (completion(function_call={"arguments": "{}"}), "choices[0].message.function_call.name"),
    ],
)
def test_a_body_of_the_wrong_shape_raises_wire_format_error_naming_the_path(
    bad: Any, path: str
) -> None:
    _shared.check_malformed(WIRE, bad, path, api="openai-chat")


_json = _shared.json_values(allow_nan=False)
_BODY_KEYS = ["id", "model", "choices", "usage", "error", "object"]
_CHOICE_KEYS = ["message", "finish_reason", "content_filter_results", "index"]
_MESSAGE_KEYS = [
    "content",
    "refusal",
    "tool_calls",
    "function_call",
    "reasoning",
    "reasoning_content",
]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_body_gives_a_turn_or_a_wire_format_error(data: st.DataObject) -> None:
    sample = completion(
        "tool_calls",
        content="t",
        refusal="no",
        reasoning_content="r",
        tool_calls=[call("f", '{"a":1}'), {"id": "c", "type": "custom", "custom": {"name": "g"}}],
        function_call={"name": "h", "arguments": "{}"},
    )
    mutated: Any = data.draw(
        st.sampled_from([True, False]).flatmap(
            lambda keep: st.just(json.loads(json.dumps(sample))) if keep else _json
        )
    )
    if isinstance(mutated, dict) and "choices" in mutated:
        for key in data.draw(st.lists(st.sampled_from(_BODY_KEYS), max_size=2)):
            mutated[key] = data.draw(_json)
        choices = mutated.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if isinstance(choice, dict):
            for key in data.draw(st.lists(st.sampled_from(_CHOICE_KEYS), max_size=2)):
                choice[key] = data.draw(_json)
            message = choice.get("message")
            if isinstance(message, dict):
                for key in data.draw(st.lists(st.sampled_from(_MESSAGE_KEYS), max_size=3)):
                    message[key] = data.draw(_json)
                calls = message.get("tool_calls")
                if isinstance(calls, list) and calls and isinstance(calls[0], dict):
                    target = calls[0].get("function", calls[0])
                    if isinstance(target, dict) and target:
                        target[data.draw(st.sampled_from(sorted(target)))] = data.draw(_json)
    try:
        turn = WIRE.parse_response(mutated)
    except WireFormatError as exc:
        assert exc.path
        return
    assert isinstance(turn.ending, Ending)


# -- parse_error -------------------------------------------------------------------------------


def test_openai_context_length_exceeded_400() -> None:
    err = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your "
            "messages resulted in 130412 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    turn = WIRE.parse_error(400, err)
    assert (turn.ending, turn.raw_reason) == (Ending.CONTEXT_EXCEEDED, "400")
    assert turn.error == ErrorInfo(
        status=400, type="context_length_exceeded", message=err["error"]["message"]
    )
    assert turn.message.parts == ()
    assert turn.api == "openai-chat"


@pytest.mark.parametrize(
    "body",
    [
        {  # DeepSeek: the code says nothing, the message does
            "error": {
                "message": "This model's maximum context length is 65536 tokens. However, you "
                "requested 70000 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
        {  # vLLM: a top-level error object
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you "
            "requested 5000 tokens (4000 in the messages, 1000 in the completion).",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        {  # Groq
            "error": {
                "message": "Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        [  # Gemini's compatible endpoint wraps its error in a list
            {
                "error": {
                    "code": 400,
                    "message": "The input token count (1200000) exceeds the maximum number of "
                    "tokens allowed (1048576).",
                    "status": "INVALID_ARGUMENT",
                }
            }
        ],
    ],
    ids=["deepseek", "vllm", "groq", "gemini-list"],
)
def test_context_exceeded_from_compatible_servers(body: Any) -> None:
    turn = WIRE.parse_error(400, body)
    assert turn.ending is Ending.CONTEXT_EXCEEDED
    assert turn.error is not None and turn.error.status == 400
    assert turn.error.message


def test_azure_prompt_content_filter_400_is_filtered() -> None:
    err = {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's "
            "content management policy. Please modify your prompt and retry.",
            "type": None,
            "param": "prompt",
            "code": "content_filter",
            "status": 400,
            "innererror": {
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {
                    "hate": {"filtered": False, "severity": "safe"},
                    "jailbreak": {"detected": True, "filtered": True},
                    "violence": {"filtered": False, "severity": "safe"},
                },
            },
        }
    }
    turn = WIRE.parse_error(400, err)
    assert turn.ending is Ending.FILTERED
    assert turn.error is not None
    assert (turn.error.status, turn.error.type) == (400, "content_filter")
    assert turn.error.message.startswith("The response was filtered")


@pytest.mark.parametrize(
    ("message", "ending"),
    [
        (
            "Failed to call a function. Please adjust your prompt. See 'failed_generation' for "
            "more details.",
            Ending.MALFORMED_TOOL_CALL,
        ),
        (
            "tool call validation failed: parameters for tool get_weather did not match schema: "
            "errors: [missing properties: 'location']",
            Ending.MALFORMED_TOOL_CALL,
        ),
        ("Tool choice is none, but model called a tool", Ending.MALFORMED_TOOL_CALL),
        ("Tool choice is required, but model did not call a tool", Ending.ERROR),
    ],
    ids=["failed-generation", "schema-validation", "call-while-none", "no-call-while-required"],
)
def test_groq_tool_use_failed_is_malformed_only_for_a_generated_call(
    message: str, ending: Ending
) -> None:
    err = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "failed_generation": '<function=get_weather{"city": "Paris"}</function>',
        }
    }
    turn = WIRE.parse_error(400, err)
    assert turn.ending is ending
    assert turn.error == ErrorInfo(status=400, type="tool_use_failed", message=message)


def test_rate_limit_429_keeps_type_message_and_retry_after() -> None:
    err: dict[str, Any] = {
        "error": {
            "message": "Rate limit reached for gpt-4o in organization org-abc on tokens per min "
            "(TPM): Limit 30000, Used 29000, Requested 1500. Please try again in 1.2s.",
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    turn = WIRE.parse_error(429, err, retry_after=1.2)
    assert (turn.ending, turn.raw_reason) == (Ending.ERROR, "429")
    assert turn.error == ErrorInfo(
        status=429, type="rate_limit_exceeded", message=err["error"]["message"], retry_after=1.2
    )


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (
            500,
            {
                "error": {
                    "message": "The server had an error while processing your request. Sorry "
                    "about that!",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            },
            "server_error",
        ),
        (
            503,
            {
                "error": {
                    "message": "The engine is currently overloaded, please try again later.",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            },
            "server_error",
        ),
        (
            401,
            {
                "error": {
                    "message": "Incorrect API key provided: sk-abc. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
            "invalid_api_key",
        ),
    ],
)
def test_server_and_auth_errors_are_errors(status: int, body: Any, kind: str) -> None:
    turn = WIRE.parse_error(status, body)
    assert (turn.ending, turn.raw_reason) == (Ending.ERROR, str(status))
    assert turn.error == ErrorInfo(status=status, type=kind, message=body["error"]["message"])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (None, ""),
        ("", ""),
        ("Internal Server Error", "Internal Server Error"),
        ("<html><body><h1>502 Bad Gateway</h1></body></html>", "<html><body><h1>502 Bad Gateway"),
        ("upstream connect error or disconnect/reset before headers", "upstream connect error"),
        ('{"error": {"message": "Bad gateway.", "type": "server_error"}}', "Bad gateway."),
        ('"a JSON string"', "a JSON string"),
        ([], ""),
        ([{"error": {"message": "Internal error", "status": "INTERNAL"}}], "Internal error"),
        ([1, 2], ""),
        ({"detail": "Not Found"}, ""),
        ({"error": "upstream timed out"}, "upstream timed out"),
        ({"error": {"message": 42}}, "42"),
        (3, ""),
    ],
)
def test_error_bodies_of_any_shape_are_errors(raw: Any, message: str) -> None:
    turn = WIRE.parse_error(502, raw)
    assert turn.ending is Ending.ERROR
    assert turn.error is not None and turn.error.status == 502
    assert turn.error.message.startswith(message)


def test_a_plain_text_context_message_is_still_context_exceeded() -> None:
    turn = WIRE.parse_error(400, "Input is too long for requested model.")
    assert turn.ending is Ending.CONTEXT_EXCEEDED


@given(raw=_json, status=st.sampled_from([400, 401, 404, 413, 429, 500, 502, 503, 529]))
def test_parse_error_never_raises(raw: Any, status: int) -> None:
    turn = WIRE.parse_error(status, raw)
    assert isinstance(turn.ending, Ending)
    assert turn.error is not None and turn.error.status == status


# -- streams -----------------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: Any = None, **extra: Any) -> dict[str, Any]:
    """A ``chat.completion.chunk`` object."""
    return {
        "id": CID,
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": MODEL,
        "system_fingerprint": "fp_fc9f1d7035",
        "choices": [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish, **extra}
        ],
        "usage": None,
    }


def usage_chunk() -> dict[str, Any]:
    """The last chunk when ``stream_options.include_usage`` is set: no choices, the usage."""
    return chunk() | {"choices": [], "usage": USAGE}


ROLE = chunk({"role": "assistant", "content": "", "refusal": None})


def sse(*chunks: dict[str, Any] | str, done: bool = True) -> str:
    lines = [f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks]
    return "".join(lines) + ("data: [DONE]\n\n" if done else "")


def tc(index: int, args: str | None = None, **head: Any) -> dict[str, Any]:
    """One tool-call delta: the first carries id, type and name; later ones argument pieces."""
    out: dict[str, Any] = {"index": index}
    if head:
        out |= {"id": head["id"], "type": "function"}
        out["function"] = {"name": head["name"], "arguments": ""}
    if args is not None:
        out.setdefault("function", {})["arguments"] = args
    return out


def test_text_stream_gives_deltas_and_the_same_turn_as_the_body() -> None:
    stream = sse(
        ROLE,
        chunk({"content": "Hello"}),
        chunk({"content": " world"}),
        chunk({}, "stop"),
        usage_chunk(),
    )
    acc = WIRE.stream()
    deltas = [acc.feed(event, data) for event, data in iter_sse(stream)]
    assert deltas == ["", "Hello", " world", "", "", ""]
    assert acc.finish() == WIRE.parse_response(completion(content="Hello world"))


def test_tool_call_deltas_are_joined_by_index_across_chunks() -> None:
    stream = sse(
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [tc(0, id="call_w", name="get_weather")]}),
        chunk({"tool_calls": [tc(0, '{"loc')]}),
        chunk({"tool_calls": [tc(0, 'ation": "')]}),
        chunk({"tool_calls": [tc(0, 'Paris"}')]}),
        chunk({}, "tool_calls"),
        usage_chunk(),
    )
    turn = WIRE.parse_stream(stream)
    body = completion(
        "tool_calls", tool_calls=[call("get_weather", '{"location": "Paris"}', "call_w")]
    )
    assert turn == WIRE.parse_response(body)
    assert turn.tool_calls[0].arguments == {"location": "Paris"}


def test_parallel_calls_interleaved_by_index_keep_index_order() -> None:
    stream = sse(
        ROLE,
        chunk({"content": "Checking both."}),
        chunk(
            {"tool_calls": [tc(0, id="call_a", name="weather"), tc(1, id="call_b", name="time")]}
        ),
        chunk({"tool_calls": [tc(1, '{"tz":')]}),
        chunk({"tool_calls": [tc(0, '{"city":')]}),
        chunk({"tool_calls": [tc(0, '"Oslo"}'), tc(1, '"CET"}')]}),
        chunk({}, "tool_calls"),
    )
    turn = WIRE.parse_stream(stream)
    assert (turn.ending, turn.text) == (Ending.TOOL_USE, "Checking both.")
    assert _calls(turn) == [
        ("call_a", "weather", '{"city":"Oslo"}'),
        ("call_b", "time", '{"tz":"CET"}'),
    ]


def test_usage_chunk_and_done_are_read() -> None:
    acc = WIRE.stream()
    for data in (json.dumps(chunk({"content": "hi"}, "stop")), json.dumps(usage_chunk()), "[DONE]"):
        acc.feed(None, data)
    turn = acc.finish()
    assert (turn.ending, turn.text) == (Ending.COMPLETE, "hi")
    assert turn.usage.input_tokens == 1117
    assert (turn.model, turn.response_id) == (MODEL, CID)


@pytest.mark.parametrize(
    ("done", "ending", "detail"),
    [
        (False, Ending.TRUNCATED, "stream ended before its final event"),
        (True, Ending.ERROR, "no finish reason"),
    ],
    ids=["cut", "done-without-finish"],
)
def test_stream_without_finish_reason_keeps_text_and_partial_call(
    done: bool, ending: Ending, detail: str
) -> None:
    """Cut before ``[DONE]``: truncated; ``[DONE]`` with no reason anywhere: an error."""
    stream = sse(
        ROLE,
        chunk({"content": "Writing the file"}),
        chunk({"tool_calls": [tc(0, id="call_w", name="write_file")]}),
        chunk({"tool_calls": [tc(0, '{"path": "a')]}),
        done=done,
    )
    turn = WIRE.parse_stream(stream)
    assert turn.ending is ending
    assert turn.detail == detail
    assert turn.raw_reason is None
    assert turn.text == "Writing the file"
    (partial,) = turn.tool_calls
    assert (partial.id, partial.name, partial.arguments_raw) == (
        "call_w",
        "write_file",
        '{"path": "a',
    )
    assert (turn.model, turn.response_id) == (MODEL, CID)


def test_an_empty_stream_is_never_empty_or_complete() -> None:
    assert WIRE.parse_stream("").ending is Ending.TRUNCATED
    assert WIRE.parse_stream(sse(ROLE, done=False)).ending is Ending.TRUNCATED
    assert WIRE.parse_stream(sse(ROLE)).ending is Ending.ERROR


def test_error_chunk_mid_stream_is_an_error_keeping_the_partial_text() -> None:
    error: dict[str, Any] = {
        "error": {
            "message": "The server had an error while processing your request.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }
    stream = sse(ROLE, chunk({"content": "Half an ans"}), error, done=False)
    turn = WIRE.parse_stream(stream)
    assert (turn.ending, turn.raw_reason, turn.text) == (Ending.ERROR, "error", "Half an ans")
    assert turn.error == ErrorInfo(type="server_error", message=error["error"]["message"])


def test_error_chunk_wins_over_a_later_finish_reason() -> None:
    stream = sse(chunk({"content": "x"}), {"error": {"message": "overloaded"}}, chunk({}, "stop"))
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.ERROR
    assert turn.detail == "overloaded"


def test_garbage_lines_are_ignored() -> None:
    acc = WIRE.stream()
    garbage = [
        "not json",
        "{broken",
        "[1,2]",
        '"str"',
        "{}",
        "null",
        '{"choices": "x"}',
        '{"choices": [5]}',
        '{"choices": [{"delta": 5, "finish_reason": 3}]}',
        '{"choices": [{"delta": {"content": 5, "tool_calls": 5, "function_call": 5}}]}',
        '{"choices": [{"delta": {"tool_calls": [5, {"index": "x", "function": 5}]}}]}',
        '{"choices": [{"delta": {"reasoning": 3, "refusal": []}}], "usage": 7, "model": 1}',
    ]
    for data in garbage:
        assert acc.feed(None, data) == ""
    assert acc.feed(None, json.dumps(chunk({"content": "real"}))) == "real"
    assert acc.feed(None, json.dumps(chunk({}, "stop"))) == ""
    turn = acc.finish()
    assert (turn.ending, turn.text) == (Ending.COMPLETE, "real")


def test_sse_comments_and_blank_keepalives_are_ignored() -> None:
    stream = ": OPENROUTER PROCESSING\n\n" + sse(chunk({"content": "ok"}, "stop"))
    turn = WIRE.parse_stream(stream)
    assert (turn.ending, turn.text) == (Ending.COMPLETE, "ok")


def test_reasoning_deltas_are_thinking_and_never_returned_as_text() -> None:
    acc = WIRE.stream()
    pieces = [
        chunk({"role": "assistant", "content": None, "reasoning_content": "Six"}),
        chunk({"reasoning_content": " times seven."}),
        chunk({"reasoning": " (vLLM style)"}),
        chunk({"content": "42"}),
        chunk({}, "stop"),
    ]
    assert [acc.feed(None, json.dumps(p)) for p in pieces] == ["", "", "", "42", ""]
    turn = acc.finish()
    assert turn.thinking == (ThinkingPart(text="Six times seven. (vLLM style)"),)
    assert (turn.ending, turn.text) == (Ending.COMPLETE, "42")


def test_thinking_only_stream_is_empty() -> None:
    stream = sse(chunk({"reasoning_content": "hm"}), chunk({"content": ""}, "stop"))
    assert WIRE.parse_stream(stream).ending is Ending.EMPTY


def test_refusal_stream_is_refused() -> None:
    stream = sse(
        ROLE, chunk({"refusal": "I'm sorry, "}), chunk({"refusal": "I can't."}), chunk({}, "stop")
    )
    turn = WIRE.parse_stream(stream)
    assert (turn.ending, turn.refusal, turn.text) == (Ending.REFUSED, "I'm sorry, I can't.", "")


def test_legacy_function_call_stream_is_tool_use() -> None:
    stream = sse(
        chunk(
            {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": ""}}
        ),
        chunk({"function_call": {"arguments": '{"a":'}}),
        chunk({"function_call": {"arguments": " 1}"}}),
        chunk({}, "function_call"),
    )
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.TOOL_USE
    (legacy,) = turn.tool_calls
    assert (legacy.id, legacy.name, legacy.arguments) == ("call_0", "f", {"a": 1})
    assert legacy.provider_details == {"legacy": True}


def test_gemini_compatible_stream_without_ids_and_stop_is_tool_use() -> None:
    whole = {"function": {"name": "web_search", "arguments": '{"query":"x"}'}, "type": "function"}
    stream = sse(
        chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "", **whole}]}),
        chunk({"tool_calls": [{"index": 1, **whole}]}, "stop"),
    )
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.TOOL_USE
    assert [(c.id, c.provider_details) for c in turn.tool_calls] == [
        ("call_0", {"synthetic_id": True}),
        ("call_1", {"synthetic_id": True}),
    ]


def test_calls_without_index_are_told_apart_by_position() -> None:
    stream = sse(
        chunk(
            {
                "tool_calls": [
                    {"id": "a", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "function": {"name": "g", "arguments": '{"x":1}'}},
                ]
            },
            "tool_calls",
        )
    )
    assert _calls(WIRE.parse_stream(stream)) == [("a", "f", "{}"), ("b", "g", '{"x":1}')]


def test_streamed_arguments_object_is_read() -> None:
    stream = sse(
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "c", "function": {"name": "f", "arguments": {"a": 1}}}
                ]
            }
        ),
        chunk({}, "tool_calls"),
    )
    assert WIRE.parse_stream(stream).tool_calls[0].arguments == {"a": 1}


def test_streamed_custom_tool_call_collects_its_input() -> None:
    head = {"index": 0, "id": "call_C", "type": "custom", "custom": {"name": "math", "input": ""}}
    stream = sse(
        chunk({"tool_calls": [head]}),
        chunk({"tool_calls": [{"index": 0, "custom": {"input": "4 +"}}]}),
        chunk({"tool_calls": [{"index": 0, "custom": {"input": " 4"}}]}),
        chunk({}, "tool_calls"),
    )
    expected = _shared.custom_call("call_C", "math", "4 + 4", {"type": "custom"})
    _shared.check_custom_call(WIRE.parse_stream(stream), expected)


def test_stream_length_mid_call_is_truncated_and_unparseable_finish_is_malformed() -> None:
    head = chunk({"tool_calls": [tc(0, id="call_x", name="write")]})
    cut = chunk({"tool_calls": [tc(0, '{"body": "Mon')]})
    turn = WIRE.parse_stream(sse(head, cut, chunk({}, "length")))
    assert (turn.ending, turn.raw_reason) == (Ending.TRUNCATED, "length")
    assert turn.tool_calls[0].arguments_raw == '{"body": "Mon'
    turn = WIRE.parse_stream(sse(head, cut, chunk({}, "tool_calls")))
    assert turn.ending is Ending.MALFORMED_TOOL_CALL


def test_azure_content_filter_stream_matches_the_body() -> None:
    results = {"hate": {"filtered": True, "severity": "high"}, "sexual": {"filtered": False}}
    prompt = chunk() | {"id": "", "model": "", "choices": [], "prompt_filter_results": []}
    stream = sse(
        prompt,
        chunk({"content": "I will"}),
        chunk({}, "content_filter", content_filter_results=results),
    )
    turn = WIRE.parse_stream(stream)
    assert (turn.ending, turn.text, turn.detail) == (Ending.FILTERED, "I will", "hate")
    body = completion("content_filter", content="I will")
    body["choices"][0]["content_filter_results"] = results
    body["usage"] = None
    assert turn == WIRE.parse_response(body)


def test_unknown_stream_finish_reason_is_an_error() -> None:
    turn = WIRE.parse_stream(sse(chunk({"content": "so far"}, "recitation")))
    assert (turn.ending, turn.raw_reason, turn.text) == (Ending.ERROR, "recitation", "so far")


_DELTA = st.fixed_dictionaries(
    {},
    optional={
        "content": st.text(max_size=4) | _json,
        "role": st.just("assistant") | _json,
        "refusal": st.text(max_size=4) | _json,
        "reasoning_content": st.text(max_size=4) | _json,
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "index": st.integers(-1, 3) | _json,
                    "id": st.sampled_from(["call_a", ""]) | _json,
                    "type": st.sampled_from(["function", "custom"]) | _json,
                    "function": st.fixed_dictionaries(
                        {}, optional={"name": st.text(max_size=3) | _json, "arguments": _json}
                    )
                    | _json,
                    "custom": st.fixed_dictionaries({}, optional={"input": _json}) | _json,
                },
            ),
            max_size=3,
        )
        | _json,
        "function_call": st.fixed_dictionaries({}, optional={"name": _json, "arguments": _json})
        | _json,
    },
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(
        st.one_of(
            st.builds(
                chunk,
                _DELTA,
                st.sampled_from([None, "stop", "length", "tool_calls", "content_filter"]) | _json,
            ),
            st.builds(lambda e: {"error": e}, _json),
            _json,
            st.sampled_from(["[DONE]", "garbage", ""]),
        ),
        max_size=10,
    )
)
def test_any_chunk_sequence_gives_a_turn_or_a_wire_format_error(events: list[Any]) -> None:
    _shared.check_finish_or_wire_error(
        WIRE, (e if isinstance(e, str) else json.dumps(e) for e in events)
    )


# -- render_request / parse_request ------------------------------------------------------------


def test_render_request_builds_the_chat_body() -> None:
    weather = ToolCall.from_raw(id="call_1", name="weather", arguments_raw='{"city":"Oslo"}')
    clock = ToolCall.from_raw(id="call_2", name="clock", arguments_raw="{}")
    request = ModelRequest(
        model="gpt-4o",
        messages=(
            Message.system("Be brief."),
            Message.user("Weather and time in Oslo?"),
            Message(
                role="assistant",
                parts=(ThinkingPart(text="two calls"), TextPart(text="Checking."), weather, clock),
            ),
            Message.tool_results(
                [
                    ToolResult(call_id="call_1", name="weather", content="-3C"),
                    ToolResult(call_id="call_2", name="clock", content="boom", is_error=True),
                ]
            ),
            Message(role="assistant", parts=()),
        ),
        tools=(
            ToolSpec(name="weather", description="Current weather", strict=True),
            ToolSpec(name="clock"),
        ),
        settings=ModelSettings(
            max_tokens=256,
            temperature=0.2,
            top_p=0.9,
            stop=("END",),
            tool_choice="weather",
            parallel_tool_calls=False,
            extra_body={"seed": 7, "temperature": 0.0},
        ),
        stream=True,
    )
    assert WIRE.render_request(request) == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather and time in Oslo?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "clock", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "-3C"},
            {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
            {"role": "assistant", "content": ""},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "parameters": {"type": "object", "properties": {}},
                    "description": "Current weather",
                    "strict": True,
                },
            },
            {
                "type": "function",
                "function": {"name": "clock", "parameters": {"type": "object", "properties": {}}},
            },
        ],
        "max_completion_tokens": 256,
        "temperature": 0.0,  # extra_body is merged last
        "top_p": 0.9,
        "stop": ["END"],
        "tool_choice": {"type": "function", "function": {"name": "weather"}},
        "parallel_tool_calls": False,
        "stream": True,
        "stream_options": {"include_usage": True},
        "seed": 7,
    }


def test_calls_only_assistant_has_null_content_and_custom_calls_render_as_custom() -> None:
    custom = ToolCall(
        id="c1",
        name="grammar",
        arguments_raw="SELECT 1",
        arguments={"input": "SELECT 1"},
        provider_details={"type": "custom"},
    )
    request = ModelRequest(
        model="m",
        messages=(Message.user("go"), Message(role="assistant", parts=(custom,))),
        settings=ModelSettings(tool_choice="required", parallel_tool_calls=True),
    )
    body = WIRE.render_request(request)
    assert body["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "custom", "custom": {"name": "grammar", "input": "SELECT 1"}}
        ],
    }
    assert body["tool_choice"] == "required"
    assert "parallel_tool_calls" not in body  # OpenAI rejects it without tools
    assert "stream" not in body


def test_parse_request_tolerates_developer_legacy_and_unknown_roles_and_fields() -> None:
    request = WIRE.parse_request(
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "developer", "content": "Rules."},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is in "},
                        {"type": "image_url", "image_url": {"url": "https://x/cat.png"}},
                        {"type": "text", "text": "this image?"},
                    ],
                    "name": "alice",
                },
                {"role": "critic", "content": "ignore me"},
                {"content": "no role"},
                "not a message",
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "lookup", "arguments": '{"q": "cat"}'},
                },
                {"role": "function", "name": "lookup", "content": "a cat"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "It is "},
                        {"type": "text", "text": "a cat."},
                    ],
                    "refusal": None,
                    "audio": None,
                    "tool_calls": [
                        {
                            "id": "call_9",
                            "type": "function",
                            "function": {"name": "log", "arguments": "{}"},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "call_9",
                    "content": [{"type": "text", "text": "ok"}],
                },
            ],
            "tools": [
                {"type": "function", "function": {"name": "lookup"}},
                {"type": "custom", "custom": {"name": "grammar"}},
                "junk",
            ],
            "max_tokens": 100,
            "stop": "END",
            "tool_choice": {"type": "function", "function": {"name": "lookup"}},
            "stream": True,
            "stream_options": {"include_usage": True},
            "seed": 1,
            "response_format": {"type": "json_object"},
            "user": "u-1",
        }
    )
    assert request.messages == (
        Message.system("Rules."),
        Message.user("What is in this image?"),
        Message(
            role="assistant",
            parts=(
                ToolCall.from_raw(
                    id="call_0",
                    name="lookup",
                    arguments_raw='{"q": "cat"}',
                    provider_details={"legacy": True},
                ),
            ),
        ),
        Message.tool_results([ToolResult(call_id="call_0", name="lookup", content="a cat")]),
        Message(
            role="assistant",
            parts=(
                TextPart(text="It is a cat."),
                ToolCall.from_raw(id="call_9", name="log", arguments_raw="{}"),
            ),
        ),
        Message.tool_results([ToolResult(call_id="call_9", name="log", content="ok")]),
    )
    assert [t.name for t in request.tools] == ["lookup"]
    assert request.tools[0].parameters == {"type": "object", "properties": {}}
    assert request.settings == ModelSettings(
        max_tokens=100,
        stop=("END",),
        tool_choice="lookup",
        extra_body={"seed": 1, "response_format": {"type": "json_object"}, "user": "u-1"},
    )
    assert request.stream is True


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ({"model": "m"}, "messages"),
        ({"model": "m", "messages": {"role": "user"}}, "messages"),
        ({"model": "m", "messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        ({"model": "m", "messages": [{"role": "system", "content": {}}]}, "messages[0].content"),
        (
            {
                "model": "m",
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "tool_calls": 5},
                ],
            },
            "messages[1].tool_calls",
        ),
        (
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": ["x"]}]},
            "messages[0].tool_calls[0]",
        ),
        (
            {
                "model": "m",
                "messages": [{"role": "assistant", "function_call": {"arguments": "{}"}}],
            },
            "messages[0].function_call.name",
        ),
        ([{"role": "user"}], "$"),
    ],
)
def test_parse_request_of_the_wrong_shape_names_the_path(bad: Any, path: str) -> None:
    with pytest.raises(WireFormatError) as info:
        WIRE.parse_request(bad)
    assert info.value.path == path


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.fixed_dictionaries(
        {
            "messages": st.lists(
                st.fixed_dictionaries(
                    {
                        "role": st.sampled_from(
                            ["system", "developer", "user", "assistant", "tool", "function", "x"]
                        )
                        | _json
                    },
                    optional={
                        "content": _json,
                        "tool_calls": _json
                        | st.lists(st.just(call("f", "{}")) | _json, max_size=2),
                        "function_call": _json,
                        "tool_call_id": _json,
                        "name": _json,
                    },
                )
                | _json,
                max_size=5,
            )
        },
        optional={
            key: _json
            for key in (
                "model",
                "tools",
                "max_tokens",
                "temperature",
                "top_p",
                "stop",
                "tool_choice",
                "parallel_tool_calls",
                "stream",
            )
        },
    )
)
def test_parse_request_gives_a_request_or_a_wire_format_error(body: dict[str, Any]) -> None:
    try:
        request = WIRE.parse_request(body)
    except WireFormatError:
        return
    assert isinstance(request, ModelRequest)


_text = st.text(max_size=12)
_name = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)


@st.composite
def _assistant(draw: st.DrawFn, turn: int) -> Message:
    """An assistant message in the one shape chat can carry: optional text, then calls."""
    parts: list[Part] = []
    kinds = draw(st.lists(st.sampled_from(["call", "custom"]), max_size=3))
    if not kinds or draw(st.booleans()):
        parts.append(TextPart(text=draw(st.text(min_size=1, max_size=12))))
    for i, kind in enumerate(kinds):
        call_id = f"call_{turn}{i:02d}"
        if kind == "call":
            args = draw(st.sampled_from(['{"a":1}', "{}", '{"a": ', "", '{"q": "x y"}']))
            parts.append(ToolCall.from_raw(id=call_id, name=draw(_name), arguments_raw=args))
        else:
            raw = draw(_text)
            parts.append(
                ToolCall(
                    id=call_id,
                    name=draw(_name),
                    arguments_raw=raw,
                    arguments={"input": raw},
                    provider_details={"type": "custom"},
                )
            )
    return Message(role="assistant", parts=tuple(parts))


_requests = _shared.requests(
    "gpt-4o",
    prompts=st.builds(Message.user, _text) | st.builds(Message.system, _text),
    assistants=_assistant,
    tools=st.builds(
        ToolSpec,
        name=_name,
        description=_text,
        parameters=st.sampled_from(
            [
                {"type": "object", "properties": {}},
                {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            ]
        ),
        strict=st.booleans(),
    ),
    extra_bodies=[
        {},
        {"seed": 7},
        {"reasoning_effort": "low"},
        {"response_format": {"type": "text"}},
    ],
    stop=True,
    parallel_needs_tools=True,
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(request=_requests)
def test_parse_request_inverts_render_request(request: ModelRequest) -> None:
    body = WIRE.render_request(request)
    assert WIRE.parse_request(json.loads(json.dumps(body))) == request


def test_the_sdk_sends_a_rendered_request_that_parses_back() -> None:
    request = ModelRequest(
        model="gpt-4o",
        messages=(
            Message.system("Be brief."),
            Message.user("hi"),
            Message(
                role="assistant",
                parts=(ToolCall.from_raw(id="call_1", name="f", arguments_raw='{"x": 1}'),),
            ),
            Message.tool_results([ToolResult(call_id="call_1", name="f", content="2")]),
        ),
        tools=(ToolSpec(name="f", description="doubles x"),),
        settings=ModelSettings(max_tokens=50, tool_choice="auto", extra_body={"seed": 3}),
    )
    sent: list[Any] = []
    answer = WIRE.render_response(
        Turn(message=Message(role="assistant", parts=(TextPart(text="2"),)), ending=Ending.COMPLETE)
    )

    def handler(http_request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(http_request.content))
        return httpx2.Response(200, text=answer.body, headers={"content-type": answer.content_type})

    client = openai.OpenAI(
        api_key="sk-test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    client.chat.completions.create(**WIRE.render_request(request))
    assert WIRE.parse_request(sent[0]) == request


# -- render_response through the official SDK --------------------------------------------------


MESSAGES: list[Any] = [{"role": "user", "content": "hi"}]


turn_of = functools.partial(
    _shared.turn_of, response_id="chatcmpl-test0123456789", model="gpt-4o-mini-2024-07-18"
)
"""`_shared.turn_of` with the id and model a chat completion always carries."""


WEATHER = ToolCall.from_raw(id="call_W1", name="weather", arguments_raw='{"city":"Lima"}')
TURNS = {
    **_shared.served_turns(turn_of),
    "complete": turn_of(
        Ending.COMPLETE,
        ThinkingPart(text="The user greets me."),
        TextPart(text="Hello! How can I help you today? " * 3),
        usage=Usage(input_tokens=10, output_tokens=20, cache_read_tokens=4, reasoning_tokens=8),
    ),
    "tool_use": turn_of(
        Ending.TOOL_USE,
        TextPart(text="Checking."),
        WEATHER,
        ToolCall.from_raw(
            id="call_W2", name="forecast", arguments_raw='{"city":"Lima","days":3,"units":"metric"}'
        ),
    ),
    "argless_call": turn_of(
        Ending.TOOL_USE, ToolCall.from_raw(id="call_N", name="now", arguments_raw="")
    ),
    "custom_call": turn_of(
        Ending.TOOL_USE, _shared.custom_call("call_C", "math", "4 + 4", {"type": "custom"})
    ),
    "empty_thinking": turn_of(Ending.EMPTY, ThinkingPart(text="Nothing to say.")),
}
FINISH = {
    "complete": "stop",
    "tool_use": "tool_calls",
    "argless_call": "tool_calls",
    "custom_call": "tool_calls",
    "truncated": "length",
    "truncated_call": "length",
    "filtered": "content_filter",
    "refused": "stop",
    "empty": "stop",
    "empty_thinking": "stop",
    "malformed": "tool_calls",
}


def _sdk_calls(calls: Any) -> list[tuple[str, str, str]]:
    out = []
    for c in calls or ():
        if c.type == "custom":
            out.append((c.id, c.custom.name, c.custom.input))
        else:
            out.append((c.id, c.function.name, c.function.arguments))
    return out


def _same(back: Turn, turn: Turn) -> None:
    assert (back.ending, back.text, back.refusal) == (turn.ending, turn.text, turn.refusal)
    assert _calls(back) == _calls(turn)
    assert [c.provider_details for c in back.tool_calls] == [
        c.provider_details for c in turn.tool_calls
    ]
    assert [t.text for t in back.thinking] == [t.text for t in turn.thinking]
    assert (back.usage, back.model, back.response_id) == (turn.usage, turn.model, turn.response_id)


@pytest.mark.parametrize("name", sorted(TURNS))
def test_rendered_body_is_read_by_the_sdk_and_round_trips(name: str) -> None:
    turn = TURNS[name]
    answer = WIRE.render_response(turn)
    assert (answer.status, answer.content_type) == (200, "application/json")
    resp = sdk(answer).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert (resp.object, resp.id, resp.model) == ("chat.completion", turn.response_id, turn.model)
    (choice,) = resp.choices
    assert choice.finish_reason == FINISH[name]
    assert (choice.message.role, choice.message.content or "") == ("assistant", turn.text)
    assert choice.message.refusal == turn.refusal
    assert _sdk_calls(choice.message.tool_calls) == _calls(turn)
    thinking = "".join(t.text for t in turn.thinking) or None
    assert getattr(choice.message, "reasoning_content", None) == thinking
    assert resp.usage is not None
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens, resp.usage.total_tokens) == (
        turn.usage.input_tokens,
        turn.usage.output_tokens,
        turn.usage.total_tokens,
    )
    _same(WIRE.parse_response(json.loads(answer.body)), turn)


@pytest.mark.parametrize("name", sorted(TURNS))
def test_rendered_stream_is_read_by_the_sdk_and_round_trips(name: str) -> None:
    turn = TURNS[name]
    answer = WIRE.render_response(turn, stream=True)
    assert (answer.status, answer.content_type) == (200, "text/event-stream")
    assert answer.body.endswith("data: [DONE]\n\n")
    chunks = list(
        sdk(answer).chat.completions.create(
            model="gpt-4o-mini",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert {(c.id, c.object, c.model) for c in chunks} == {
        (turn.response_id, "chat.completion.chunk", turn.model)
    }
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert [f for f in finishes if f is not None] == [FINISH[name]]
    assert finishes[-1] == FINISH[name]
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert deltas[0].role == "assistant"
    assert "".join(d.content or "" for d in deltas) == turn.text
    assert "".join(d.refusal or "" for d in deltas) == (turn.refusal or "")
    streamed: dict[int, list[str]] = {}
    for d in deltas:
        for piece in d.tool_calls or ():
            fn = piece.function
            custom = getattr(piece, "custom", None)  # not in the SDK's chunk types (see below)
            text = fn.arguments if fn is not None else (custom or {}).get("input")
            streamed.setdefault(piece.index, []).append(text or "")
    assert ["".join(v) for _, v in sorted(streamed.items())] == [
        c.arguments_raw for c in turn.tool_calls
    ]
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None and last.usage.prompt_tokens == turn.usage.input_tokens
    back = WIRE.parse_stream(answer.body)
    _same(back, turn)
    body_turn = WIRE.parse_response(json.loads(WIRE.render_response(turn).body))
    assert back == body_turn


@pytest.mark.parametrize(
    "name",
    # The SDK's helper cannot accumulate streamed custom calls: its chunk types only know
    # function calls (openai/openai-python#2530), so "custom_call" is left out here.
    sorted(n for n in TURNS if FINISH[n] in ("stop", "tool_calls") and n != "custom_call"),
)
def test_the_sdk_stream_helper_assembles_the_same_message(name: str) -> None:
    turn = TURNS[name]
    answer = WIRE.render_response(turn, stream=True)
    with sdk(answer).chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    (choice,) = final.choices
    assert choice.finish_reason == FINISH[name]
    assert (choice.message.content or "") == turn.text
    assert choice.message.refusal == turn.refusal
    assert _sdk_calls(choice.message.tool_calls) == _calls(turn)
    assert kinds[-1] == "chunk"
    if turn.text:
        assert "content.done" in kinds
    if turn.tool_calls:
        assert kinds.count("tool_calls.function.arguments.done") == len(turn.tool_calls)


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("truncated", openai.LengthFinishReasonError),
        ("truncated_call", openai.LengthFinishReasonError),
        ("filtered", openai.ContentFilterFinishReasonError),
    ],
)
def test_the_sdk_stream_helper_raises_on_length_and_content_filter(
    name: str, error: type[Exception]
) -> None:
    # The helper raises by design on these finish reasons: proof it read them.
    answer = WIRE.render_response(TURNS[name], stream=True)
    with (
        pytest.raises(error),
        sdk(answer).chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream,
    ):
        stream.get_final_completion()


def test_refused_without_a_refusal_part_still_renders_a_refusal() -> None:
    turn = turn_of(Ending.REFUSED, detail="Not allowed.")
    resp = sdk(WIRE.render_response(turn)).chat.completions.create(model="m", messages=MESSAGES)
    assert (resp.choices[0].message.refusal, resp.choices[0].message.content) == (
        "Not allowed.",
        None,
    )
    for stream in (False, True):
        answer = WIRE.render_response(turn, stream=stream)
        back = (
            WIRE.parse_stream(answer.body)
            if stream
            else WIRE.parse_response(json.loads(answer.body))
        )
        assert (back.ending, back.refusal) == (Ending.REFUSED, "Not allowed.")
    bare = WIRE.parse_response(json.loads(WIRE.render_response(turn_of(Ending.REFUSED)).body))
    assert bare.ending is Ending.REFUSED and bare.refusal


def test_a_parsed_body_renders_back_to_the_same_turn() -> None:
    parsed = WIRE.parse_response(
        completion(
            "tool_calls",
            content="Both.",
            reasoning_content="two calls",
            tool_calls=[call("f", '{"a": 1}', "call_x"), call("g", "", "")],
        )
    )
    for stream in (False, True):
        answer = WIRE.render_response(parsed, stream=stream)
        back = (
            WIRE.parse_stream(answer.body)
            if stream
            else WIRE.parse_response(json.loads(answer.body))
        )
        assert back.message.parts[:2] == parsed.message.parts[:2]
        assert _calls(back) == _calls(parsed) == [("call_x", "f", '{"a": 1}'), ("call_1", "g", "")]
        assert (back.ending, back.usage, back.model, back.response_id) == (
            parsed.ending,
            parsed.usage,
            MODEL,
            CID,
        )


def test_rendered_ids_look_like_openais_when_the_turn_has_none() -> None:
    bare = Turn(
        message=Message(role="assistant", parts=(TextPart(text="hi"),)), ending=Ending.COMPLETE
    )
    body = json.loads(WIRE.render_response(bare).body)
    assert body["id"].startswith("chatcmpl-") and len(body["id"]) > len("chatcmpl-")
    assert body["object"] == "chat.completion"
    assert isinstance(body["created"], int) and body["model"]
    first = json.loads(
        WIRE.render_response(bare, stream=True).body.split("\n\n")[0].removeprefix("data: ")
    )
    assert first["id"].startswith("chatcmpl-") and first["object"] == "chat.completion.chunk"


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (502, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_error_turns_render_openais_error_bodies_and_the_sdk_raises_the_matching_class(
    status: int, error: type[openai.APIStatusError], stream: bool
) -> None:
    turn = turn_of(Ending.ERROR, error=ErrorInfo(status=status))
    answer = WIRE.render_response(turn, stream=stream)
    assert (answer.status, answer.content_type) == (status, "application/json")
    assert answer.headers["x-request-id"].startswith("req_")
    with pytest.raises(error) as info:
        sdk(answer).chat.completions.create(model="m", messages=MESSAGES, stream=stream)
    assert info.value.status_code == status
    body = json.loads(answer.body)
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert info.value.message.endswith(body["error"]["message"])
    back = WIRE.parse_error(status, body)
    assert (back.ending, back.raw_reason) == (Ending.ERROR, str(status))


def test_rate_limit_error_has_retry_after_and_keeps_its_message() -> None:
    turn = turn_of(Ending.ERROR, error=ErrorInfo(status=429, message="Slow down", retry_after=7))
    answer = WIRE.render_response(turn)
    assert (answer.status, answer.headers["retry-after"]) == (429, "7")
    with pytest.raises(openai.RateLimitError) as info:
        sdk(answer).chat.completions.create(model="m", messages=MESSAGES)
    assert info.value.code == "rate_limit_exceeded"
    assert info.value.message.endswith("Slow down")
    assert info.value.response.headers["retry-after"] == "7"
    back = WIRE.parse_error(429, json.loads(answer.body), retry_after=7)
    assert back.error == ErrorInfo(
        status=429, type="rate_limit_exceeded", message="Slow down", retry_after=7
    )


def test_an_error_turn_read_from_a_body_renders_back_to_the_same_error() -> None:
    err = {
        "error": {
            "message": "quota",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    parsed = WIRE.parse_error(429, err, retry_after=30)
    answer = WIRE.render_response(parsed)
    assert (answer.status, json.loads(answer.body)["error"]["code"]) == (429, "insufficient_quota")
    assert WIRE.parse_error(429, json.loads(answer.body), retry_after=30).error == parsed.error


def test_error_without_status_is_a_500_or_a_stream_that_breaks() -> None:
    turn = turn_of(
        Ending.ERROR, TextPart(text="Partial"), error=ErrorInfo(type="server_error", message="boom")
    )
    plain = WIRE.render_response(turn)
    assert plain.status == 500
    with pytest.raises(openai.InternalServerError, match="boom"):
        sdk(plain).chat.completions.create(model="m", messages=MESSAGES)
    streamed = WIRE.render_response(turn, stream=True)
    assert streamed.status == 200
    assert "[DONE]" not in streamed.body
    seen: list[str] = []
    with pytest.raises(openai.APIError, match="boom") as info:
        for c in sdk(streamed).chat.completions.create(model="m", messages=MESSAGES, stream=True):
            seen.append(c.choices[0].delta.content or "")
    assert "".join(seen) == "Partial"
    assert info.value.body == {
        "message": "boom",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    back = WIRE.parse_stream(streamed.body)
    assert (back.ending, back.text) == (Ending.ERROR, "Partial")
    assert back.error == ErrorInfo(type="server_error", message="boom")


def test_error_without_any_error_info_still_breaks_with_openais_message() -> None:
    streamed = WIRE.render_response(turn_of(Ending.ERROR), stream=True)
    back = WIRE.parse_stream(streamed.body)
    assert back.ending is Ending.ERROR
    assert back.error == ErrorInfo(
        type="server_error", message="The server had an error while processing your request."
    )


@pytest.mark.parametrize("stream", [False, True])
def test_context_exceeded_is_openais_400_the_sdk_raises(stream: bool) -> None:
    answer = WIRE.render_response(turn_of(Ending.CONTEXT_EXCEEDED), stream=stream)
    assert answer.status == 400
    with pytest.raises(openai.BadRequestError) as info:
        sdk(answer).chat.completions.create(model="m", messages=MESSAGES, stream=stream)
    assert (info.value.code, info.value.param) == ("context_length_exceeded", "messages")
    back = WIRE.parse_error(answer.status, json.loads(answer.body))
    assert back.ending is Ending.CONTEXT_EXCEEDED


def test_azure_filter_error_turn_renders_a_content_filter_400() -> None:
    message = (
        "The response was filtered due to the prompt triggering Azure OpenAI's content "
        "management policy."
    )
    turn = turn_of(
        Ending.FILTERED, error=ErrorInfo(status=400, type="content_filter", message=message)
    )
    answer = WIRE.render_response(turn)
    with pytest.raises(openai.BadRequestError) as info:
        sdk(answer).chat.completions.create(model="m", messages=MESSAGES)
    assert info.value.code == "content_filter"
    back = WIRE.parse_error(400, json.loads(answer.body))
    assert (back.ending, back.detail) == (Ending.FILTERED, message)


@pytest.mark.parametrize(
    "parts",
    [(), (ToolCall.from_raw(id="call_1", name="get_weather", arguments_raw='{"city": 5}'),)],
    ids=["no-call", "call-that-parses"],
)
@pytest.mark.parametrize("stream", [False, True])
def test_malformed_without_an_unparseable_call_is_groqs_tool_use_failed_400(
    parts: tuple[Part, ...], stream: bool
) -> None:
    answer = WIRE.render_response(turn_of(Ending.MALFORMED_TOOL_CALL, *parts), stream=stream)
    assert answer.status == 400
    with pytest.raises(openai.BadRequestError) as info:
        sdk(answer).chat.completions.create(model="m", messages=MESSAGES, stream=stream)
    assert info.value.code == "tool_use_failed"
    body = json.loads(answer.body)
    if parts:
        assert json.loads(body["error"]["failed_generation"]) == [
            {"name": "get_weather", "arguments": '{"city": 5}'}
        ]
    assert WIRE.parse_error(400, body).ending is Ending.MALFORMED_TOOL_CALL


@pytest.mark.parametrize("stream", [False, True])
def test_paused_is_unsupported_naming_the_ending_and_the_api(stream: bool) -> None:
    with pytest.raises(UnsupportedTurn, match="paused") as info:
        WIRE.render_response(turn_of(Ending.PAUSED, TextPart(text="searching")), stream=stream)
    assert "openai-chat" in str(info.value)


def test_media_parts_are_not_rendered_as_text() -> None:
    turn = turn_of(
        Ending.COMPLETE, TextPart(text="Here:"), MediaPart(mime_type="image/png", data="iVBO")
    )
    back = WIRE.parse_response(json.loads(WIRE.render_response(turn).body))
    assert (back.ending, back.text) == (Ending.COMPLETE, "Here:")


# -- registry ----------------------------------------------------------------------------------


def test_classify_reads_this_api_by_name_for_bodies_streams_and_errors() -> None:
    assert classify("openai-chat", completion(content="hi")).ending is Ending.COMPLETE
    stream = sse(chunk({"content": "hi"}), chunk({}, "length"))
    assert classify("openai-chat", stream, stream=True).ending is Ending.TRUNCATED
    assert classify("openai-chat", stream.encode(), stream=True).text == "hi"
    err = {"error": {"message": "slow", "code": "rate_limit_exceeded"}}
    assert classify("openai-chat", err, status=429).ending is Ending.ERROR
