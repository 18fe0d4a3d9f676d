"""openai-responses: bodies, error bodies, streams, requests, and serving through the real SDK."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.models import _shared

from donegate.errors import UnsupportedTurn
from donegate.messages import (
    Ending,
    ErrorInfo,
    MediaPart,
    Message,
    Part,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Usage,
)
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.openai_responses import WIRE
from donegate.models.registry import classify

RID = "resp_68af1c2e4b9081a0b1c2d3e4f5a6b7c80a1b2c3d4e5f6a7b"
MSG = "msg_68af1c2f0c1481a0a9b8c7d6e5f4a3b20a1b2c3d4e5f6a7b"

sdk = _shared.openai_sdk
_calls = _shared.call_triples


# -- fixtures: shapes from the API reference ---------------------------------------------------


def body(*output: dict[str, Any], status: str = "completed", **extra: Any) -> dict[str, Any]:
    """A response object as ``POST /v1/responses`` returns it."""
    return {
        "id": RID,
        "object": "response",
        "created_at": 1756306478,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "model": "gpt-5-mini-2025-08-07",
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 36,
            "input_tokens_details": {"cached_tokens": 12},
            "output_tokens": 87,
            "output_tokens_details": {"reasoning_tokens": 64},
            "total_tokens": 123,
        },
        **extra,
    }


def message(*content: dict[str, Any], status: str = "completed", **extra: Any) -> dict[str, Any]:
    return {
        "id": MSG,
        "type": "message",
        "status": status,
        "content": list(content),
        "role": "assistant",
        **extra,
    }


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": t, **extra}


def refusal(t: str) -> dict[str, Any]:
    return {"type": "refusal", "refusal": t}


def function_call(name: str, args: str, call_id: str = "call_Q2x8", **extra: Any) -> dict[str, Any]:
    return {
        "id": f"fc_{call_id}",
        "type": "function_call",
        "status": "completed",
        "arguments": args,
        "call_id": call_id,
        "name": name,
        **extra,
    }


def reasoning(*summary: str, encrypted: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": "rs_68af1c2e9d2c81a0",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": s} for s in summary],
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


# -- parse_response ----------------------------------------------------------------------------


def test_completed_text_is_complete_with_usage_model_and_id() -> None:
    turn = WIRE.parse_response(body(message(text("Paris is the capital."))))
    assert turn.ending is Ending.COMPLETE
    assert turn.raw_reason == "completed"
    assert turn.text == "Paris is the capital."
    assert turn.message.parts[0].provider_details == {"item_id": MSG}
    assert turn.usage == Usage(
        input_tokens=36, output_tokens=87, cache_read_tokens=12, reasoning_tokens=64
    )
    assert (turn.model, turn.response_id, turn.api) == (
        "gpt-5-mini-2025-08-07",
        RID,
        "openai-responses",
    )


def test_function_calls_are_tool_use_with_call_id_and_item_id() -> None:
    turn = WIRE.parse_response(
        body(
            reasoning(encrypted="gAAAA-enc"),
            function_call("weather", '{"city":"Berlin"}', "call_a"),
            function_call("time", "{}", "call_b"),
        )
    )
    assert turn.ending is Ending.TOOL_USE
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("call_a", "weather", {"city": "Berlin"}),
        ("call_b", "time", {}),
    ]
    assert turn.tool_calls[0].provider_details == {"item_id": "fc_call_a"}
    (thinking,) = turn.thinking
    assert (thinking.text, thinking.signature, thinking.redacted) == ("", "gAAAA-enc", True)


def test_custom_tool_call_keeps_its_freeform_input() -> None:
    item = {
        "id": "ctc_1",
        "type": "custom_tool_call",
        "status": "completed",
        "call_id": "call_c",
        "input": "4 + 4",
        "name": "math_exp",
    }
    details = {"type": "custom_tool_call", "item_id": "ctc_1"}
    expected = _shared.custom_call("call_c", "math_exp", "4 + 4", details)
    _shared.check_custom_call(WIRE.parse_response(body(item)), expected)


def test_local_shell_call_is_a_client_call_with_the_action_as_arguments() -> None:
    action = {"type": "exec", "command": ["ls", "-la"], "env": {}, "working_directory": "/tmp"}
    item = {
        "id": "lsh_1",
        "type": "local_shell_call",
        "status": "completed",
        "action": action,
        "call_id": "call_s",
    }
    turn = WIRE.parse_response(body(item))
    assert turn.ending is Ending.TOOL_USE
    (call,) = turn.tool_calls
    assert (call.name, call.arguments, json.loads(call.arguments_raw)) == (
        "local_shell",
        action,
        action,
    )


def test_reasoning_summary_and_bedrock_reasoning_text_are_thinking_never_text() -> None:
    turn = WIRE.parse_response(body(reasoning("First.", "Second.")))
    assert turn.ending is Ending.EMPTY
    assert turn.thinking[0].text == "First.\n\nSecond."
    mantle = {
        "id": "msg_a0116a5321c28fae",
        "type": "reasoning",
        "status": "completed",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "The user wants OK."}],
    }
    turn = WIRE.parse_response(body(mantle, message(text("OK"))))
    assert turn.ending is Ending.COMPLETE
    assert turn.thinking[0].text == "The user wants OK."
    assert turn.thinking[0].provider_details == {
        "item_id": "msg_a0116a5321c28fae",
        "source": "content",
    }
    assert turn.text == "OK"


@pytest.mark.parametrize(
    "output",
    [
        [],
        [message(text(""))],
        [message(text("  \n\t"))],
        [reasoning("thinking only")],
        [{"id": "ws_1", "type": "web_search_call", "status": "completed"}],
    ],
    ids=["no-output", "empty-text", "whitespace", "thinking-only", "server-tool-only"],
)
def test_completed_without_visible_output_or_call_is_empty(output: list[Any]) -> None:
    turn = WIRE.parse_response(body(*output))
    assert turn.ending is Ending.EMPTY
    assert turn.tool_calls == ()


def test_refusal_part_is_refused_and_not_text() -> None:
    turn = WIRE.parse_response(body(message(refusal("I can't help with that."))))
    assert turn.ending is Ending.REFUSED
    assert turn.refusal == "I can't help with that."
    assert turn.text == ""


def test_unparseable_arguments_are_malformed() -> None:
    turn = WIRE.parse_response(body(function_call("f", '{"a": ')))
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert turn.detail is not None and turn.detail.startswith("f: arguments are not valid JSON")


def test_incomplete_max_output_tokens_is_truncated_keeping_a_partial_call() -> None:
    details = {"incomplete_details": {"reason": "max_output_tokens"}}
    turn = WIRE.parse_response(
        body(
            message(text("1. Alabama\n2. Al"), status="incomplete"), status="incomplete", **details
        )
    )
    assert (turn.ending, turn.raw_reason, turn.text) == (
        Ending.TRUNCATED,
        "max_output_tokens",
        "1. Alabama\n2. Al",
    )
    cut = function_call("write", '{"path": "a.txt", "content": "hel', status="incomplete")
    turn = WIRE.parse_response(body(cut, status="incomplete", **details))
    assert turn.ending is Ending.TRUNCATED
    (call,) = turn.tool_calls
    assert call.arguments_raw == '{"path": "a.txt", "content": "hel'
    assert call.parse_error is not None


def test_incomplete_reasoning_only_is_truncated_not_empty() -> None:
    details = {"incomplete_details": {"reason": "max_output_tokens"}}
    turn = WIRE.parse_response(body(reasoning(), status="incomplete", **details))
    assert turn.ending is Ending.TRUNCATED


def test_incomplete_content_filter_is_filtered() -> None:
    details = {"incomplete_details": {"reason": "content_filter"}}
    turn = WIRE.parse_response(
        body(message(text("I'm sorry"), status="incomplete"), status="incomplete", **details)
    )
    assert (turn.ending, turn.raw_reason, turn.text) == (
        Ending.FILTERED,
        "content_filter",
        "I'm sorry",
    )


@pytest.mark.parametrize("reason", ["max_messages", "steered", None])
def test_unknown_incomplete_reason_is_an_error_keeping_the_reason(reason: str | None) -> None:
    details = {"reason": reason} if reason else None
    turn = WIRE.parse_response(
        body(message(text("partial")), status="incomplete", incomplete_details=details)
    )
    assert turn.ending is Ending.ERROR
    assert turn.raw_reason == (reason or "incomplete")
    assert turn.text == "partial"


def test_failed_response_is_an_error_with_its_error_object() -> None:
    error = {"code": "server_error", "message": "The request timed out."}
    turn = WIRE.parse_response(body(status="failed", error=error))
    assert turn.ending is Ending.ERROR
    assert turn.raw_reason == "failed"
    assert turn.error == ErrorInfo(
        status=None, type="server_error", message="The request timed out."
    )
    assert (turn.model, turn.response_id) == ("gpt-5-mini-2025-08-07", RID)


def test_failed_by_a_safety_policy_is_filtered() -> None:
    error = {"code": "bio_policy", "message": "This request was blocked."}
    assert WIRE.parse_response(body(status="failed", error=error)).ending is Ending.FILTERED


@pytest.mark.parametrize("status", ["cancelled", "queued", "in_progress", "paused_forever"])
def test_unfinished_and_unknown_statuses_are_errors(status: str) -> None:
    turn = WIRE.parse_response(body(message(text("so far")), status=status))
    assert turn.ending is Ending.ERROR
    assert turn.raw_reason == status
    assert turn.error is not None and turn.error.type == status


def test_server_tools_are_kept_and_not_counted() -> None:
    search = {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "ruby version"},
    }
    turn = WIRE.parse_response(body(search, message(text("Ruby 3.4."))))
    assert turn.ending is Ending.COMPLETE
    assert turn.tool_calls == ()
    server = turn.message.parts[0]
    assert isinstance(server, ServerToolPart)
    assert (server.name, server.id, server.data) == ("web_search_call", "ws_1", search)


def test_generated_image_counts_as_output() -> None:
    image = {
        "id": "ig_1",
        "type": "image_generation_call",
        "status": "completed",
        "output_format": "webp",
        "result": "UklGRg==",
    }
    turn = WIRE.parse_response(body(image))
    assert turn.ending is Ending.COMPLETE
    assert turn.message.parts[1] == MediaPart(mime_type="image/webp", data="UklGRg==")


def test_a_200_error_envelope_is_an_error_turn() -> None:
    env = {
        "error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}
    }
    turn = WIRE.parse_response(env)
    assert turn.ending is Ending.ERROR
    assert turn.error is not None and turn.error.type == "insufficient_quota"


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ([1, 2], "$"),
        ({"status": "completed", "output": {"type": "message"}}, "output"),
        ({"status": "completed", "output": ["x"]}, "output[0]"),
        ({"status": "completed", "output": [{"type": 3}]}, "output[0].type"),
        (body(message({"type": "output_text", "text": 7})), "output[0].content[0].text"),
        (body(function_call("f", "{}") | {"arguments": 5}), "output[0].arguments"),
        (body(status=7), "status"),
        (body(status="incomplete", incomplete_details="max"), "incomplete_details"),
    ],
)
def test_a_body_of_the_wrong_shape_raises_wire_format_error_naming_the_path(
    bad: Any, path: str
) -> None:
    _shared.check_malformed(WIRE, bad, path)


_json = _shared.json_values(allow_nan=False)
_KEYS = ["status", "output", "incomplete_details", "error", "usage", "model", "id"]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_body_gives_a_turn_or_a_wire_format_error(data: st.DataObject) -> None:
    sample = body(
        reasoning("r"),
        message(text("t"), refusal("no")),
        function_call("f", '{"a":1}'),
        {"id": "ws", "type": "web_search_call"},
    )
    mutated: Any = data.draw(
        st.sampled_from([sample, _json]).flatmap(lambda s: st.just(s) if isinstance(s, dict) else s)
    )
    if isinstance(mutated, dict):
        mutated = json.loads(json.dumps(mutated))
        for key in data.draw(st.lists(st.sampled_from(_KEYS), max_size=3)):
            mutated[key] = data.draw(_json)
        item = data.draw(st.integers(0, 3))
        if isinstance(mutated.get("output"), list) and item < len(mutated["output"]):
            target = mutated["output"][item]
            if isinstance(target, dict) and target:
                field = data.draw(st.sampled_from(sorted(target)))
                target[field] = data.draw(_json)
    _shared.check_turn_or_wire_error(WIRE, mutated)


# -- parse_error -------------------------------------------------------------------------------


def test_context_length_exceeded_400() -> None:
    err = {
        "error": {
            "message": "Your input exceeds the context window of this model.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
    }
    turn = WIRE.parse_error(400, err)
    assert turn.ending is Ending.CONTEXT_EXCEEDED
    assert turn.error == ErrorInfo(
        status=400,
        type="context_length_exceeded",
        message="Your input exceeds the context window of this model.",
    )


def test_rate_limit_keeps_retry_after() -> None:
    err = {
        "error": {"message": "Rate limit reached", "type": "tokens", "code": "rate_limit_exceeded"}
    }
    turn = WIRE.parse_error(429, err, retry_after=2.5)
    assert turn.ending is Ending.ERROR
    assert turn.raw_reason == "429"
    assert turn.error is not None
    assert (turn.error.type, turn.error.retry_after) == ("rate_limit_exceeded", 2.5)


def test_azure_prompt_filter_is_filtered() -> None:
    err = {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's "
            "content management policy.",
            "type": "invalid_request_error",
            "param": "prompt",
            "code": "content_filter",
        }
    }
    assert WIRE.parse_error(400, err).ending is Ending.FILTERED


def test_flagged_prompt_is_filtered() -> None:
    err = {
        "error": {
            "message": "Invalid prompt: your prompt was flagged as potentially violating our "
            "usage policy.",
            "type": "invalid_request_error",
            "code": "invalid_prompt",
        }
    }
    assert WIRE.parse_error(400, err).ending is Ending.FILTERED


def test_groq_tool_use_failed_is_malformed() -> None:
    err = {
        "error": {
            "message": "tool call validation failed: parameters for tool f did not match schema",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
        }
    }
    assert WIRE.parse_error(400, err).ending is Ending.MALFORMED_TOOL_CALL


@pytest.mark.parametrize(
    "raw",
    [None, "", "<html>502 Bad Gateway</html>", [], [{"error": {"message": "x"}}], {"detail": 1}, 3],
)
def test_error_bodies_of_any_shape_are_errors(raw: Any) -> None:
    turn = WIRE.parse_error(502, raw)
    assert turn.ending is Ending.ERROR
    assert turn.error is not None and turn.error.status == 502


@given(raw=_json)
def test_parse_error_never_raises(raw: Any) -> None:
    assert isinstance(WIRE.parse_error(500, raw).ending, Ending)


# -- streams -----------------------------------------------------------------------------------


def sse(*events: dict[str, Any], names: bool = True) -> str:
    out = []
    for n, e in enumerate(events):
        data = {"type": e["type"], "sequence_number": n, **e}
        out.append((f"event: {e['type']}\n" if names else "") + f"data: {json.dumps(data)}\n\n")
    return "".join(out)


def lifecycle(kind: str, final: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "response": final}


START = lifecycle("response.created", body(status="in_progress", usage=None))


def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def delta(index: int, piece: str, kind: str = "response.output_text.delta") -> dict[str, Any]:
    return {"type": kind, "item_id": MSG, "output_index": index, "content_index": 0, "delta": piece}


def test_text_stream_gives_deltas_and_the_bodys_turn() -> None:
    final = body(message(text("Hello world")))
    stream = sse(
        START,
        added(0, message(status="in_progress")),
        delta(0, "Hello"),
        delta(0, " world"),
        done(0, message(text("Hello world"))),
        lifecycle("response.completed", final),
    )
    acc = WIRE.stream()
    from donegate.models._sse import iter_sse

    deltas = [acc.feed(event, data) for event, data in iter_sse(stream)]
    assert "".join(deltas) == "Hello world"
    assert acc.finish() == WIRE.parse_response(final)


def test_tool_call_stream_concatenates_arguments() -> None:
    call = function_call("weather", '{"city":"Paris"}')
    stream = sse(
        START,
        added(0, call | {"arguments": "", "status": "in_progress"}),
        {
            "type": "response.function_call_arguments.delta",
            "item_id": call["id"],
            "output_index": 0,
            "delta": '{"city":',
        },
        {
            "type": "response.function_call_arguments.delta",
            "item_id": call["id"],
            "output_index": 0,
            "delta": '"Paris"}',
        },
        {
            "type": "response.function_call_arguments.done",
            "item_id": call["id"],
            "output_index": 0,
            "arguments": '{"city":"Paris"}',
        },
        done(0, call),
        lifecycle("response.completed", body(call)),
    )
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.TOOL_USE
    assert turn.tool_calls[0].arguments == {"city": "Paris"}


def test_final_event_without_output_uses_the_streamed_items() -> None:
    stream = sse(
        START,
        added(0, message(status="in_progress")),
        delta(0, "Done."),
        done(0, message(text("Done."))),
        lifecycle("response.completed", body()),
    )
    turn = WIRE.parse_stream(stream)
    assert (turn.ending, turn.text) == (Ending.COMPLETE, "Done.")


def test_stream_without_final_event_is_truncated_with_partial_text_and_call() -> None:
    call = function_call("write", "", status="in_progress")
    stream = sse(
        START,
        added(0, message(status="in_progress")),
        {
            "type": "response.content_part.added",
            "item_id": MSG,
            "output_index": 0,
            "content_index": 0,
            "part": text(""),
        },
        delta(0, "Writing the file"),
        added(1, call),
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": call["id"],
            "delta": '{"path": "a',
        },
    )
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.TRUNCATED
    assert turn.detail == "stream ended before its final event"
    assert turn.text == "Writing the file"
    (partial,) = turn.tool_calls
    assert partial.arguments_raw == '{"path": "a'
    assert (turn.model, turn.response_id) == ("gpt-5-mini-2025-08-07", RID)


@pytest.mark.parametrize(
    "error",
    [
        {"type": "error", "code": "server_error", "message": "boom", "param": None},
        {
            "type": "error",
            "error": {"type": "server_error", "code": "server_error", "message": "boom"},
        },
    ],
    ids=["documented-flat", "live-nested"],
)
def test_error_event_is_an_error_keeping_the_partial_text(error: dict[str, Any]) -> None:
    stream = sse(START, added(0, message(status="in_progress")), delta(0, "Half an ans"), error)
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.ERROR
    assert turn.text == "Half an ans"
    assert turn.error == ErrorInfo(type="server_error", message="boom")


def test_error_event_then_response_failed_is_an_error() -> None:
    err = {"code": "insufficient_quota", "message": "You exceeded your current quota."}
    stream = sse(
        START,
        {"type": "error", "error": {**err, "type": "insufficient_quota", "param": None}},
        lifecycle("response.failed", body(status="failed", error=err)),
        names=False,
    )
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.ERROR
    assert turn.error is not None and turn.error.type == "insufficient_quota"


def test_incomplete_and_refusal_streams() -> None:
    details = {"incomplete_details": {"reason": "max_output_tokens"}}
    cut = body(message(text("In the"), status="incomplete"), status="incomplete", **details)
    turn = WIRE.parse_stream(sse(START, delta(0, "In the"), lifecycle("response.incomplete", cut)))
    assert (turn.ending, turn.text) == (Ending.TRUNCATED, "In the")
    refused = sse(
        START,
        added(0, message(status="in_progress")),
        {
            "type": "response.content_part.added",
            "item_id": MSG,
            "output_index": 0,
            "content_index": 0,
            "part": refusal(""),
        },
        delta(0, "I can't", "response.refusal.delta"),
    )
    turn = WIRE.parse_stream(refused)
    assert (turn.ending, turn.refusal, turn.text) == (Ending.TRUNCATED, "I can't", "")


def test_garbage_lines_are_ignored() -> None:
    acc = WIRE.stream()
    for data in ("not json", "{broken", "[1,2]", '"str"', '{"type": 5}', "{}"):
        assert acc.feed(None, data) == ""
    assert acc.finish().ending is Ending.TRUNCATED


def test_done_without_a_final_event_is_an_error() -> None:
    """A compatible server's ``[DONE]`` is a normal end: with no status anywhere, an error."""
    acc = WIRE.stream()
    assert acc.feed(None, "[DONE]") == ""
    turn = acc.finish()
    assert (turn.ending, turn.detail) == (Ending.ERROR, "no finish reason")


_EVENT_TYPES = [
    "response.created",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(_EVENT_TYPES)},
            optional={
                "output_index": st.integers(-1, 3) | _json,
                "item_id": st.sampled_from([MSG, "x"]) | _json,
                "content_index": st.integers(0, 2) | _json,
                "delta": st.text(max_size=5) | _json,
                "item": st.sampled_from([message(text("a")), function_call("f", "{")]) | _json,
                "response": st.just(body(message(text("b")))) | _json,
            },
        ),
        max_size=12,
    )
)
def test_any_event_sequence_gives_a_turn_or_a_wire_format_error(events: list[Any]) -> None:
    _shared.check_finish_or_wire_error(WIRE, (json.dumps(e) for e in events))


# -- render_request / parse_request ------------------------------------------------------------


def test_render_request_builds_the_responses_body() -> None:
    call = ToolCall.from_raw(
        id="call_1",
        name="weather",
        arguments_raw='{"city":"Oslo"}',
        provider_details={"item_id": "fc_1"},
    )
    request = ModelRequest(
        model="gpt-5",
        messages=(
            Message.system("Be brief."),
            Message.user("Weather in Oslo?"),
            Message(
                role="assistant",
                parts=(
                    ThinkingPart(
                        text="",
                        signature="enc",
                        redacted=True,
                        provider_details={"item_id": "rs_1"},
                    ),
                    call,
                ),
            ),
            Message.tool_results([ToolResult(call_id="call_1", name="weather", content="-3C")]),
        ),
        tools=(ToolSpec(name="weather", description="Current weather", strict=True),),
        settings=ModelSettings(
            max_tokens=256,
            temperature=0.2,
            stop=("END",),
            tool_choice="weather",
            extra_body={"store": False},
        ),
        stream=True,
    )
    assert WIRE.render_request(request) == {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Weather in Oslo?"}],
            },
            {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc"},
            {
                "id": "fc_1",
                "type": "function_call",
                "arguments": '{"city":"Oslo"}',
                "call_id": "call_1",
                "name": "weather",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "-3C"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "weather",
                "description": "Current weather",
                "parameters": {"type": "object", "properties": {}},
                "strict": True,
            }
        ],
        "tool_choice": {"type": "function", "name": "weather"},
        "max_output_tokens": 256,
        "temperature": 0.2,
        "stream": True,
        "store": False,
    }


def test_results_answer_each_call_with_its_own_output_item() -> None:
    calls = (
        _shared.custom_call("c1", "grammar", "x", {"type": "custom_tool_call", "item_id": "ctc_1"}),
        ToolCall.from_args(
            id="c2",
            name="local_shell",
            arguments={"type": "exec", "command": ["ls"], "env": {}},
            provider_details={"type": "local_shell_call", "item_id": "lsh_1"},
        ),
        ToolCall.from_args(
            id="c3",
            name="apply_patch",
            arguments={"type": "delete_file", "path": "a"},
            provider_details={"type": "apply_patch_call", "item_id": "apc_1"},
        ),
    )
    results = [
        ToolResult(call_id="c1", name="grammar", content="ok"),
        ToolResult(call_id="c2", name="local_shell", content="a.txt"),
        ToolResult(call_id="c3", name="apply_patch", content="no such file", is_error=True),
    ]
    request = ModelRequest(
        model="m",
        messages=(
            Message.user("go"),
            Message(role="assistant", parts=calls),
            Message.tool_results(results),
        ),
    )
    out = WIRE.render_request(request)["input"][-3:]
    assert out == [
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"},
        {"type": "local_shell_call_output", "call_id": "c2", "output": "a.txt"},
        {
            "type": "apply_patch_call_output",
            "call_id": "c3",
            "status": "failed",
            "output": "no such file",
        },
    ]
    assert WIRE.parse_request(WIRE.render_request(request)) == request


def test_parse_request_tolerates_easy_inputs_developer_role_and_unknown_items() -> None:
    request = WIRE.parse_request(
        {
            "model": "gpt-5",
            "input": [
                {"role": "developer", "content": "Rules."},
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "hi"},
                        {"type": "input_file", "file_id": "f"},
                    ],
                },
                {"type": "item_reference", "id": "msg_old"},
                {"role": "assistant", "content": "hello"},
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "c",
                    "output": [{"type": "input_text", "text": "42"}],
                },
                {"role": "critic", "content": "hm"},
                {"type": "mystery_item", "x": 1},
            ],
            "tools": [{"type": "web_search"}, {"type": "function", "name": "f"}],
            "reasoning": {"effort": "low"},
        }
    )
    assert [m.role for m in request.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    assert request.messages[0].text == "Rules."
    assert request.messages[2].tool_calls[0].name == "f"
    assert request.messages[3].results == (ToolResult(call_id="c", name="f", content="42"),)
    assert [t.name for t in request.tools] == ["f"]
    assert request.settings.extra_body == {"reasoning": {"effort": "low"}}
    assert WIRE.parse_request({"model": "m", "input": "just text"}).messages == (
        Message.user("just text"),
    )


_text = st.text(max_size=12)


@st.composite
def _assistant(draw: st.DrawFn, turn: int) -> Message:
    parts: list[Part] = []
    kinds = draw(
        st.lists(
            st.sampled_from(["text", "refusal", "thinking", "call", "custom"]),
            min_size=1,
            max_size=5,
        )
    )
    for i, kind in enumerate(kinds):
        n = f"{turn}{i:02d}"
        if kind == "text":
            details = draw(st.sampled_from([None, {"item_id": f"msg_{n}"}]))
            parts.append(TextPart(text=draw(_text), provider_details=details))
        elif kind == "refusal":
            parts.append(RefusalPart(text=draw(_text)))
        elif kind == "thinking":
            t, sig = draw(_text), draw(st.none() | _text)
            parts.append(
                ThinkingPart(
                    text=t,
                    signature=sig,
                    redacted=bool(sig) and not t,
                    provider_details={"item_id": f"rs_{n}"},
                )
            )
        elif kind == "call":
            details = draw(st.sampled_from([None, {"item_id": f"fc_{n}"}]))
            args = draw(st.sampled_from(['{"a":1}', "{}", '{"a": ', ""]))
            parts.append(
                ToolCall.from_raw(
                    id=f"call_{n}", name=draw(_text), arguments_raw=args, provider_details=details
                )
            )
        else:
            details = {"type": "custom_tool_call", "item_id": f"ctc_{n}"}
            parts.append(_shared.custom_call(f"call_{n}", "g", draw(_text), details))
    return Message(role="assistant", parts=tuple(parts))


_image_prompts = st.builds(
    lambda text: Message(
        role="user",
        parts=(TextPart(text=text), MediaPart(mime_type="image/png", data="iVBORw0=")),
    ),
    _text,
)
_requests = _shared.requests(
    "gpt-5",
    prompts=st.builds(Message.user, _text) | st.builds(Message.system, _text) | _image_prompts,
    assistants=_assistant,
    tools=st.builds(ToolSpec, name=_text, description=_text, strict=st.booleans()),
    extra_bodies=[{}, {"store": False}, {"reasoning": {"effort": "high"}}],
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(request=_requests)
def test_parse_request_inverts_render_request(request: ModelRequest) -> None:
    assert WIRE.parse_request(WIRE.render_request(request)) == request


# -- render_response through the official SDK --------------------------------------------------


turn_of = _shared.turn_of
CALL = ToolCall.from_raw(id="call_W1", name="weather", arguments_raw='{"city":"Lima"}')
TURNS = {
    **_shared.served_turns(turn_of),
    "complete": turn_of(
        Ending.COMPLETE,
        ThinkingPart(text="The user greets me.", signature="gAAAA-sig"),
        TextPart(text="Hello! How can I help you today?"),
        usage=Usage(input_tokens=10, output_tokens=20, reasoning_tokens=8),
    ),
    "tool_use": turn_of(Ending.TOOL_USE, TextPart(text="Checking."), CALL),
    "custom_and_shell": turn_of(
        Ending.TOOL_USE,
        _shared.custom_call("call_C", "math", "4 + 4", {"type": "custom_tool_call"}),
        ToolCall.from_args(
            id="call_L",
            name="local_shell",
            arguments={"type": "exec", "command": ["ls"], "env": {}},
            provider_details={"type": "local_shell_call"},
        ),
    ),
}
SDK_STATUS = {
    "complete": ("completed", None),
    "tool_use": ("completed", None),
    "truncated": ("incomplete", "max_output_tokens"),
    "truncated_call": ("incomplete", "max_output_tokens"),
    "filtered": ("incomplete", "content_filter"),
    "refused": ("completed", None),
    "empty": ("completed", None),
    "malformed": ("completed", None),
    "custom_and_shell": ("completed", None),
}


@pytest.mark.parametrize("name", sorted(TURNS))
def test_rendered_body_is_read_by_the_sdk_and_round_trips(name: str) -> None:
    turn = TURNS[name]
    answer = WIRE.render_response(turn)
    resp = sdk(answer).responses.create(model="gpt-5", input="hi")
    status, reason = SDK_STATUS[name]
    assert resp.status == status
    assert (resp.incomplete_details.reason if resp.incomplete_details else None) == reason
    assert resp.output_text == turn.text
    assert resp.id.startswith("resp_")
    sdk_calls = [
        o
        for o in resp.output
        if o.type in ("function_call", "custom_tool_call", "local_shell_call")
    ]
    assert [o.call_id for o in sdk_calls] == [c.id for c in turn.tool_calls]
    back = WIRE.parse_response(json.loads(answer.body))
    assert (back.ending, back.text, back.refusal) == (turn.ending, turn.text, turn.refusal)
    assert _calls(back) == _calls(turn)
    assert back.usage == turn.usage


@pytest.mark.parametrize("name", sorted(TURNS))
def test_rendered_stream_is_read_by_the_sdk_and_round_trips(name: str) -> None:
    turn = TURNS[name]
    answer = WIRE.render_response(turn, stream=True)
    assert answer.content_type == "text/event-stream"
    events = list(sdk(answer).responses.create(model="gpt-5", input="hi", stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created"
    final = events[-1]
    status, _ = SDK_STATUS[name]
    assert final.type == ("response.completed" if status == "completed" else "response.incomplete")
    streamed = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert streamed == turn.text
    if status == "completed":  # the SDK's helper raises on response.incomplete by design
        with sdk(answer).responses.stream(model="gpt-5", input="hi") as s:
            snapshot = s.get_final_response()
        assert snapshot.output_text == turn.text
    back = WIRE.parse_stream(answer.body)
    assert back == WIRE.parse_response(json.loads(WIRE.render_response(turn).body))
    assert (back.ending, back.text, back.refusal, _calls(back)) == (
        turn.ending,
        turn.text,
        turn.refusal,
        _calls(turn),
    )


def test_every_sse_event_names_its_data_type() -> None:
    answer = WIRE.render_response(TURNS["complete"], stream=True)
    blocks = answer.body.strip("\n").split("\n\n")
    for block in blocks:
        event_line, data_line = block.split("\n")
        name = event_line.removeprefix("event: ")
        assert json.loads(data_line.removeprefix("data: "))["type"] == name
    names = [b.split("\n")[0].removeprefix("event: ") for b in blocks]
    assert names[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
    ]
    assert names[-1] == "response.completed"


def test_refused_without_a_refusal_part_gets_one() -> None:
    answer = WIRE.render_response(turn_of(Ending.REFUSED, detail="Not allowed."))
    resp = sdk(answer).responses.create(model="m", input="x")
    (part,) = resp.output[0].content
    assert (part.type, part.refusal) == ("refusal", "Not allowed.")


def test_context_exceeded_is_a_400_the_sdk_raises() -> None:
    answer = WIRE.render_response(turn_of(Ending.CONTEXT_EXCEEDED), stream=True)
    with pytest.raises(openai.BadRequestError) as info:
        sdk(answer).responses.create(model="m", input="x")
    assert info.value.code == "context_length_exceeded"
    assert (
        WIRE.parse_error(answer.status, json.loads(answer.body)).ending is Ending.CONTEXT_EXCEEDED
    )


def test_rate_limit_error_has_status_body_and_retry_after() -> None:
    turn = turn_of(Ending.ERROR, error=ErrorInfo(status=429, message="Slow down", retry_after=7))
    answer = WIRE.render_response(turn)
    assert (answer.status, answer.headers["retry-after"]) == (429, "7")
    with pytest.raises(openai.RateLimitError) as info:
        sdk(answer).responses.create(model="m", input="x")
    assert info.value.message.endswith("Slow down")
    assert WIRE.parse_error(429, json.loads(answer.body)).ending is Ending.ERROR


def test_error_without_status_is_500_or_a_stream_that_breaks() -> None:
    turn = turn_of(
        Ending.ERROR, TextPart(text="Partial"), error=ErrorInfo(type="server_error", message="boom")
    )
    plain = WIRE.render_response(turn)
    with pytest.raises(openai.InternalServerError):
        sdk(plain).responses.create(model="m", input="x")
    streamed = WIRE.render_response(turn, stream=True)
    seen: list[str] = []
    with pytest.raises(openai.APIError, match="boom"):
        for event in sdk(streamed).responses.create(model="m", input="x", stream=True):
            seen.append(event.type)
    assert "response.output_text.delta" in seen
    back = WIRE.parse_stream(streamed.body)
    assert (back.ending, back.text) == (Ending.ERROR, "Partial")
    assert back.error is not None and back.error.message == "boom"


def test_paused_and_malformed_without_a_bad_call_are_unsupported() -> None:
    with pytest.raises(UnsupportedTurn, match="paused"):
        WIRE.render_response(turn_of(Ending.PAUSED, TextPart(text="searching")))
    with pytest.raises(UnsupportedTurn, match="malformed_tool_call"):
        WIRE.render_response(turn_of(Ending.MALFORMED_TOOL_CALL, CALL))


def test_provider_ids_and_item_ids_round_trip() -> None:
    parsed = WIRE.parse_response(
        body(
            reasoning("why", encrypted="enc"),
            message(
                text("a", annotations=[{"type": "url_citation", "url": "https://x"}]),
                refusal("but not that"),
                phase="final_answer",
            ),
            function_call("f", "{}", "call_z"),
        )
    )
    rendered = json.loads(WIRE.render_response(parsed).body)
    assert [i["id"] for i in rendered["output"]] == ["rs_68af1c2e9d2c81a0", MSG, "fc_call_z"]
    again = WIRE.parse_response(rendered)
    assert again.message == parsed.message
    assert again.response_id == RID
    sent = WIRE.render_request(ModelRequest(model="m", messages=(parsed.message,)))["input"]
    assert [i.get("id") for i in sent] == ["rs_68af1c2e9d2c81a0", MSG, "fc_call_z"]
    assert sent[1]["phase"] == "final_answer"


def test_classify_reads_this_api_by_name() -> None:
    turn = classify("openai-responses", body(message(text("hi"))))
    assert turn.ending is Ending.COMPLETE
