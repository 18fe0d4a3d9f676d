"""Side calls: with ``side_calls`` on, a request that offers no tools is answered without a turn.

The case that asks for it: Gemini CLI without ``-m`` routes every prompt with a non-streamed
``generateContent`` that offers no tools and wants ``{complexity_reasoning, complexity_score}``;
served from the script, it used up the agent's turns and the session hung.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from donegate.testing._side import SIDE_TEXT, response_schema, smallest_instance
from donegate.testing.emulator import Emulator
from donegate.testing.script import parse_script

ROUTER_SCHEMA = {
    "type": "OBJECT",
    "properties": {
        "complexity_reasoning": {"type": "STRING"},
        "complexity_score": {"type": "INTEGER"},
    },
    "required": ["complexity_reasoning", "complexity_score"],
}
SCRIPT = parse_script(
    {
        "prompt": "count the files",
        "turns": [
            {"tool_call": "run_shell_command", "args": {"command": "ls | wc -l"}},
            {"text": "There are 3 files."},
        ],
    }
)
SHELL = {"functionDeclarations": [{"name": "run_shell_command", "parameters": {"type": "object"}}]}


def router_call(url: str) -> httpx2.Response:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "route: count the files"}]}],
        "generationConfig": {"responseMimeType": "application/json",
                             "responseJsonSchema": ROUTER_SCHEMA},
    }  # fmt: skip
    return httpx2.post(f"{url}/v1beta/models/gemini-3.5-flash-lite:generateContent", json=body)


def agent_call(url: str, contents: list[Any]) -> dict[str, Any]:
    path = f"{url}/v1beta/models/gemini-2.5-flash:generateContent"
    answer = httpx2.post(path, json={"contents": contents, "tools": [SHELL]})
    assert answer.status_code == 200, answer.text
    parts: list[dict[str, Any]] = answer.json()["candidates"][0]["content"]["parts"]
    return parts[0]


def test_gemini_clis_router_call_is_answered_without_using_a_turn() -> None:
    with Emulator(SCRIPT, side_calls=True) as emu:
        routed = router_call(emu.base_url)
        assert routed.status_code == 200
        text = routed.json()["candidates"][0]["content"]["parts"][0]["text"]
        assert json.loads(text) == {"complexity_reasoning": "", "complexity_score": 1}
        user = {"role": "user", "parts": [{"text": "count the files"}]}
        first = agent_call(emu.base_url, [user])
        assert first["functionCall"]["name"] == "run_shell_command"
        router_call(emu.base_url)  # routed again before the next turn
        result = {"role": "user", "parts": [{"functionResponse": {
            "name": "run_shell_command", "response": {"output": "3"}}}]}  # fmt: skip
        second = agent_call(emu.base_url, [user, {"role": "model", "parts": [first]}, result])
        assert second["text"] == "There are 3 files."
        emu.assert_exhausted()
        status = emu.status()
        assert [e.get("side_call", False) for e in emu.requests] == [True, False, True, False]
    assert (status["side_calls"], status["unused_turns"], status["errors"]) == (2, 0, 0)


def test_without_side_calls_the_router_call_is_served_from_the_script() -> None:
    with Emulator(SCRIPT) as emu:
        router_call(emu.base_url)
        assert emu.conversations[0].model.calls == 1  # the agent's first turn went to the router
        assert emu.status()["side_calls"] == 0


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_side_call_without_a_schema_gets_a_short_text_in_each_api(stream: bool) -> None:
    from donegate.models.registry import wire_format

    with Emulator(SCRIPT, side_calls=True) as emu:
        title = {"model": "claude-haiku-4-5", "max_tokens": 50, "stream": stream,
                 "messages": [{"role": "user", "content": "a title for this chat"}]}  # fmt: skip
        answer = httpx2.post(emu.base_url + "/v1/messages", json=title)
        read = wire_format("anthropic-messages")
        turn = read.parse_stream(answer.text) if stream else read.parse_response(answer.json())
        assert turn.text == SIDE_TEXT
        chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "summarise"}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {
                    "type": "object", "properties": {"summary": {"type": "string"}}}}}}  # fmt: skip
        answer = httpx2.post(emu.base_url + "/v1/chat/completions", json=chat)
        content = answer.json()["choices"][0]["message"]["content"]
        assert json.loads(content) == {"summary": ""}
        assert emu.conversations[0].model.calls == 0


@pytest.mark.parametrize(
    ("api", "body", "schema"),
    [
        ("gemini", {"generationConfig": {"responseSchema": {"type": "STRING"}}},
         {"type": "STRING"}),
        ("gemini", {"generationConfig": {"responseMimeType": "application/json"}},
         {"type": "object"}),
        ("gemini", {"generationConfig": {"temperature": 0}}, None),
        ("openai-chat", {"response_format": {"type": "json_object"}}, {"type": "object"}),
        ("openai-chat", {"response_format": {"type": "text"}}, None),
        ("openai-responses", {"text": {"format": {"type": "json_schema", "name": "x",
                                                  "schema": {"type": "array"}}}},
         {"type": "array"}),
        ("anthropic-messages", {"output_format": {"type": "json_schema",
                                                  "schema": {"type": "boolean"}}},
         {"type": "boolean"}),
        ("anthropic-messages", {}, None),
    ],
)  # fmt: skip
def test_response_schema_is_read_where_each_api_puts_it(
    api: str, body: dict[str, Any], schema: Any
) -> None:
    assert response_schema(api, body) == schema


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (ROUTER_SCHEMA, {"complexity_reasoning": "", "complexity_score": 1}),
        ({"type": "integer", "maximum": -1}, -1),
        ({"enum": ["flash", "pro"]}, "flash"),
        ({"const": 7}, 7),
        ({"type": ["null", "number"], "minimum": 1.5}, 1.5),
        ({"type": "array", "items": {"type": "boolean"}, "minItems": 2}, [False, False]),
        ({"anyOf": [{"type": "string", "minLength": 3}, {"type": "integer"}]}, "xxx"),
        ({"properties": {"next_speaker": {"enum": ["user", "model"]}}}, {"next_speaker": "user"}),
        ({"type": "object"}, {}),
    ],
)
def test_smallest_instance_is_the_plainest_value_the_schema_accepts(
    schema: Any, value: Any
) -> None:
    assert smallest_instance(schema) == value
