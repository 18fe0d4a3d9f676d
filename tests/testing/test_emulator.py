"""The emulator over real loopback HTTP, driven by the official SDKs and by donegate's own loop.

Every assertion is on what the client reported (finish reasons, tool-call arguments, text), so
the bytes the emulator sends are the ones the SDKs' parsers accept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types as gtypes

import donegate
from donegate.loop import Status
from donegate.testing.emulator import Emulator
from donegate.testing.script import load_script

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
TOOL = SCRIPTS / "tool_then_text.yaml"  # search(q=x), then "Found one result."
TRUNCATED = SCRIPTS / "truncated_text.yaml"  # "The refund has been", cut at the limit
REFUSED = SCRIPTS / "refused.yaml"  # "I can't help with that.", refused
FILTERED = SCRIPTS / "filtered.yaml"  # "The attacker first", stopped by a filter
SEARCH = {
    "type": "function",
    "function": {"name": "search", "parameters": {"type": "object", "properties": {}}},
}


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


def oa(emu: Emulator) -> Any:  # Any: the SDKs' TypedDict params would need a cast per call
    return openai.OpenAI(api_key="sk-test", base_url=emu.base_url + "/v1", max_retries=0)


def an(emu: Emulator) -> Any:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=emu.base_url, max_retries=0)


def gm(emu: Emulator) -> Any:
    return genai.Client(api_key="test", http_options=gtypes.HttpOptions(base_url=emu.base_url))


# -- OpenAI Chat Completions ------------------------------------------------------------------


def chat(emu: Emulator, messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    """finish_reason, content, refusal and tool calls as the SDK reported them."""
    client = oa(emu)
    if not stream:
        choice = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=[SEARCH]
        ).choices[0]
        calls = [
            (c.function.name, c.function.arguments, c.id) for c in choice.message.tool_calls or []
        ]
        return {"finish": choice.finish_reason, "text": choice.message.content,
                "refusal": choice.message.refusal, "calls": calls}  # fmt: skip
    out: dict[str, Any] = {"finish": None, "text": "", "refusal": None, "calls": []}
    args: dict[int, list[str]] = {}
    for chunk in client.chat.completions.create(
        model="gpt-4o-mini", messages=messages, tools=[SEARCH], stream=True
    ):
        if not chunk.choices:
            continue
        c = chunk.choices[0]
        out["text"] += c.delta.content or ""
        if c.delta.refusal:
            out["refusal"] = (out["refusal"] or "") + c.delta.refusal
        for tc in c.delta.tool_calls or []:
            if tc.id:
                out["calls"].append([tc.function.name, "", tc.id])
            args.setdefault(tc.index, []).append(tc.function.arguments or "")
        out["finish"] = c.finish_reason or out["finish"]
    for i, call in enumerate(out["calls"]):
        call[1] = "".join(args[i])
    out["calls"] = [tuple(c) for c in out["calls"]]
    out["text"] = out["text"] or None
    return out


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_openai_chat_tool_call_then_text(emulator: Emulator, stream: bool) -> None:
    emulator.load(TOOL)
    first = chat(emulator, [{"role": "user", "content": "find x"}], stream)
    assert first["finish"] == "tool_calls"
    assert [(n, json.loads(a), i) for n, a, i in first["calls"]] == [("search", {"q": "x"}, "c1")]
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "find x"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"hits": ["a"]}'},
    ]  # fmt: skip
    second = chat(emulator, history, stream)
    assert (second["finish"], second["text"]) == ("stop", "Found one result.")
    emulator.assert_exhausted()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_openai_chat_truncated_and_refused(emulator: Emulator, stream: bool) -> None:
    emulator.load(TRUNCATED)
    emulator.load(REFUSED)
    cut = chat(emulator, [{"role": "user", "content": "find x"}], stream)
    assert (cut["finish"], cut["text"]) == ("length", "The refund has been")
    cut = chat(emulator, [{"role": "user", "content": "find x"}], stream)
    assert cut["finish"] == "length"
    refused = chat(emulator, [{"role": "user", "content": "phish"}], stream)
    assert refused["refusal"] == "I can't help with that."
    assert refused["text"] is None
    emulator.assert_exhausted()


# -- OpenAI Responses -------------------------------------------------------------------------


def responses(emu: Emulator, input_: Any, stream: bool) -> Any:
    """The final Response object, however it arrived."""
    client = oa(emu)
    tool = {"type": "function", "name": "search", "parameters": {"type": "object"}}
    if not stream:
        return client.responses.create(model="gpt-4o-mini", input=input_, tools=[tool])
    final = None
    for event in client.responses.create(
        model="gpt-4o-mini", input=input_, tools=[tool], stream=True
    ):
        if event.type in ("response.completed", "response.incomplete", "response.failed"):
            final = event.response
    assert final is not None
    return final


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_openai_responses_tool_call_truncated_refused(emulator: Emulator, stream: bool) -> None:
    for script in (TOOL, TRUNCATED, REFUSED):
        emulator.load(script)
    r = responses(emulator, "find x", stream)
    call = next(o for o in r.output if o.type == "function_call")
    assert (call.name, json.loads(call.arguments), call.call_id) == ("search", {"q": "x"}, "c1")
    follow = [
        {"role": "user", "content": "find x"},
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": '{"q":"x"}'},
        {"type": "function_call_output", "call_id": "c1", "output": '{"hits": ["a"]}'},
    ]
    r = responses(emulator, follow, stream)
    assert (r.status, r.output_text) == ("completed", "Found one result.")
    r = responses(emulator, "find x", stream)
    assert r.status == "incomplete"
    assert r.incomplete_details.reason == "max_output_tokens"
    assert r.output_text == "The refund has been"
    responses(emulator, "find x", stream)
    r = responses(emulator, "phish", stream)
    parts = [p for o in r.output if o.type == "message" for p in o.content]
    assert [(p.type, p.refusal) for p in parts] == [("refusal", "I can't help with that.")]
    emulator.assert_exhausted()


# -- Anthropic Messages -----------------------------------------------------------------------


def message(emu: Emulator, messages: list[dict[str, Any]], stream: bool) -> Any:
    client = an(emu)
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
        "messages": messages,
        "tools": [{"name": "search", "input_schema": {"type": "object"}}],
    }
    if not stream:
        return client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as s:
        return s.get_final_message()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_anthropic_tool_call_truncated_refused(emulator: Emulator, stream: bool) -> None:
    for script in (TOOL, TRUNCATED, REFUSED):
        emulator.load(script)
    m = message(emulator, [{"role": "user", "content": "find x"}], stream)
    assert m.stop_reason == "tool_use"
    uses = [(b.name, b.input, b.id) for b in m.content if b.type == "tool_use"]
    assert uses == [("search", {"q": "x"}, "c1")]
    follow: list[dict[str, Any]] = [
        {"role": "user", "content": "find x"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c1", "name": "search", "input": {"q": "x"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": '{"hits": ["a"]}'}]},
    ]  # fmt: skip
    m = message(emulator, follow, stream)
    assert (m.stop_reason, m.content[0].text) == ("end_turn", "Found one result.")
    m = message(emulator, [{"role": "user", "content": "find x"}], stream)
    assert (m.stop_reason, m.content[0].text) == ("max_tokens", "The refund has been")
    message(emulator, [{"role": "user", "content": "find x"}], stream)
    m = message(emulator, [{"role": "user", "content": "phish"}], stream)
    assert m.stop_reason == "refusal"
    assert m.stop_details is not None
    assert m.stop_details.explanation == "I can't help with that."
    emulator.assert_exhausted()


def test_anthropic_count_tokens_and_model_list(emulator: Emulator) -> None:
    client = an(emulator)
    count = client.messages.count_tokens(
        model="claude-sonnet-4-6", messages=[{"role": "user", "content": "hello " * 40}]
    )
    assert count.input_tokens > 40
    assert [m.id for m in client.models.list()][:1] == ["claude-sonnet-4-6"]
    assert [m.id for m in oa(emulator).models.list()][:1] == ["gpt-4o-mini"]


# -- Gemini -----------------------------------------------------------------------------------


def generate(emu: Emulator, contents: Any, stream: bool) -> dict[str, Any]:
    client = gm(emu)
    config = gtypes.GenerateContentConfig(
        tools=[gtypes.Tool(function_declarations=[gtypes.FunctionDeclaration(name="search")])]
    )
    chunks = (
        list(client.models.generate_content_stream(
            model="gemini-2.5-flash", contents=contents, config=config))
        if stream
        else [client.models.generate_content(
            model="gemini-2.5-flash", contents=contents, config=config)]
    )  # fmt: skip
    text, calls, finish = "", [], None
    for chunk in chunks:
        cand = chunk.candidates[0] if chunk.candidates else None
        if cand is None:
            continue
        for part in (cand.content.parts if cand.content else None) or []:
            if part.text:
                text += part.text
            if part.function_call:
                calls.append((part.function_call.name, part.function_call.args))
        finish = cand.finish_reason or finish
    return {"text": text, "calls": calls, "finish": finish}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_gemini_tool_call_truncated_filtered(emulator: Emulator, stream: bool) -> None:
    for script in (TOOL, TRUNCATED, FILTERED):
        emulator.load(script)
    g = generate(emulator, "find x", stream)
    assert g["calls"] == [("search", {"q": "x"})]
    assert g["finish"] == gtypes.FinishReason.STOP
    follow = [
        gtypes.Content(role="user", parts=[gtypes.Part(text="find x")]),
        gtypes.Content(role="model", parts=[gtypes.Part.from_function_call(
            name="search", args={"q": "x"})]),
        gtypes.Content(role="user", parts=[gtypes.Part.from_function_response(
            name="search", response={"hits": ["a"]})]),
    ]  # fmt: skip
    g = generate(emulator, follow, stream)
    assert (g["finish"], g["text"]) == (gtypes.FinishReason.STOP, "Found one result.")
    g = generate(emulator, "find x", stream)
    assert (g["finish"], g["text"]) == (gtypes.FinishReason.MAX_TOKENS, "The refund has been")
    generate(emulator, "find x", stream)
    g = generate(emulator, "describe the incident", stream)
    assert g["finish"] == gtypes.FinishReason.SAFETY
    emulator.assert_exhausted()


def test_gemini_stream_without_alt_sse_is_a_json_array(emulator: Emulator) -> None:
    emulator.load(TOOL)
    url = emulator.base_url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "find x"}]}]}
    r = httpx2.post(url, json=body)
    assert r.headers["content-type"].startswith("application/json")
    chunks = r.json()
    assert isinstance(chunks, list)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert donegate.classify("gemini", r.text, stream=True).tool_calls[0].arguments == {"q": "x"}


# -- failures the emulator must report as the provider would ----------------------------------


def test_an_extra_call_is_a_500_in_the_providers_shape(emulator: Emulator) -> None:
    emulator.load(REFUSED)
    an(emulator).messages.create(
        model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    )
    with pytest.raises(anthropic.InternalServerError) as info:
        an(emulator).messages.create(
            model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    assert info.value.status_code == 500
    body = info.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "api_error"
    assert body["error"]["message"] == "model called 2 times but script has 1 turn"
    with pytest.raises(openai.InternalServerError) as oinfo:
        oa(emulator).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}]
        )
    assert "model called 3 times but script has 1 turn" in str(oinfo.value)
    status = httpx2.get(emulator.base_url + "/_donegate/status").json()
    assert status["conversations"][0]["served"] == 3
    assert len(status["conversations"][0]["errors"]) == 2
    with pytest.raises(AssertionError, match="model called 3 times"):
        emulator.assert_exhausted()


def test_http_error_turns_keep_the_real_status_body_and_retry_after(emulator: Emulator) -> None:
    emulator.load(SCRIPTS / "http_error_then_text.yaml")
    url = emulator.base_url + "/v1/messages"
    body: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 10,
            "messages": [{"role": "user", "content": "x"}]}  # fmt: skip
    r = httpx2.post(url, json=body)
    assert r.status_code == 529
    assert r.headers["retry-after"] == "0.01"
    assert r.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    # The SDK retries a 529 on its own and reads the next turn.
    m = anthropic.Anthropic(api_key="k", base_url=emulator.base_url).messages.create(**body)
    assert m.content[0].text == "The customer wants a refund for a broken mug."


def test_unknown_fields_and_roles_are_tolerated(emulator: Emulator) -> None:
    emulator.load(TOOL)
    body: dict[str, Any] = {
        "model": "claude-x",
        "max_tokens": 10,
        "future_field": {"anything": True},
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "find x"}]},
            {"role": "system", "content": "a mid-conversation system message"},
            {"role": "narrator", "content": [{"type": "hologram", "data": 1}]},
        ],
    }
    r = httpx2.post(emulator.base_url + "/v1/messages", json=body)
    assert r.status_code == 200
    assert r.json()["stop_reason"] == "tool_use"


# -- conversations, the log -------------------------------------------------------------------


def test_conversations_by_header_or_in_order(emulator: Emulator, tmp_path: Path) -> None:
    emulator.load(TOOL)
    emulator.load(REFUSED)
    client = oa(emulator)
    ask = [{"role": "user", "content": "x"}]
    refused = client.chat.completions.create(
        model="m", messages=ask, extra_headers={"x-donegate-conversation": "refused"}
    )
    assert refused.choices[0].message.refusal == "I can't help with that."
    first = client.chat.completions.create(model="m", messages=ask)
    assert first.choices[0].finish_reason == "tool_calls"
    by_index = client.chat.completions.create(
        model="m", messages=ask, extra_headers={"x-donegate-conversation": "0"}
    )
    assert by_index.choices[0].message.content == "Found one result."
    with pytest.raises(openai.BadRequestError, match="no conversation 'nope'"):
        client.chat.completions.create(
            model="m", messages=ask, extra_headers={"x-donegate-conversation": "nope"}
        )
    log = httpx2.get(emulator.base_url + "/_donegate/requests").json()
    served = [(e["conversation"], e["turn"]) for e in log if "turn" in e]
    assert served == [("refused", 0), ("tool_then_text", 0), ("tool_then_text", 1)]
    assert all("authorization" not in e["headers"] for e in log)
    emulator.assert_exhausted()


def test_the_log_file_holds_one_json_line_per_request(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    with Emulator(TOOL, log=path) as emu:
        an(emu).messages.create(
            model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
        httpx2.get(emu.base_url + "/")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["method"], e["path"]) for e in lines] == [("POST", "/v1/messages"), ("GET", "/")]
    assert lines[0]["body"]["messages"] == [{"role": "user", "content": "x"}]
    assert "x-api-key" not in lines[0]["headers"]


def test_a_turn_the_wire_format_cannot_express_is_a_400(emulator: Emulator) -> None:
    emulator.load(REFUSED)  # Gemini has no structured refusal
    client = gm(emulator)
    with pytest.raises(genai.errors.ClientError, match="cannot be expressed"):
        client.models.generate_content(model="gemini-2.5-flash", contents="x")


# -- donegate's own loop through the emulator -------------------------------------------------


def sdk_model(api: str, emu: Emulator) -> Any:
    from donegate.models.google import GeminiModel
    from donegate.models.sdk import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel

    if api == "openai-chat":
        return OpenAIChatModel(oa(emu), "gpt-4o-mini")
    if api == "openai-responses":
        return OpenAIResponsesModel(oa(emu), "gpt-4o-mini")
    if api == "anthropic-messages":
        return AnthropicModel(an(emu), "claude-sonnet-4-6")
    return GeminiModel(gm(emu), "gemini-2.5-flash")


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic-messages", "gemini"])
def test_donegate_runs_the_refund_conversation_through_the_emulator(
    emulator: Emulator, api: str
) -> None:
    from donegate.testing import (
        assert_argument_from_result,
        assert_results_match_calls,
        assert_tool_order,
        assert_user_message_once_first,
    )

    script = load_script(SCRIPTS / "refund.yaml")
    emulator.load(script)
    result = donegate.run(
        script.prompt, model=sdk_model(api, emulator), tools=script.tools(),
        system=script.system, max_steps=script.max_steps,
    )  # fmt: skip
    assert result.status is Status.COMPLETE
    emulator.assert_exhausted()
    for transcript in (result, emulator, emulator.requests):
        assert_results_match_calls(transcript)
        assert_user_message_once_first(transcript, "order 55219 arrived smashed")
        assert_argument_from_result(
            transcript, call=("get_refund_policy", "sku"), source=("get_order", "sku")
        )
        assert_tool_order(transcript, ["get_order", "get_refund_policy", "start_refund"])


# -- the routes, without a server -------------------------------------------------------------


def test_handle_answers_without_http() -> None:
    emu = Emulator(TOOL)
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "find x"}]}]}).encode()
    reply = emu.handle("POST", "/v1beta/models/gemini-2.5-flash:generateContent", body=body)
    assert reply.status == 200
    call = json.loads(reply.body)["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert (call["name"], call["args"]) == ("search", {"q": "x"})
    counted = emu.handle("POST", "/v1beta/models/gemini-2.5-flash:countTokens", body=body)
    assert json.loads(counted.body)["totalTokens"] > 0
    models = emu.handle("GET", "/v1beta/models")
    assert json.loads(models.body)["models"][0]["name"] == "models/gemini-2.5-flash"
    info = emu.handle("GET", "/v1/models/claude-opus-4-8", headers={"anthropic-version": "x"})
    assert json.loads(info.body)["type"] == "model"
    assert emu.handle("HEAD", "/").status == 200
    missing = emu.handle("POST", "/v2/unknown", body=b"{}")
    assert missing.status == 404
    assert [e["kind"] for e in emu.requests] == [
        "model", "count_tokens", "models", "model_info", "ping", "unknown"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "shape"),
    [
        ("/v1/chat/completions", lambda b: b["error"]["message"]),
        ("/v1/messages", lambda b: b["type"] == "error" and b["error"]["message"]),
        (
            "/v1beta/models/g:generateContent",
            lambda b: b["error"]["status"] and b["error"]["message"],
        ),
    ],
)
def test_bad_bodies_and_no_script_are_errors_in_the_providers_shape(path: str, shape: Any) -> None:
    emu = Emulator()
    not_json = emu.handle("POST", path, body=b"{nope")
    assert not_json.status == 400
    assert "unreadable request body" in shape(json.loads(not_json.body))
    nothing = emu.handle("POST", path, body=b"{}")
    assert nothing.status == 400
    assert "no script loaded" in shape(json.loads(nothing.body))


def test_the_base_url_needs_a_running_server() -> None:
    with pytest.raises(donegate.errors.UserError, match="not running"):
        _ = Emulator().base_url
