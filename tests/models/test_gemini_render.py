"""Gemini responses rendered for the test kit, read back by the official ``google-genai`` SDK.

Every rendered answer goes through the real SDK client over an ``httpx2.MockTransport``; the test
asserts what the SDK reports, then that our own parser reads the rendering back to the same turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import errors, types

from donegate.errors import UnsupportedTurn
from donegate.messages import (
    Ending,
    ErrorInfo,
    MediaPart,
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
)
from donegate.models.base import WireResponse
from donegate.models.gemini import WIRE


def make_client(resp: WireResponse, seen: list[Any] | None = None, *, vertex: bool = False) -> Any:
    """An SDK client (AI Studio, or Vertex AI express mode) answered by `resp`."""

    def handler(request: Any) -> Any:
        if seen is not None:
            seen.append((str(request.url), json.loads(request.content)))
        headers = {"content-type": resp.content_type, **resp.headers}
        return httpx2.Response(resp.status, text=resp.body, headers=headers)

    return genai.Client(
        api_key="k",
        vertexai=vertex,
        http_options=types.HttpOptions(
            base_url="http://test",
            httpx_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
            httpx_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
            retry_options=types.HttpRetryOptions(attempts=1),
        ),
    )


def turn(ending: Ending, *parts: Part, **kw: Any) -> Turn:
    kw.setdefault("usage", Usage(input_tokens=40, output_tokens=25, reasoning_tokens=10))
    return Turn(message=Message(role="assistant", parts=parts), ending=ending, **kw)


LONG = "Paris is sunny today, with a light breeze from the west and no rain expected at all."
THOUGHT = ThinkingPart(
    text="The user wants the weather; one tool call will do.", signature="c2lnMQ=="
)
SYNTH = ToolCall.from_args(
    id="call_0",
    name="get_weather",
    arguments={"city": "Paris", "days": [1, 2]},
    provider_details={"synthetic_id": True, "thoughtSignature": "c2lnMg=="},
)
REAL = ToolCall.from_args(id="flveizpn", name="get_time", arguments={})
BROKEN = ToolCall.from_raw(id="call_0", name="get_weather", arguments_raw='{"city": "Par')

CASES: dict[str, Turn] = {
    "complete": turn(Ending.COMPLETE, THOUGHT, TextPart(text=LONG), model="gemini-2.5-pro"),
    "tool_use": turn(Ending.TOOL_USE, TextPart(text="Checking."), SYNTH, REAL),
    "empty": turn(Ending.EMPTY, TextPart(text="")),
    "thinking_only": turn(Ending.EMPTY, THOUGHT),
    "truncated": turn(Ending.TRUNCATED, TextPart(text=LONG)),
    "truncated_mid_call": turn(Ending.TRUNCATED, TextPart(text="Calling"), BROKEN),
    "filtered": turn(Ending.FILTERED, detail="SAFETY: HARM_CATEGORY_HARASSMENT"),
    "filtered_after_text": turn(Ending.FILTERED, TextPart(text="Step one is"), raw_reason="SAFETY"),
    "recitation": turn(Ending.FILTERED, TextPart(text="It was the best"), raw_reason="RECITATION"),
    "malformed": turn(Ending.MALFORMED_TOOL_CALL, BROKEN),
    "unexpected_call": turn(
        Ending.MALFORMED_TOOL_CALL,
        REAL,
        raw_reason="UNEXPECTED_TOOL_CALL",
        detail="Unexpected tool call: Model tried to call an undeclared function: get_time",
    ),
    "image": turn(Ending.COMPLETE, MediaPart(mime_type="image/png", data="iVBORw0KGgo=")),
}

SDK_REASON = {
    "complete": "STOP",
    "tool_use": "STOP",
    "empty": "STOP",
    "thinking_only": "STOP",
    "truncated": "MAX_TOKENS",
    "truncated_mid_call": "MAX_TOKENS",
    "filtered": "SAFETY",
    "filtered_after_text": "SAFETY",
    "recitation": "RECITATION",
    "malformed": "MALFORMED_FUNCTION_CALL",
    "unexpected_call": "UNEXPECTED_TOOL_CALL",
    "image": "STOP",
}


def visible(t: Turn) -> str:
    return t.text


def calls(t: Turn) -> list[tuple[str, dict[str, Any]]]:
    """The calls Gemini can carry (a call whose arguments do not parse has no object form)."""
    return [(c.name, dict(c.arguments)) for c in t.tool_calls if c.arguments is not None]


def sdk_text(parts: Iterator[Any]) -> str:
    return "".join(p.text for p in parts if p.text is not None and not p.thought)


@pytest.mark.parametrize("vertex", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_sdk_reads_the_rendered_body(name: str, vertex: bool) -> None:
    t = CASES[name]
    resp = WIRE.render_response(t)
    assert (resp.status, resp.content_type) == (200, "application/json; charset=UTF-8")
    result = make_client(resp, vertex=vertex).models.generate_content(
        model="gemini-2.5-flash", contents="hi"
    )
    cand = result.candidates[0]
    assert cand.finish_reason == types.FinishReason(SDK_REASON[name])
    assert sdk_text(cand.content.parts or [] if cand.content else []) == visible(t)
    assert [(f.name, f.args) for f in result.function_calls or []] == calls(t)
    assert result.usage_metadata.prompt_token_count == 40
    assert result.usage_metadata.thoughts_token_count == 10
    assert result.model_version == (t.model or "gemini-2.5-flash")
    # ... and our own parser reads it back to the same turn.
    back = WIRE.parse_response(json.loads(resp.body))
    assert (back.ending, back.text, calls(back)) == (t.ending, t.text, calls(t))
    assert back.usage == t.usage
    assert back.response_id == result.response_id


@pytest.mark.parametrize("name", sorted(CASES))
def test_sdk_reads_the_rendered_stream(name: str) -> None:
    t = CASES[name]
    resp = WIRE.render_response(t, stream=True)
    assert (resp.status, resp.content_type) == (200, "text/event-stream")
    seen: list[Any] = []
    chunks = list(make_client(resp, seen).models.generate_content_stream(model="m", contents="hi"))
    assert seen[0][0].endswith(":streamGenerateContent?alt=sse")
    last = chunks[-1].candidates[0]
    assert last.finish_reason == types.FinishReason(SDK_REASON[name])
    assert all(c.candidates[0].finish_reason is None for c in chunks[:-1])
    text = "".join(
        sdk_text(c.candidates[0].content.parts or [])
        for c in chunks
        if c.candidates[0].content is not None
    )
    assert text == visible(t)
    got = [(f.name, f.args) for c in chunks for f in c.function_calls or []]
    assert got == calls(t)
    assert chunks[-1].usage_metadata.candidates_token_count == 15
    back = WIRE.parse_stream(resp.body)
    assert (back.ending, back.text, calls(back)) == (t.ending, t.text, calls(t))
    assert back.thinking == t.thinking
    assert back.usage == t.usage


def test_text_is_split_across_chunks_and_the_signature_stays_on_its_part() -> None:
    resp = WIRE.render_response(CASES["complete"], stream=True)
    events = [json.loads(e.removeprefix("data: ")) for e in resp.body.split("\r\n\r\n") if e]
    texts = [e["candidates"][0]["content"]["parts"][0]["text"] for e in events]
    assert len(events) > 3
    assert "".join(texts) == THOUGHT.text + LONG
    assert events[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"] == "c2lnMQ=="
    assert "finishReason" not in events[-2]["candidates"][0]
    assert events[-1]["candidates"][0]["finishReason"] == "STOP"
    back = WIRE.parse_stream(resp.body)
    assert back.message.parts == CASES["complete"].message.parts


def test_rendered_calls_keep_real_ids_and_signatures_only() -> None:
    result = make_client(WIRE.render_response(CASES["tool_use"])).models.generate_content(
        model="m", contents="hi"
    )
    parts = result.candidates[0].content.parts
    assert [p.function_call.id for p in parts if p.function_call] == [None, "flveizpn"]
    assert [p.thought_signature for p in parts if p.function_call] == [b"sig2", None]
    back = WIRE.parse_response(json.loads(WIRE.render_response(CASES["tool_use"]).body))
    assert back.tool_calls == CASES["tool_use"].tool_calls


def test_filtered_carries_the_blocking_category() -> None:
    result = make_client(WIRE.render_response(CASES["filtered"])).models.generate_content(
        model="m", contents="hi"
    )
    blocked = [r.category for r in result.candidates[0].safety_ratings if r.blocked]
    assert blocked == [types.HarmCategory.HARM_CATEGORY_HARASSMENT]
    back = WIRE.parse_response(json.loads(WIRE.render_response(CASES["filtered"]).body))
    assert back.detail == "SAFETY: HARM_CATEGORY_HARASSMENT"


def test_malformed_carries_a_finish_message() -> None:
    """The Vertex client maps ``finishMessage`` (the AI Studio one drops it)."""
    for name in ("malformed", "unexpected_call"):
        resp = WIRE.render_response(CASES[name])
        result = make_client(resp, vertex=True).models.generate_content(model="m", contents="hi")
        message = result.candidates[0].finish_message
        assert message
        assert WIRE.parse_response(json.loads(resp.body)).detail == message
    assert WIRE.parse_response(
        json.loads(WIRE.render_response(CASES["malformed"]).body)
    ).detail == ('Malformed function call: call:default_api:get_weather{"city": "Par')


def test_a_broken_stream_raises_in_the_sdk_after_the_partial_text() -> None:
    t = turn(Ending.ERROR, TextPart(text=LONG))
    resp = WIRE.render_response(t, stream=True)
    got: list[str] = []
    with pytest.raises(errors.APIError) as info:
        for c in make_client(resp).models.generate_content_stream(model="m", contents="hi"):
            got.append(c.text or "")
    assert "".join(got) == LONG
    assert (info.value.code, info.value.status) == (500, "INTERNAL")
    back = WIRE.parse_stream(resp.body)
    assert (back.ending, back.text) == (Ending.ERROR, LONG)


def test_an_error_without_status_is_a_500_when_not_streamed() -> None:
    resp = WIRE.render_response(turn(Ending.ERROR, detail="boom"))
    assert resp.status == 500
    with pytest.raises(errors.ServerError) as info:
        make_client(resp).models.generate_content(model="m", contents="hi")
    assert (info.value.status, info.value.message) == ("INTERNAL", "boom")
    assert WIRE.parse_error(resp.status, json.loads(resp.body)).ending is Ending.ERROR


@pytest.mark.parametrize(
    ("status", "name", "sdk_error"),
    [
        (429, "RESOURCE_EXHAUSTED", "ClientError"),
        (503, "UNAVAILABLE", "ServerError"),
        (400, "INVALID_ARGUMENT", "ClientError"),
        (401, "UNAUTHENTICATED", "ClientError"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_error_statuses(status: int, name: str, sdk_error: str, stream: bool) -> None:
    t = turn(
        Ending.ERROR,
        error=ErrorInfo(status=status, message="Try later.", retry_after=7.0),
    )
    resp = WIRE.render_response(t, stream=stream)
    assert resp.status == status
    assert resp.headers["retry-after"] == "7"
    client = make_client(resp)
    with pytest.raises(getattr(errors, sdk_error)) as info:
        if stream:
            list(client.models.generate_content_stream(model="m", contents="hi"))
        else:
            client.models.generate_content(model="m", contents="hi")
    assert (info.value.code, info.value.status, info.value.message) == (status, name, "Try later.")
    back = WIRE.parse_error(resp.status, json.loads(resp.body))
    assert back.ending is Ending.ERROR
    assert back.error == ErrorInfo(status=status, type=name, message="Try later.", retry_after=7.0)


@pytest.mark.parametrize("stream", [False, True])
def test_context_exceeded_is_a_400_about_the_input_token_count(stream: bool) -> None:
    t = turn(Ending.CONTEXT_EXCEEDED, usage=Usage(input_tokens=1250074))
    resp = WIRE.render_response(t, stream=stream)
    assert resp.status == 400
    with pytest.raises(errors.ClientError) as info:
        make_client(resp).models.generate_content(model="m", contents="hi")
    assert info.value.status == "INVALID_ARGUMENT"
    assert info.value.message == (
        "The input token count (1250074) exceeds the maximum number of tokens allowed (1048576)."
    )
    assert WIRE.parse_error(400, json.loads(resp.body)).ending is Ending.CONTEXT_EXCEEDED


@pytest.mark.parametrize("ending", [Ending.REFUSED, Ending.PAUSED])
def test_endings_gemini_cannot_express(ending: Ending) -> None:
    with pytest.raises(UnsupportedTurn, match=ending.value):
        WIRE.render_response(turn(ending, TextPart(text="No.")))


async def test_async_client_reads_body_and_stream() -> None:
    client = make_client(WIRE.render_response(CASES["tool_use"]))
    result = await client.aio.models.generate_content(model="m", contents="hi")
    assert [f.name for f in result.function_calls] == ["get_weather", "get_time"]
    client = make_client(WIRE.render_response(CASES["truncated"], stream=True))
    text, reason = "", None
    async for c in await client.aio.models.generate_content_stream(model="m", contents="hi"):
        text += c.text or ""
        reason = c.candidates[0].finish_reason
    assert (text, reason) == (LONG, types.FinishReason.MAX_TOKENS)


def test_parse_request_reads_what_the_sdk_sends() -> None:
    seen: list[Any] = []
    client = make_client(WIRE.render_response(CASES["complete"]), seen)
    client.models.generate_content(
        model="gemini-2.5-flash",
        contents=[
            types.Content(role="user", parts=[types.Part(text="Weather?")]),
            types.Content(
                role="model",
                parts=[types.Part(function_call=types.FunctionCall(name="w", args={"c": "P"}))],
            ),
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            name="w", response={"output": "sunny"}
                        )
                    )
                ],
            ),
        ],
        config=types.GenerateContentConfig(
            system_instruction="Be brief.",
            max_output_tokens=64,
            temperature=0.5,
            stop_sequences=["END"],
            tools=[
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name="w",
                            description="Weather.",
                            parameters_json_schema={
                                "type": "object",
                                "properties": {"c": {"type": "string"}},
                            },
                        )
                    ]
                )
            ],
            tool_config=types.ToolConfig(
                function_calling_config=types.FunctionCallingConfig(mode="AUTO")
            ),
        ),
    )
    req = WIRE.parse_request(seen[0][1])
    assert [m.role for m in req.messages] == ["system", "user", "assistant", "tool"]
    assert req.messages[0].text == "Be brief."
    (call,) = req.messages[2].tool_calls
    (result,) = req.messages[3].results
    assert (call.id, call.arguments, result.call_id, result.content) == (
        "call_0",
        {"c": "P"},
        "call_0",
        "sunny",
    )
    assert req.tools[0].parameters == {"type": "object", "properties": {"c": {"type": "string"}}}
    s = req.settings
    assert (s.max_tokens, s.temperature, s.stop, s.tool_choice) == (64, 0.5, ("END",), "auto")


def test_the_sdk_accepts_the_rendered_request_as_its_own() -> None:
    """Our request body validates as the SDK's typed request (field names and shapes)."""
    from donegate.models.base import ModelRequest, ModelSettings, ToolSpec

    req = ModelRequest(
        model="gemini-2.5-flash",
        messages=(
            Message.system("Be brief."),
            Message.user("Weather?"),
            Message(role="assistant", parts=(THOUGHT, SYNTH)),
        ),
        tools=(ToolSpec(name="get_weather", parameters={"type": "object", "properties": {}}),),
        settings=ModelSettings(max_tokens=10, tool_choice="required"),
    )
    body = WIRE.render_request(req)
    contents = [types.Content.model_validate(c) for c in body["contents"]]
    assert contents[1].parts[1].function_call.args == {"city": "Paris", "days": [1, 2]}
    assert contents[1].parts[0].thought is True
    config = types.GenerateContentConfig.model_validate(
        {
            "system_instruction": body["systemInstruction"],
            "tools": body["tools"],
            "tool_config": body["toolConfig"],
            **body["generationConfig"],
        }
    )
    assert config.max_output_tokens == 10
    assert config.tool_config.function_calling_config.mode == types.FunctionCallingConfigMode.ANY


def test_a_filtered_stream_ends_with_an_empty_candidate() -> None:
    """Google: "when streaming, the content field is empty if content filters block the output"."""
    resp = WIRE.render_response(CASES["filtered_after_text"], stream=True)
    events = [json.loads(e.removeprefix("data: ")) for e in resp.body.split("\r\n\r\n") if e]
    last = events[-1]["candidates"][0]
    assert (last["content"], last["finishReason"]) == ({}, "SAFETY")
    assert [e["candidates"][0]["content"]["parts"][0]["text"] for e in events[:-1]] == [
        "Step one is"
    ]
