"""The two emulator features the agent CLIs need, over real HTTP with the official SDKs.

Conversations told apart by prompt: Claude Code's background subagents call the same base URL
as the session that started them, in an order no test controls. Side calls: Gemini CLI routes
each prompt (and may check, summarise, compress) with extra ``generateContent`` calls offering
no tools, which must not use up the script's turns.
"""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest
from google import genai
from google.genai import types as gtypes

from donegate.testing import Emulator
from donegate.testing._routes import schema_example

SCRIPTS = Path(__file__).resolve().parent / "scripts"
MAIN = SCRIPTS / "two_prompts_main.yaml"
SUB = SCRIPTS / "two_prompts_sub.yaml"
ROUTER_SCHEMA = {  # what Gemini CLI 0.61.0's model router asks for
    "type": "OBJECT",
    "properties": {
        "complexity_reasoning": {"type": "STRING"},
        "complexity_score": {"type": "INTEGER"},
    },
    "required": ["complexity_reasoning", "complexity_score"],
}


def ask(emu: Emulator, *texts: str) -> str:
    """One Anthropic request whose user turns are `texts`; the text answered."""
    client = anthropic.Anthropic(base_url=emu.base_url, api_key="test", max_retries=0)
    messages: list[anthropic.types.MessageParam] = []
    for text in texts:
        if messages:
            messages.append({"role": "assistant", "content": "ok"})
        messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
    reply = client.messages.create(model="m", max_tokens=100, messages=messages)
    return "".join(b.text for b in reply.content if b.type == "text")


def test_each_request_is_answered_by_the_script_whose_prompt_it_carries() -> None:
    with Emulator(MAIN, SUB) as emu:
        # The subagent asks first, though its script was loaded second.
        assert ask(emu, "SUBAGENT: write api/refunds.py") == "sub one"
        assert ask(emu, "<system-reminder>ctx</system-reminder>", "migrate the endpoints") == (
            "main one"
        )
        # A forked subagent carries the main prompt too: the latest prompt said decides.
        with pytest.raises(anthropic.InternalServerError, match="script has 1 turns"):
            ask(emu, "migrate the endpoints", "SUBAGENT: write api/refunds.py")
        assert ask(emu, "migrate the endpoints") == "main two"
        served = [(e["conversation"], e["turn"]) for e in emu.requests]
    assert served == [
        ("two_prompts_sub", 0),
        ("two_prompts_main", 0),
        ("two_prompts_sub", 1),
        ("two_prompts_main", 1),
    ]


def test_requests_naming_no_prompt_are_answered_in_order() -> None:
    with Emulator(MAIN, SUB) as emu:
        assert [ask(emu, "something else") for _ in range(3)] == ["main one", "main two", "sub one"]


def gemini(emu: Emulator) -> genai.Client:
    return genai.Client(api_key="test", http_options=gtypes.HttpOptions(base_url=emu.base_url))


def test_gemini_side_calls_get_a_stock_answer_and_use_no_turn() -> None:
    with Emulator(MAIN, side_calls=True) as emu:
        client = gemini(emu)
        routed = client.models.generate_content(
            model="gemini-3.5-flash-lite",
            contents="migrate the endpoints",
            config=gtypes.GenerateContentConfig(
                response_mime_type="application/json", response_json_schema=ROUTER_SCHEMA
            ),
        )
        summary = client.models.generate_content(model="m", contents="summarise this session")
        tool = gtypes.Tool(function_declarations=[gtypes.FunctionDeclaration(name="run")])
        streamed = client.models.generate_content_stream(
            model="m",
            contents="migrate the endpoints",
            config=gtypes.GenerateContentConfig(tools=[tool]),
        )
        turn = "".join(chunk.text or "" for chunk in streamed)
        kinds = [(e["kind"], e.get("turn")) for e in emu.requests]
        status = emu.status()["conversations"][0]
    assert json.loads(routed.text or "") == {"complexity_reasoning": "ok", "complexity_score": 1}
    assert summary.text == "OK"
    assert turn == "main one"  # the script's first turn, untouched by the two side calls
    assert kinds == [("side_call", None), ("side_call", None), ("model", 0)]
    assert status["served"] == 1


def test_without_side_calls_a_tool_less_call_is_a_turn_like_any_other() -> None:
    with Emulator(MAIN) as emu:
        client = gemini(emu)  # kept: a collected client closes its connection pool
        answer = client.models.generate_content(model="m", contents="summarise")
        assert answer.text == "main one"
        assert [e["kind"] for e in emu.requests] == ["model"]


@pytest.mark.parametrize(
    ("schema", "example"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}},
         {"a": "ok", "b": 1}),
        ({"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "required": ["b"]},
         {"b": "ok"}),
        ({"type": "string", "enum": ["user", "model"]}, "user"),
        ({"anyOf": [{"type": "boolean"}, {"type": "string"}]}, False),
        ({"type": ["null", "array"], "items": {"type": "string"}}, []),
        ({"const": 3}, 3),
        ({"properties": {"n": {"type": "INTEGER"}}}, {"n": 1}),
        ({"type": "integer", "minimum": 5}, 5),
        ({"type": "number", "minimum": 0}, 0),
        ("not a schema", "ok"),
    ],
)  # fmt: skip
def test_schema_example_is_the_plainest_value_the_schema_accepts(
    schema: object, example: object
) -> None:
    assert schema_example(schema) == example
