"""anthropic-messages: parsing, streams, errors, requests, and rendering checked by the real SDK.

Fixtures are written from Anthropic's documented wire shapes (Messages API reference, streaming
guide, errors page, thinking docs), not copied from the recorded corpus.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest
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
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)
from donegate.models._rules import error_turn, make_turn
from donegate.models.anthropic_messages import WIRE, AnthropicMessages
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec, WireResponse

API = "anthropic-messages"


# -- builders --------------------------------------------------------------------------------


def body(
    content: list[dict[str, Any]], stop_reason: Any = "end_turn", **extra: Any
) -> dict[str, Any]:
    """A non-streamed Messages API response body."""
    out: dict[str, Any] = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 6},
    }
    out.update(extra)
    return out


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(call_id: str = "toolu_01A09q90qw90lq917835lq9", **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "get_weather", "input": args}


def sse(*events: tuple[str, dict[str, Any] | str]) -> str:
    """SSE text as the API frames it: an ``event:`` line and a ``data:`` line per event."""
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append(f"event: {name}\ndata: {payload}\n\n")
    return "".join(out)


def message_start(**usage: int) -> tuple[str, dict[str, Any]]:
    message = body([], None)
    message["usage"] = {"input_tokens": 25, "output_tokens": 1, **usage}
    return "message_start", {"type": "message_start", "message": message}


def block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_start", {
        "type": "content_block_start",
        "index": index,
        "content_block": block,
    }


def delta(index: int, **d: Any) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}


def block_stop(index: int) -> tuple[str, dict[str, Any]]:
    return "content_block_stop", {"type": "content_block_stop", "index": index}


def message_delta(
    stop_reason: str, output_tokens: int = 15, **more: Any
) -> tuple[str, dict[str, Any]]:
    d = {"stop_reason": stop_reason, "stop_sequence": None, **more}
    return "message_delta", {
        "type": "message_delta",
        "delta": d,
        "usage": {"output_tokens": output_tokens},
    }


MESSAGE_STOP = ("message_stop", {"type": "message_stop"})
PING = ("ping", {"type": "ping"})


def turn_of(ending: Ending, parts: list[Part], **kw: Any) -> Turn:
    return Turn(message=Message(role="assistant", parts=tuple(parts)), ending=ending, api=API, **kw)


# -- the protocol ----------------------------------------------------------------------------


def test_wire_implements_the_protocol_and_is_registered() -> None:
    _shared.check_registered(WIRE, API)


# -- parse_response: stop reasons ------------------------------------------------------------


@pytest.mark.parametrize(
    ("stop_reason", "content", "ending"),
    [
        ("end_turn", [text("Hello!")], Ending.COMPLETE),
        ("stop_sequence", [text("4200 + 42 = ")], Ending.COMPLETE),
        ("tool_use", [text("Checking."), tool_use(city="Paris")], Ending.TOOL_USE),
        ("max_tokens", [text("Once upon")], Ending.TRUNCATED),
        ("model_context_window_exceeded", [text("The answer is")], Ending.CONTEXT_EXCEEDED),
        (
            "pause_turn",
            [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}],
            Ending.PAUSED,
        ),
        ("refusal", [], Ending.REFUSED),
        (None, [text("Hi")], Ending.ERROR),
        ("something_new", [text("Hi")], Ending.ERROR),
    ],
)
def test_every_stop_reason_maps_to_its_ending(
    stop_reason: Any, content: list[Any], ending: Ending
) -> None:
    turn = WIRE.parse_response(body(content, stop_reason))
    assert turn.ending is ending
    assert turn.raw_reason == stop_reason
    assert turn.api == API
    assert turn.model == "claude-sonnet-4-5-20250929"
    assert turn.response_id == "msg_01XFDUDYJgAACzvnptvVoYEL"


def test_unknown_and_missing_stop_reasons_say_why() -> None:
    assert (
        WIRE.parse_response(body([text("x")], "brand_new")).detail
        == "unknown stop_reason 'brand_new'"
    )
    assert WIRE.parse_response(body([text("x")], None)).detail == "no finish reason"


def test_missing_stop_reason_beside_a_tool_call_is_still_an_error() -> None:
    """One rule for "no stop reason": a call does not prove the turn finished."""
    turn = WIRE.parse_response(body([tool_use(city="Oslo")], None))
    assert (turn.ending, turn.detail) == (Ending.ERROR, "no finish reason")
    assert turn.raw_reason is None
    assert len(turn.tool_calls) == 1


def test_refusal_keeps_category_and_explanation() -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "This could enable malware."}
    turn = WIRE.parse_response(body([text("Partial ")], "refusal", stop_details=details))
    assert turn.ending is Ending.REFUSED
    assert turn.detail == "cyber"
    assert turn.refusal == "This could enable malware."
    assert turn.text == "Partial "


def test_refusal_with_null_category() -> None:
    details = {"type": "refusal", "category": None, "explanation": None}
    turn = WIRE.parse_response(body([], "refusal", stop_details=details))
    assert (turn.ending, turn.detail, turn.refusal) == (Ending.REFUSED, None, "")


def test_refusal_without_stop_details() -> None:
    turn = WIRE.parse_response(body([], "refusal"))
    assert (turn.ending, turn.detail, turn.refusal) == (Ending.REFUSED, None, None)


# -- parse_response: content rules -------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        [],
        [text("")],
        [text("  \n\t")],
        [{"type": "thinking", "thinking": "Let me think.", "signature": "EqQB"}],
        [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}],
        [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "x"},
            }
        ],
    ],
)
def test_no_visible_output_is_empty(content: list[Any]) -> None:
    for reason in ("end_turn", "stop_sequence"):
        turn = WIRE.parse_response(body(content, reason))
        assert turn.ending is Ending.EMPTY, (content, reason)


def test_text_with_a_tool_call_is_tool_use_even_when_end_turn() -> None:
    turn = WIRE.parse_response(body([text("Sure."), tool_use(city="Rome")], "end_turn"))
    assert turn.ending is Ending.TOOL_USE
    assert turn.tool_calls[0].arguments == {"city": "Rome"}


def test_unparseable_arguments_from_a_proxy_are_malformed() -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": '{"city": "Par'}
    turn = WIRE.parse_response(body([block], "tool_use"))
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert turn.detail is not None and turn.detail.startswith(
        "get_weather: arguments are not valid JSON"
    )


def test_max_tokens_mid_tool_call_keeps_the_call() -> None:
    turn = WIRE.parse_response(body([text("Let me check."), tool_use(city="Pa")], "max_tokens"))
    assert turn.ending is Ending.TRUNCATED
    assert [c.name for c in turn.tool_calls] == ["get_weather"]


def test_parallel_tool_calls_keep_order_and_ids() -> None:
    content = [text("Rolling 3 dice."), *(tool_use(f"toolu_{i}") for i in range(3))]
    turn = WIRE.parse_response(body(content, "tool_use"))
    assert [c.id for c in turn.tool_calls] == ["toolu_0", "toolu_1", "toolu_2"]
    assert all(c.arguments == {} and c.arguments_raw == "{}" for c in turn.tool_calls)


def test_tool_call_extra_fields_are_kept() -> None:
    block = {**tool_use(city="Lima"), "caller": {"type": "direct"}}
    (call,) = WIRE.parse_response(body([block], "tool_use")).tool_calls
    assert call.provider_details == {"caller": {"type": "direct"}}


# -- parse_response: blocks ------------------------------------------------------------------


def test_text_citations_are_kept() -> None:
    citation = {
        "type": "web_search_result_location",
        "url": "https://example.com",
        "title": "Example",
        "encrypted_index": "Eo8BCioIAhgBIiQ",
        "cited_text": "Paris is the capital of France.",
    }
    block = {"type": "text", "text": "Paris.", "citations": [citation]}
    (part,) = WIRE.parse_response(body([block])).message.parts
    assert isinstance(part, TextPart)
    assert part.provider_details == {"citations": [citation]}


def test_null_citations_are_not_details() -> None:
    (part,) = WIRE.parse_response(
        body([{"type": "text", "text": "x", "citations": None}])
    ).message.parts
    assert isinstance(part, TextPart) and part.provider_details is None


def test_thinking_and_redacted_thinking() -> None:
    content = [
        {"type": "thinking", "thinking": "Step 1...", "signature": "WaUjzkypQ2mUEVM36O2Txu"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
        text("4"),
    ]
    turn = WIRE.parse_response(body(content))
    thinking, redacted = turn.thinking
    assert (thinking.text, thinking.signature, thinking.redacted) == (
        "Step 1...",
        "WaUjzkypQ2mUEVM36O2Txu",
        False,
    )
    assert (redacted.text, redacted.signature, redacted.redacted) == (
        "",
        "EmwKAhgBEgy3va3pzix",
        True,
    )
    assert turn.text == "4"
    assert not thinking.progress


UPDATES = [
    {"type": "thinking", "thinking": "", "signature": "EqMBCkYICxIM"},
    {
        "type": "thinking",
        "thinking": "Confirmed the retry path never refreshes the token.",
        "signature": "Es8CCkYICxIM",
    },
    tool_use(city="Paris"),
]


def test_progress_updates_under_display_updates() -> None:
    turn = AnthropicMessages(thinking_display="updates").parse_response(body(UPDATES, "tool_use"))
    reasoning, update = turn.thinking
    assert not reasoning.progress
    assert update.progress and update.text.startswith("Confirmed")
    assert turn.ending is Ending.TOOL_USE
    assert turn.text == ""


def test_without_display_updates_thinking_is_not_progress() -> None:
    assert not any(p.progress for p in WIRE.parse_response(body(UPDATES, "tool_use")).thinking)


def test_an_explicit_progress_marker_is_honoured_and_kept() -> None:
    block = {
        "type": "thinking",
        "thinking": "Now editing auth.py.",
        "signature": "s",
        "display": "updates",
    }
    (part,) = WIRE.parse_response(body([block])).thinking
    assert part.progress
    assert part.provider_details == {"display": "updates"}


def test_server_tool_blocks_are_server_parts_not_calls() -> None:
    content = [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01",
            "name": "web_search",
            "input": {"query": "eth"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01",
            "content": [
                {
                    "type": "web_search_result",
                    "title": "T",
                    "url": "https://e.x",
                    "encrypted_content": "E",
                }
            ],
        },
        {
            "type": "code_execution_tool_result",
            "tool_use_id": "srvtoolu_02",
            "content": {
                "type": "code_execution_result",
                "stdout": "37170\n",
                "stderr": "",
                "return_code": 0,
                "content": [],
            },
        },
        text("ETH was $3,000."),
    ]
    turn = WIRE.parse_response(body(content))
    assert turn.ending is Ending.COMPLETE
    assert turn.tool_calls == ()
    use, search, code = turn.message.parts[:3]
    assert isinstance(use, ServerToolPart) and (use.name, use.id) == ("web_search", "srvtoolu_01")
    assert isinstance(search, ServerToolPart) and (search.name, search.id) == (
        "web_search_tool_result",
        "srvtoolu_01",
    )
    assert isinstance(code, ServerToolPart) and code.data is content[2]


def test_unknown_block_types_are_kept_as_server_parts() -> None:
    block = {"type": "hologram", "payload": [1, 2]}
    (part,) = WIRE.parse_response(body([block, text("ok")])).message.parts[:1]
    assert isinstance(part, ServerToolPart) and part.name == "hologram" and part.data == block


def test_usage_counts_cache_and_thinking_tokens() -> None:
    usage = {
        "input_tokens": 18,
        "cache_creation_input_tokens": 1031,
        "cache_read_input_tokens": 200,
        "output_tokens": 90,
        "output_tokens_details": {"thinking_tokens": 40},
        "service_tier": "standard",
    }
    turn = WIRE.parse_response(body([text("x")], usage=usage))
    assert turn.usage == Usage(
        input_tokens=1249,
        output_tokens=90,
        cache_read_tokens=200,
        cache_write_tokens=1031,
        reasoning_tokens=40,
    )


def test_null_usage_counts_are_zero() -> None:
    turn = WIRE.parse_response(
        body(
            [text("x")],
            usage={"input_tokens": 3, "cache_read_input_tokens": None, "output_tokens": 2},
        )
    )
    assert turn.usage == Usage(input_tokens=3, output_tokens=2)


def test_a_200_error_envelope_is_an_error_turn() -> None:
    err = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    turn = WIRE.parse_response(err)
    assert turn.ending is Ending.ERROR
    assert turn.error == ErrorInfo(status=None, type="overloaded_error", message="Overloaded")
    assert turn.raw_reason == "overloaded_error"


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ({"content": "hello", "stop_reason": "end_turn"}, "content"),
        ({"content": ["hello"], "stop_reason": "end_turn"}, "content[0]"),
        ({"content": [{"type": "text", "text": 5}]}, "content[0].text"),
        ({"content": [{"type": "tool_use", "name": "f", "input": {}}]}, "content[0].id"),
        (
            {"content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]},
            "content[0].input",
        ),
        ({"content": [{"type": "thinking", "thinking": 1}]}, "content[0].thinking"),
        ({"content": [], "usage": {"input_tokens": "7"}}, "usage.input_tokens"),
        ({"content": [], "usage": []}, "usage"),
        ({"content": [], "model": 4}, "model"),
    ],
)
def test_malformed_bodies_raise_wire_format_errors_naming_the_field(
    bad: dict[str, Any], path: str
) -> None:
    _shared.check_malformed(WIRE, bad, path)


def test_a_non_object_body_raises() -> None:
    for bad in (None, [], "msg", 3):
        _shared.check_not_an_object(WIRE, bad)


_json = _shared.json_values(allow_nan=False)
_block_values = st.sampled_from(
    [
        text("hi"),
        tool_use(city="x"),
        {"type": "thinking", "thinking": "t", "signature": "s"},
        {"type": "redacted_thinking", "data": "d"},
    ]
)
_mutated = _shared.with_any_field(
    st.builds(
        body,
        st.lists(_block_values | _json, max_size=4),
        st.sampled_from(["end_turn", "tool_use", "max_tokens", "refusal", None, 3]),
    ),
    ["usage", "model", "id", "stop_details", "content", "type", "error", "extra"],
    _json,
)


test_arbitrary_bodies_give_a_turn_or_a_wire_format_error = _shared.any_body_test(
    WIRE, st.one_of(_json, _mutated)
)


# -- parse_error -----------------------------------------------------------------------------


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }


@pytest.mark.parametrize(
    ("status", "error_body", "ending", "kind"),
    [
        (
            429,
            anthropic_error(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            ),
            Ending.ERROR,
            "rate_limit_error",
        ),
        (500, anthropic_error("api_error", "Internal server error"), Ending.ERROR, "api_error"),
        (529, anthropic_error("overloaded_error", "Overloaded"), Ending.ERROR, "overloaded_error"),
        (
            400,
            anthropic_error("invalid_request_error", "messages: roles must alternate"),
            Ending.ERROR,
            "invalid_request_error",
        ),
        (
            400,
            anthropic_error(
                "invalid_request_error", "prompt is too long: 200021 tokens > 200000 maximum"
            ),
            Ending.CONTEXT_EXCEEDED,
            "invalid_request_error",
        ),
        (
            400,
            anthropic_error(
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000",
            ),
            Ending.CONTEXT_EXCEEDED,
            "invalid_request_error",
        ),
        (
            400,
            anthropic_error("invalid_request_error", "Output blocked by content filtering policy"),
            Ending.FILTERED,
            "invalid_request_error",
        ),
        (400, {"message": "Input is too long for requested model."}, Ending.CONTEXT_EXCEEDED, None),
        (
            429,
            [{"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}],
            Ending.ERROR,
            "RESOURCE_EXHAUSTED",
        ),
        (502, "<html><body>Bad gateway</body></html>", Ending.ERROR, None),
        (503, None, Ending.ERROR, None),
    ],
)
def test_error_bodies(status: int, error_body: Any, ending: Ending, kind: str | None) -> None:
    turn = WIRE.parse_error(status, error_body)
    _shared.check_error_turn(turn, status=status, ending=ending, type=kind)
    assert turn.tool_calls == () and turn.text == ""


def test_retry_after_and_message_are_kept() -> None:
    turn = WIRE.parse_error(429, anthropic_error("rate_limit_error", "slow down"), retry_after=7.0)
    assert turn.error == ErrorInfo(
        status=429, type="rate_limit_error", message="slow down", retry_after=7.0
    )
    assert turn.detail == "slow down"


def test_error_text_bodies_are_read_as_json_when_they_are() -> None:
    raw = json.dumps(anthropic_error("overloaded_error", "Overloaded"))
    assert WIRE.parse_error(529, raw).error == ErrorInfo(
        status=529, type="overloaded_error", message="Overloaded"
    )


test_parse_error_never_raises = _shared.any_error_body_test(
    WIRE, st.one_of(_json, st.binary(max_size=20))
)


# -- streams ---------------------------------------------------------------------------------


TEXT_STREAM = sse(
    message_start(),
    block_start(0, {"type": "text", "text": ""}),
    PING,
    delta(0, type="text_delta", text="Hello"),
    delta(0, type="text_delta", text=" world"),
    block_stop(0),
    message_delta("end_turn", 15),
    MESSAGE_STOP,
)


def test_text_stream() -> None:
    turn = WIRE.parse_stream(TEXT_STREAM)
    assert (turn.ending, turn.text, turn.raw_reason) == (Ending.COMPLETE, "Hello world", "end_turn")
    assert turn.usage == Usage(input_tokens=25, output_tokens=15)
    assert turn.response_id == "msg_01XFDUDYJgAACzvnptvVoYEL"


def test_feed_returns_visible_text_deltas_only() -> None:
    acc = WIRE.stream()
    got = []
    stream = sse(
        message_start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="secret"),
        block_start(1, {"type": "text", "text": ""}),
        delta(1, type="text_delta", text="Hi"),
    )
    from donegate.models._sse import iter_sse

    for event, data in iter_sse(stream):
        got.append(acc.feed(event, data))
    assert [g for g in got if g] == ["Hi"]


TOOL_STREAM = sse(
    message_start(),
    block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
    delta(0, type="thinking_delta", thinking="The user wants "),
    delta(0, type="thinking_delta", thinking="the weather."),
    delta(
        0, type="signature_delta", signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    ),
    block_stop(0),
    block_start(1, {"type": "text", "text": ""}),
    delta(1, type="text_delta", text="Checking."),
    block_stop(1),
    block_start(
        2,
        {
            "type": "tool_use",
            "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            "name": "get_weather",
            "input": {},
        },
    ),
    delta(2, type="input_json_delta", partial_json=""),
    delta(2, type="input_json_delta", partial_json='{"location": "San Fra'),
    delta(2, type="input_json_delta", partial_json='ncisco, CA", "unit": "celsius"}'),
    block_stop(2),
    message_delta("tool_use", 89),
    MESSAGE_STOP,
)


def test_tool_call_stream_joins_fragments_per_block() -> None:
    turn = WIRE.parse_stream(TOOL_STREAM)
    assert turn.ending is Ending.TOOL_USE
    (call,) = turn.tool_calls
    assert call.id == "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
    assert call.arguments == {"location": "San Francisco, CA", "unit": "celsius"}
    (thinking,) = turn.thinking
    assert thinking.text == "The user wants the weather."
    assert thinking.signature == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    assert turn.text == "Checking."


def test_stream_gives_the_same_turn_as_the_body() -> None:
    whole = body(
        [
            {
                "type": "thinking",
                "thinking": "The user wants the weather.",
                "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
            },
            text("Checking."),
            tool_use(
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6", location="San Francisco, CA", unit="celsius"
            ),
        ],
        "tool_use",
        usage={"input_tokens": 25, "output_tokens": 89},
    )
    streamed, parsed = WIRE.parse_stream(TOOL_STREAM), WIRE.parse_response(whole)
    assert streamed.ending == parsed.ending
    assert streamed.usage == parsed.usage
    assert [c.arguments for c in streamed.tool_calls] == [c.arguments for c in parsed.tool_calls]
    assert streamed.thinking == parsed.thinking
    assert streamed.text == parsed.text


def test_a_stream_without_its_final_event_is_truncated() -> None:
    cut = sse(
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="Here are"),
    )
    _shared.check_cut_off(WIRE, cut, text="Here are")


def test_a_stream_with_message_delta_but_no_message_stop_is_truncated() -> None:
    turn = WIRE.parse_stream(TEXT_STREAM.rsplit("event: message_stop", 1)[0])
    assert turn.ending is Ending.TRUNCATED
    assert turn.raw_reason == "end_turn"


def test_an_empty_stream_is_truncated_not_complete() -> None:
    assert WIRE.parse_stream("").ending is Ending.TRUNCATED


def test_an_error_event_keeps_the_partial_text() -> None:
    stream = sse(
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        PING,
        delta(0, type="text_delta", text="Counting: 1"),
        (
            "error",
            {
                "type": "error",
                "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
            },
        ),
    )
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.ERROR
    assert turn.text == "Counting: 1"
    assert turn.error == ErrorInfo(status=None, type="overloaded_error", message="Overloaded")
    assert turn.response_id == "msg_01XFDUDYJgAACzvnptvVoYEL"


def test_max_tokens_mid_tool_call_keeps_the_partial_call() -> None:
    stream = sse(
        message_start(),
        block_start(0, {"type": "tool_use", "id": "toolu_01", "name": "write_file", "input": {}}),
        delta(0, type="input_json_delta", partial_json='{"path": "a.py", "content": "def f('),
        block_stop(0),
        message_delta("max_tokens", 4096),
        MESSAGE_STOP,
    )
    turn = WIRE.parse_stream(stream)
    assert turn.ending is Ending.TRUNCATED
    (call,) = turn.tool_calls
    assert call.arguments is None and call.parse_error is not None
    assert call.arguments_raw == '{"path": "a.py", "content": "def f('


def test_unparseable_streamed_arguments_with_tool_use_are_malformed() -> None:
    stream = sse(
        message_start(),
        block_start(0, {"type": "tool_use", "id": "toolu_01", "name": "f", "input": {}}),
        delta(0, type="input_json_delta", partial_json="{oops"),
        block_stop(0),
        message_delta("tool_use"),
        MESSAGE_STOP,
    )
    assert WIRE.parse_stream(stream).ending is Ending.MALFORMED_TOOL_CALL


def test_stream_refusal_and_pause() -> None:
    refusal = sse(
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="Sure, here"),
        block_stop(0),
        message_delta(
            "refusal",
            stop_details={
                "type": "refusal",
                "category": "reasoning_extraction",
                "explanation": None,
            },
        ),
        MESSAGE_STOP,
    )
    turn = WIRE.parse_stream(refusal)
    assert (turn.ending, turn.detail, turn.text) == (
        Ending.REFUSED,
        "reasoning_extraction",
        "Sure, here",
    )
    pause = sse(
        message_start(),
        block_start(
            0, {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}}
        ),
        delta(0, type="input_json_delta", partial_json='{"query": "weather"}'),
        block_stop(0),
        message_delta("pause_turn"),
        MESSAGE_STOP,
    )
    turn = WIRE.parse_stream(pause)
    assert turn.ending is Ending.PAUSED
    (part,) = turn.message.parts
    assert isinstance(part, ServerToolPart) and part.data["input"] == {"query": "weather"}


def test_citations_and_redacted_thinking_in_streams() -> None:
    citation = {
        "type": "char_location",
        "cited_text": "Paris",
        "document_index": 0,
        "start_char_index": 0,
        "end_char_index": 5,
    }
    stream = sse(
        message_start(),
        block_start(0, {"type": "redacted_thinking", "data": "EmwKAhgB"}),
        block_stop(0),
        block_start(1, {"type": "text", "text": "", "citations": []}),
        delta(1, type="citations_delta", citation=citation),
        delta(1, type="text_delta", text="Paris"),
        block_stop(1),
        message_delta("end_turn"),
        MESSAGE_STOP,
    )
    turn = WIRE.parse_stream(stream)
    redacted, cited = turn.message.parts
    assert (
        isinstance(redacted, ThinkingPart)
        and redacted.redacted
        and redacted.signature == "EmwKAhgB"
    )
    assert isinstance(cited, TextPart) and cited.provider_details == {"citations": [citation]}


def test_stream_usage_is_cumulative() -> None:
    stream = sse(
        message_start(cache_read_input_tokens=100),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="x"),
        block_stop(0),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"input_tokens": 30, "output_tokens": 9},
            },
        ),
        MESSAGE_STOP,
    )
    assert WIRE.parse_stream(stream).usage == Usage(
        input_tokens=130, output_tokens=9, cache_read_tokens=100
    )


def test_progress_updates_in_streams() -> None:
    stream = sse(
        message_start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, type="thinking_delta", thinking="Found the bug; fixing it."),
        delta(0, type="signature_delta", signature="Es8C"),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": "toolu_1", "name": "edit", "input": {}}),
        delta(1, type="input_json_delta", partial_json="{}"),
        block_stop(1),
        message_delta("tool_use"),
        MESSAGE_STOP,
    )
    (update,) = AnthropicMessages(thinking_display="updates").parse_stream(stream).thinking
    assert update.progress and update.signature == "Es8C"


test_garbage_events_never_crash_the_accumulator = _shared.any_events_test(
    WIRE,
    st.lists(
        st.tuples(
            st.sampled_from([None, "message_start", "content_block_delta", "error", "x"]),
            st.one_of(_json.map(json.dumps), st.text(max_size=10)),
        ),
        max_size=12,
    ),
)


def test_garbage_lines_between_events_are_ignored() -> None:
    noisy = TEXT_STREAM.replace("event: ping", "data: [DONE]\n\ndata: not json\n\nevent: ping")
    assert WIRE.parse_stream(noisy).ending is Ending.COMPLETE


# -- render_request / parse_request ------------------------------------------------------------


def call(call_id: str, **args: Any) -> ToolCall:
    return ToolCall.from_args(id=call_id, name="get_weather", arguments=args)


TRANSCRIPT = (
    Message.system("You are terse."),
    Message.user("Weather in Paris and Rome?"),
    Message(
        role="assistant",
        parts=(
            ThinkingPart(text="Two cities.", signature="EqQBCgIYAhIM"),
            ThinkingPart(text="", signature="EmwKAhgBEgy3", redacted=True),
            TextPart(text="Checking both."),
            call("toolu_01", city="Paris"),
            call("toolu_02", city="Rome"),
        ),
    ),
    Message.tool_results(
        [
            ToolResult(call_id="toolu_01", name="get_weather", content="18C"),
            ToolResult(call_id="toolu_02", name="get_weather", content="timeout", is_error=True),
        ]
    ),
    Message.user("Also, keep it short."),
    Message(
        role="assistant",
        parts=(
            ServerToolPart(
                name="web_search",
                id="srvtoolu_01",
                data={
                    "type": "server_tool_use",
                    "id": "srvtoolu_01",
                    "name": "web_search",
                    "input": {"query": "Rome weather"},
                },
            ),
            ServerToolPart(
                name="web_search_tool_result",
                id="srvtoolu_01",
                data={
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_01",
                    "content": [],
                },
            ),
            TextPart(
                text="Paris 18C; Rome unknown.",
                provider_details={"citations": [{"type": "char_location", "cited_text": "x"}]},
            ),
        ),
    ),
    Message(
        role="user",
        parts=(TextPart(text="Thanks"), MediaPart(mime_type="image/png", data="iVBORw0KGgo=")),
    ),
)

REQUEST = ModelRequest(
    model="claude-sonnet-4-5",
    messages=TRANSCRIPT,
    tools=(
        ToolSpec(
            name="get_weather",
            description="Current weather.",
            parameters={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        ),
    ),
    settings=ModelSettings(
        temperature=0.2,
        stop=("END",),
        tool_choice="auto",
        extra_body={"thinking": {"type": "adaptive"}, "metadata": {"user_id": "u1"}},
    ),
    stream=True,
)


def test_render_request_builds_the_documented_body() -> None:
    got = WIRE.render_request(REQUEST)
    assert got["model"] == "claude-sonnet-4-5"
    assert got["max_tokens"] == 4096
    assert got["system"] == "You are terse."
    assert [m["role"] for m in got["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert got["messages"][0] == {"role": "user", "content": "Weather in Paris and Rome?"}
    assistant = got["messages"][1]["content"]
    assert assistant[0] == {
        "type": "thinking",
        "thinking": "Two cities.",
        "signature": "EqQBCgIYAhIM",
    }
    assert assistant[1] == {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"}
    assert assistant[3] == {
        "type": "tool_use",
        "id": "toolu_01",
        "name": "get_weather",
        "input": {"city": "Paris"},
    }
    # tool results and the next user text merge into one user turn, results first
    assert got["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18C"},
        {"type": "tool_result", "tool_use_id": "toolu_02", "content": "timeout", "is_error": True},
        {"type": "text", "text": "Also, keep it short."},
    ]
    assert got["messages"][3]["content"][0] == TRANSCRIPT[5].parts[0].data  # type: ignore[union-attr]
    assert got["messages"][3]["content"][2]["citations"] == [
        {"type": "char_location", "cited_text": "x"}
    ]
    assert got["messages"][4]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    assert got["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather.",
            "input_schema": REQUEST.tools[0].parameters,
        }
    ]
    assert got["tool_choice"] == {"type": "auto"}
    assert got["stop_sequences"] == ["END"]
    assert got["temperature"] == 0.2
    assert got["stream"] is True
    assert got["thinking"] == {"type": "adaptive"}


def test_round_trip_gives_back_the_transcript() -> None:
    back = WIRE.parse_request(WIRE.render_request(REQUEST))
    assert back.messages == TRANSCRIPT
    assert back.tools == REQUEST.tools
    assert back.stream is True
    assert back.settings.stop == ("END",)
    assert back.settings.tool_choice == "auto"
    assert back.settings.extra_body == REQUEST.settings.extra_body


@pytest.mark.parametrize(
    ("choice", "parallel", "wire"),
    [
        ("auto", None, {"type": "auto"}),
        ("required", None, {"type": "any"}),
        ("none", None, {"type": "none"}),
        ("get_weather", None, {"type": "tool", "name": "get_weather"}),
        ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
    ],
)
def test_tool_choice(choice: str | None, parallel: bool | None, wire: dict[str, Any]) -> None:
    request = ModelRequest(
        model="m",
        messages=(Message.user("hi"),),
        tools=(ToolSpec(name="get_weather"),),
        settings=ModelSettings(tool_choice=choice, parallel_tool_calls=parallel),
    )
    rendered = WIRE.render_request(request)
    assert rendered["tool_choice"] == wire
    settings_back = WIRE.parse_request(rendered).settings
    assert (settings_back.tool_choice, settings_back.parallel_tool_calls) == (choice, parallel)


def test_system_blocks_max_tokens_and_unsigned_thinking() -> None:
    cached = TextPart(
        text="Long policy.", provider_details={"cache_control": {"type": "ephemeral"}}
    )
    request = ModelRequest(
        model="m",
        messages=(
            Message(role="system", parts=(cached,)),
            Message.user("hi"),
            Message(
                role="assistant",
                parts=(ThinkingPart(text="from another provider"), TextPart(text="Hello")),
            ),
        ),
        settings=ModelSettings(max_tokens=100),
    )
    got = WIRE.render_request(request)
    assert got["system"] == [
        {"type": "text", "text": "Long policy.", "cache_control": {"type": "ephemeral"}}
    ]
    assert got["max_tokens"] == 100
    assert got["messages"][1]["content"] == [{"type": "text", "text": "Hello"}]
    assert "stream" not in got and "tools" not in got and "tool_choice" not in got
    assert WIRE.parse_request(got).messages[0] == request.messages[0]


def test_parse_request_tolerates_unknown_roles_fields_and_server_tools() -> None:
    got = WIRE.parse_request(
        {
            "model": "m",
            "max_tokens": 1024,
            "top_k": 5,
            "messages": [
                {"role": "developer", "content": "Be brief."},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "hi"}, {"type": "mystery"}, "junk"],
                },
                {"role": "assistant", "content": "Hello"},
                "junk",
            ],
            "tools": [
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
                {"name": "f", "input_schema": {"type": "object"}},
            ],
        }
    )
    assert got.messages == (
        Message.system("Be brief."),
        Message.user("hi"),
        Message(role="assistant", parts=(TextPart(text="Hello"),)),
    )
    assert [t.name for t in got.tools] == ["f"]
    assert got.settings.max_tokens == 1024
    assert got.settings.extra_body == {"top_k": 5}


def test_parse_request_marks_progress_when_the_request_asked_for_updates() -> None:
    got = WIRE.parse_request(
        {
            "model": "m",
            "thinking": {"type": "adaptive", "display": "updates"},
            "messages": [{"role": "assistant", "content": UPDATES}],
        }
    )
    assert [p.progress for p in got.messages[0].parts if isinstance(p, ThinkingPart)] == [
        False,
        True,
    ]


def test_parse_request_rejects_non_bodies() -> None:
    with pytest.raises(WireFormatError):
        WIRE.parse_request({"messages": "hi"})


test_round_trip_property = _shared.round_trip_test(
    WIRE,
    _shared.transcripts(
        _shared.call_ids("toolu_"), thinking=_shared.SIGNED_THINKING, result_errors=True
    ),
)


# -- render_response, checked by the official SDK ---------------------------------------------


def sdk(response: WireResponse, seen: list[httpx2.Request] | None = None) -> anthropic.Anthropic:
    """An SDK client whose every request is answered with `response`."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        if seen is not None:
            seen.append(request)
        headers = {"content-type": response.content_type, **response.headers}
        return httpx2.Response(response.status, content=response.body.encode(), headers=headers)

    return anthropic.Anthropic(
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


ASK: dict[str, Any] = {
    "model": "claude-opus-5-5",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "hi"}],
}

THINK = ThinkingPart(text="Thinking it over.", signature="EqQBCgIYAhIM")
SEARCH = ServerToolPart(
    name="web_search",
    id="srvtoolu_01",
    data={
        "type": "server_tool_use",
        "id": "srvtoolu_01",
        "name": "web_search",
        "input": {"query": "news"},
    },
)


def turns() -> Iterator[tuple[str, Turn, str]]:
    """One scripted turn per ending the API can express in a 200 answer, with its stop_reason."""
    yield (
        "complete",
        make_turn(
            api=API,
            signal=Ending.COMPLETE,
            parts=[THINK, TextPart(text="Hello there, how can I help?")],
            raw_reason="end_turn",
            usage=Usage(input_tokens=30, output_tokens=12, cache_read_tokens=10),
        ),
        "end_turn",
    )
    yield (
        "empty",
        make_turn(api=API, signal=Ending.COMPLETE, parts=[], raw_reason="end_turn"),
        "end_turn",
    )
    yield (
        "tool_use",
        make_turn(
            api=API,
            signal=Ending.TOOL_USE,
            parts=[
                TextPart(text="Checking."),
                call("toolu_01A", city="Paris"),
                call("toolu_01B", city="Rome"),
            ],
            raw_reason="tool_use",
        ),
        "tool_use",
    )
    yield (
        "truncated",
        make_turn(
            api=API,
            signal=Ending.TRUNCATED,
            parts=[TextPart(text="Once upon a")],
            raw_reason="max_tokens",
        ),
        "max_tokens",
    )
    yield (
        "paused",
        make_turn(
            api=API,
            signal=Ending.PAUSED,
            parts=[TextPart(text="Searching."), SEARCH],
            raw_reason="pause_turn",
        ),
        "pause_turn",
    )
    refusal = [TextPart(text="Sure"), RefusalPart(text="This could enable cyber harm.")]
    yield (
        "refused",
        make_turn(
            api=API, signal=Ending.REFUSED, parts=refusal, raw_reason="refusal", detail="cyber"
        ),
        "refusal",
    )
    yield (
        "context",
        make_turn(
            api=API,
            signal=Ending.CONTEXT_EXCEEDED,
            parts=[TextPart(text="The summary")],
            raw_reason="model_context_window_exceeded",
        ),
        "model_context_window_exceeded",
    )


TURNS = list(turns())


@pytest.mark.parametrize(("label", "turn", "stop"), TURNS, ids=[t[0] for t in TURNS])
def test_sdk_reads_non_streamed_renderings(label: str, turn: Turn, stop: str) -> None:
    response = WIRE.render_response(turn)
    assert response.status == 200 and response.content_type == "application/json"
    message = sdk(response).messages.create(**ASK)
    assert message.stop_reason == stop
    assert message.id.startswith("msg_01") and len(message.id) == 28
    assert "".join(b.text for b in message.content if b.type == "text") == turn.text
    assert [(b.id, b.input) for b in message.content if b.type == "tool_use"] == [
        (c.id, c.arguments) for c in turn.tool_calls
    ]
    if turn.ending is Ending.REFUSED:
        assert message.stop_details is not None
        assert (message.stop_details.category, message.stop_details.explanation) == (
            "cyber",
            "This could enable cyber harm.",
        )
    if turn.ending is Ending.PAUSED:
        assert message.content[-1].type == "server_tool_use"
    assert (
        message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0)
        == turn.usage.input_tokens
    )
    back = WIRE.parse_response(json.loads(response.body))
    assert (back.ending, back.text, back.tool_calls, back.detail) == (
        turn.ending,
        turn.text,
        turn.tool_calls,
        turn.detail,
    )
    assert back.refusal == turn.refusal and back.usage == turn.usage


@pytest.mark.parametrize(("label", "turn", "stop"), TURNS, ids=[t[0] for t in TURNS])
def test_sdk_reads_streamed_renderings(label: str, turn: Turn, stop: str) -> None:
    response = WIRE.render_response(turn, stream=True)
    assert response.content_type == "text/event-stream"
    with sdk(response).messages.stream(**ASK) as stream:
        streamed_text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert final.stop_reason == stop
    assert streamed_text == turn.text
    assert [(b.name, b.input) for b in final.content if b.type == "tool_use"] == [
        (c.name, c.arguments) for c in turn.tool_calls
    ]
    assert [b.signature for b in final.content if b.type == "thinking"] == [
        p.signature for p in turn.thinking
    ]
    events = [e.type for e in sdk(response).messages.create(**ASK, stream=True)]
    assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
    back = WIRE.parse_stream(response.body)
    assert (back.ending, back.text, back.detail, back.refusal) == (
        turn.ending,
        turn.text,
        turn.detail,
        turn.refusal,
    )
    assert [(c.id, c.name, c.arguments) for c in back.tool_calls] == [
        (c.id, c.name, c.arguments) for c in turn.tool_calls
    ]
    assert back.usage == turn.usage


def test_stream_event_order_matches_anthropic() -> None:
    turn = make_turn(
        api=API, signal=Ending.COMPLETE, parts=[TextPart(text="Hi")], raw_reason="end_turn"
    )
    from donegate.models._sse import iter_sse

    events = [e for e, _ in iter_sse(WIRE.render_response(turn, stream=True).body)]
    assert events == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_truncated_tool_call_streams_its_partial_arguments() -> None:
    partial = ToolCall.from_raw(
        id="toolu_01", name="write_file", arguments_raw='{"path": "a.py", "content": "de'
    )
    turn = make_turn(api=API, signal=Ending.TRUNCATED, parts=[partial], raw_reason="max_tokens")
    response = WIRE.render_response(turn, stream=True)
    with sdk(response).messages.stream(**ASK) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "max_tokens"
    # the SDK's partial JSON parser drops the unfinished string
    assert final.content[0].type == "tool_use" and final.content[0].input == {"path": "a.py"}
    back = WIRE.parse_stream(response.body)
    assert back.ending is Ending.TRUNCATED
    assert back.tool_calls[0].arguments_raw == partial.arguments_raw


def test_a_cut_stream_renders_without_its_final_events() -> None:
    turn = make_turn(
        api=API,
        signal=Ending.TRUNCATED,
        parts=[TextPart(text="Here are")],
        raw_reason=None,
        detail="stream ended before its final event",
    )
    response = WIRE.render_response(turn, stream=True)
    assert "message_stop" not in response.body and "message_delta" not in response.body
    assert WIRE.parse_stream(response.body).ending is Ending.TRUNCATED


def test_malformed_tool_call_streams_but_cannot_be_a_body() -> None:
    bad = ToolCall.from_raw(id="toolu_01", name="f", arguments_raw="{oops")
    turn = make_turn(api=API, signal=Ending.TOOL_USE, parts=[bad], raw_reason="tool_use")
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert (
        WIRE.parse_stream(WIRE.render_response(turn, stream=True).body).ending
        is Ending.MALFORMED_TOOL_CALL
    )
    with pytest.raises(UnsupportedTurn, match="malformed_tool_call"):
        WIRE.render_response(turn)


def test_progress_updates_render_as_thinking_and_read_back_under_updates() -> None:
    update = ThinkingPart(text="Found it; editing auth.py.", signature="Es8C", progress=True)
    turn = make_turn(
        api=API,
        signal=Ending.TOOL_USE,
        parts=[update, call("toolu_01", city="x")],
        raw_reason="tool_use",
    )
    reader = AnthropicMessages(thinking_display="updates")
    for stream in (False, True):
        response = WIRE.render_response(turn, stream=stream)
        back = (
            reader.parse_stream(response.body)
            if stream
            else reader.parse_response(json.loads(response.body))
        )
        assert back.thinking == (update,)


def error(
    status: int | None, kind: str | None = None, message: str = "", retry_after: float | None = None
) -> Turn:
    return error_turn(
        api=API,
        ending=Ending.ERROR,
        status=status,
        type_=kind,
        message=message,
        retry_after=retry_after,
    )


@pytest.mark.parametrize(
    ("status", "exc", "kind"),
    [
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
        (400, anthropic.BadRequestError, "invalid_request_error"),
    ],
)
def test_error_statuses_render_anthropic_error_bodies(
    status: int, exc: type[Exception], kind: str
) -> None:
    response = WIRE.render_response(error(status, retry_after=3.0))
    assert response.status == status and response.headers["retry-after"] == "3"
    for stream in (False, True):
        with pytest.raises(exc) as info:
            sdk(response).messages.create(**ASK, stream=stream)
        assert info.value.body["error"]["type"] == kind  # type: ignore[attr-defined]
    back = WIRE.parse_error(response.status, json.loads(response.body), retry_after=3.0)
    assert back.ending is Ending.ERROR
    assert back.error is not None and (
        back.error.status,
        back.error.type,
        back.error.retry_after,
    ) == (status, kind, 3.0)


def test_an_error_without_status_breaks_the_stream_with_an_error_event() -> None:
    turn = error_turn(
        api=API,
        ending=Ending.ERROR,
        status=None,
        type_="overloaded_error",
        message="Overloaded",
        parts=[TextPart(text="Counting: 1, 2")],
    )
    response = WIRE.render_response(turn, stream=True)
    assert response.status == 200
    seen: list[str] = []
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
        for event in sdk(response).messages.create(**ASK, stream=True):
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                seen.append(event.delta.text)
    assert "".join(seen) == "Counting: 1, 2"
    back = WIRE.parse_stream(response.body)
    assert (back.ending, back.text) == (Ending.ERROR, "Counting: 1, 2")
    assert back.error is not None and back.error.type == "overloaded_error"
    assert WIRE.render_response(turn).status == 500


def test_context_exceeded_error_and_filtered_render_as_400_bodies() -> None:
    ctx = WIRE.parse_error(
        400,
        anthropic_error(
            "invalid_request_error", "prompt is too long: 200021 tokens > 200000 maximum"
        ),
    )
    response = WIRE.render_response(ctx)
    assert response.status == 400
    assert WIRE.parse_error(400, json.loads(response.body)).ending is Ending.CONTEXT_EXCEEDED
    filtered = turn_of(Ending.FILTERED, [])
    response = WIRE.render_response(filtered)
    with pytest.raises(anthropic.BadRequestError, match="content filtering"):
        sdk(response).messages.create(**ASK)
    assert WIRE.parse_error(response.status, json.loads(response.body)).ending is Ending.FILTERED


def test_media_output_cannot_be_rendered() -> None:
    turn = turn_of(Ending.COMPLETE, [MediaPart(mime_type="image/png", data="x")])
    with pytest.raises(UnsupportedTurn):
        WIRE.render_response(turn)


def test_the_sdk_request_body_parses_back() -> None:
    """The emulator reads the SDK's own request bodies with parse_request."""
    seen: list[httpx2.Request] = []
    response = WIRE.render_response(TURNS[0][1])
    sdk(response, seen).messages.create(
        **{
            **ASK,
            "system": "Be brief.",
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        }
    )
    request = WIRE.parse_request(json.loads(seen[0].content))
    assert request.messages == (Message.system("Be brief."), Message.user("hi"))
    assert [t.name for t in request.tools] == ["f"]
