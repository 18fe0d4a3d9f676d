"""`looks_like`: which wire format a body is, from its documented shape alone.

Bodies follow each provider's API reference: OpenAI ``chat.completion`` and ``response``
objects, Anthropic's ``message``, Gemini's ``GenerateContentResponse``, Bedrock's
``ConverseResponse``, Mistral's chat completion with content chunks, Cohere's v1 and v2 chat.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from donegate import classify
from donegate.models.registry import APIS
from donegate.models.sniff import looks_like, same_family

BODIES: dict[str, Any] = {
    "openai-chat": {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello."},
                "finish_reason": "stop",
            }
        ],
    },
    "openai-responses": {
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello.", "annotations": []}],
            }
        ],
    },
    "anthropic-messages": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello."}],
        "stop_reason": "end_turn",
    },
    "gemini": {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "Hello."}]}, "finishReason": "STOP"}
        ],
        "modelVersion": "gemini-2.5-flash",
    },
    "bedrock-converse": {
        "output": {"message": {"role": "assistant", "content": [{"text": "Hello."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
    },
    "mistral": {
        "id": "cmpl-e5cc70bb28c444948073e77776eb30ef",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "Greet."}]},
                        {"type": "text", "text": "Hello."},
                    ],
                },
                "finish_reason": "stop",
            }
        ],
    },
    "cohere": {
        "id": "c14c80c3-18eb-4519-9460-6c92edd8cfb4",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]},
        "finish_reason": "COMPLETE",
    },
}


@pytest.mark.parametrize("api", sorted(BODIES))
def test_each_documented_body_is_recognised(api: str) -> None:
    assert looks_like(BODIES[api]) == api
    assert classify(api, BODIES[api]).ending.value == "complete"  # and it is a real body


def test_cohere_v1_is_cohere() -> None:
    v1 = {"text": "Hello.", "generation_id": "1d4b", "finish_reason": "COMPLETE"}
    assert looks_like(v1) == "cohere"


def sse(*events: tuple[str | None, Any]) -> str:
    out = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out)


STREAMS: dict[str, str] = {
    "openai-chat": sse(
        (None, {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]}),
        (None, "[DONE]"),
    ),
    "openai-responses": sse(
        ("response.created", {"type": "response.created", "response": {"id": "resp_1"}})
    ),
    "anthropic-messages": sse(
        ("message_start", {"type": "message_start", "message": {"id": "msg_1"}}),
        ("message_stop", {"type": "message_stop"}),
    ),
    "gemini": sse((None, BODIES["gemini"])),
    "bedrock-converse": sse(("messageStart", {"role": "assistant"})),
    "cohere": sse(("message-start", {"type": "message-start", "id": "c14c"})),
}


@pytest.mark.parametrize("api", sorted(STREAMS))
def test_each_stream_is_recognised(api: str) -> None:
    assert looks_like(STREAMS[api]) == api


def test_a_gemini_json_array_stream_is_gemini() -> None:
    assert looks_like([BODIES["gemini"], BODIES["gemini"]]) == "gemini"
    assert looks_like(json.dumps([BODIES["gemini"]])) == "gemini"


@pytest.mark.parametrize(
    "body",
    [{}, [], "", "data: [DONE]\n\n", {"id": "x"}, {"error": {"message": "no"}}, 12, None, b"{}"],
)
def test_no_opinion_without_a_telling_field(body: Any) -> None:
    assert looks_like(body) is None


def test_families() -> None:
    assert same_family("openai-chat", "mistral") and same_family("mistral", "openai-chat")
    assert same_family("gemini", "gemini")
    assert not same_family("openai-chat", "openai-responses")
    assert all(
        not same_family(a, b) for a in APIS for b in APIS if a != b and "mistral" not in a + b
    )


def test_no_body_is_taken_for_another_format() -> None:
    for api, body in BODIES.items():
        seen = looks_like(body)
        assert seen is not None and same_family(seen, api)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=5),
    max_leaves=25,
)


@given(json_values)
def test_looks_like_never_raises(value: Any) -> None:
    seen = looks_like(value)
    assert seen is None or seen in APIS
    seen = looks_like(json.dumps(value))
    assert seen is None or seen in APIS
