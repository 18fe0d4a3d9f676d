"""The rules every adapter shares: no stop reason anywhere, and context overflow wordings.

Fixtures follow each provider's documented wire format: OpenAI's Chat Completions and Responses
references, Anthropic's Messages streaming events, Gemini's ``GenerateContentResponse``, Bedrock's
ConverseStream events, Mistral's and Cohere's v2 chat references, and the error bodies that
OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LiteLLM, Groq, DeepSeek, OpenRouter,
Perplexity, Mistral, Text Generation Inference) document or print.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from donegate import classify
from donegate.messages import Ending
from donegate.models._rules import (
    CONTEXT_CODES,
    CUT_OFF,
    NO_REASON,
    context_exceeded,
    context_exceeded_message,
    missing_reason,
)


def sse(*events: tuple[str | None, Any]) -> str:
    """SSE text; an event name of None writes a bare ``data:`` line."""
    out = []
    for name, data in events:
        if name is not None:
            out.append(f"event: {name}\n")
        out.append(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out)


def test_the_rule_itself() -> None:
    assert missing_reason(ended=True) == (Ending.ERROR, NO_REASON)
    assert missing_reason(ended=False) == (Ending.TRUNCATED, CUT_OFF)
    assert NO_REASON == "no finish reason"
    assert CUT_OFF == "stream ended before its final event"


# -- no stop reason anywhere: whole bodies -----------------------------------------------------

BODIES_WITHOUT_A_REASON: dict[str, Any] = {
    "openai-chat": {
        "id": "chatcmpl-AqX9",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}}],
    },
    "openai-responses": {
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "4", "annotations": []}],
            }
        ],
    },
    "anthropic-messages": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "4"}],
        "stop_reason": None,
    },
    "gemini": {"candidates": [{"content": {"role": "model", "parts": [{"text": "4"}]}}]},
    "bedrock-converse": {
        "output": {"message": {"role": "assistant", "content": [{"text": "4"}]}},
        "usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4},
    },
    "mistral": {
        "id": "cmpl-e5cc70bb28c444948073e77776eb30ef",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}}],
    },
    "cohere": {
        "id": "c14c80c3-18eb-4519-9460-6c92edd8cfb4",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "4"}]},
    },
}


@pytest.mark.parametrize("api", sorted(BODIES_WITHOUT_A_REASON))
def test_a_whole_body_without_a_stop_reason_is_an_error(api: str) -> None:
    turn = classify(api, BODIES_WITHOUT_A_REASON[api])
    assert (turn.ending, turn.detail) == (Ending.ERROR, NO_REASON)
    assert turn.text == "4"  # the text is kept for the record, never trusted as complete


# -- no stop reason anywhere: streams, ended normally or cut ----------------------------------

_CHUNK = {
    "id": "chatcmpl-AqX9",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "4"}}],
}
_USAGE_CHUNK = {
    "id": "chatcmpl-AqX9",
    "object": "chat.completion.chunk",
    "choices": [],
    "usage": {"prompt_tokens": 22, "completion_tokens": 5, "total_tokens": 27},
}
_MESSAGES = [
    (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "4"}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
]
_BEDROCK = [
    ("messageStart", {"role": "assistant"}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "4"}}),
    ("contentBlockStop", {"contentBlockIndex": 0}),
]
_COHERE = [
    ("message-start", {"type": "message-start", "id": "c14c", "delta": {"message": {}}}),
    (
        "content-delta",
        {
            "type": "content-delta",
            "index": 0,
            "delta": {"message": {"content": {"text": "4"}}},
        },
    ),
    ("content-end", {"type": "content-end", "index": 0}),
]
_RESPONSES = [
    (
        "response.output_item.added",
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            },
        },
    ),
    (
        "response.output_text.delta",
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "4",
        },
    ),
]
_GEMINI = {"candidates": [{"content": {"role": "model", "parts": [{"text": "4"}]}}]}

# (api, a stream that reached its normal end with no reason, the same stream cut off)
STREAMS: list[tuple[str, str, str]] = [
    (
        "openai-chat",
        sse((None, _CHUNK), (None, _USAGE_CHUNK), (None, "[DONE]")),
        sse((None, _CHUNK), (None, _USAGE_CHUNK)),
    ),
    ("mistral", sse((None, _CHUNK), (None, "[DONE]")), sse((None, _CHUNK))),
    (
        "anthropic-messages",
        sse(*_MESSAGES, ("message_stop", {"type": "message_stop"})),
        sse(*_MESSAGES),
    ),
    (
        "bedrock-converse",
        sse(*_BEDROCK, ("metadata", {"usage": {"inputTokens": 3, "outputTokens": 1}})),
        sse(*_BEDROCK),
    ),
    ("cohere", sse(*_COHERE, (None, "[DONE]")), sse(*_COHERE)),
    ("openai-responses", sse(*_RESPONSES, (None, "[DONE]")), sse(*_RESPONSES)),
    ("gemini", json.dumps([_GEMINI]), json.dumps([_GEMINI])[:-1]),  # a closed JSON array
]


@pytest.mark.parametrize(("api", "ended", "cut"), STREAMS, ids=[s[0] for s in STREAMS])
def test_a_stream_without_a_stop_reason(api: str, ended: str, cut: str) -> None:
    """Streamed or not, one rule: a normal end with no reason is an error, a cut is truncated."""
    turn = classify(api, ended, stream=True)
    assert (turn.ending, turn.detail) == (Ending.ERROR, NO_REASON)
    assert turn.text == "4"
    turn = classify(api, cut, stream=True)
    assert (turn.ending, turn.detail) == (Ending.TRUNCATED, CUT_OFF)
    assert turn.text == "4"


def test_gemini_sse_has_no_closing_event_so_it_reads_as_cut() -> None:
    turn = classify("gemini", sse((None, _GEMINI)), stream=True)
    assert (turn.ending, turn.detail) == (Ending.TRUNCATED, CUT_OFF)


def test_the_streamed_and_unstreamed_snowflake_turns_agree() -> None:
    """Snowflake Cortex never sends ``finish_reason``: both forms say `error`, same detail."""
    streamed = classify(
        "openai-chat", sse((None, _CHUNK), (None, _USAGE_CHUNK), (None, "[DONE]")), stream=True
    )
    whole = classify("openai-chat", BODIES_WITHOUT_A_REASON["openai-chat"])
    assert (streamed.ending, streamed.detail) == (whole.ending, whole.detail)
    assert streamed.usage.output_tokens == 5


def test_a_reason_still_wins_over_the_missing_reason_rule() -> None:
    stopped = {**_CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
    turn = classify(
        "openai-chat", sse((None, _CHUNK), (None, stopped), (None, "[DONE]")), stream=True
    )
    assert turn.ending is Ending.TRUNCATED and turn.raw_reason == "length"


# -- context overflow across OpenAI-compatible servers -----------------------------------------

OVERFLOWS: list[tuple[str, Any]] = [
    (
        "openai",
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, your "
                "messages resulted in 130412 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    (
        "perplexity",
        {
            "error": {
                "message": "The total length of all messages is too long.",
                "type": "too_many_prompt_tokens",
                "code": 400,
            }
        },
    ),
    (
        "perplexity-type-only",
        {"error": {"message": "Bad request.", "type": "too_many_prompt_tokens", "code": 400}},
    ),
    (
        "llama.cpp",
        {
            "error": {
                "code": 400,
                "message": "request (9412 tokens) exceeds the available context size "
                "(8192 tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 9412,
                "n_ctx": 8192,
            }
        },
    ),
    (
        "llama.cpp-type-only",
        {"error": {"code": 400, "message": "", "type": "exceed_context_size_error"}},
    ),
    (
        "vllm",
        {
            "object": "error",
            "message": "This model's maximum context length is 16384 tokens. However, you "
            "requested 19591 tokens (9591 in the messages, 10000 in the completion). Please "
            "reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "vllm-decoder-prompt",
        {
            "object": "error",
            "message": "The decoder prompt (length 21535) is longer than the maximum model "
            "length of 16384. Make sure that `max_model_len` is no smaller than the number of "
            "text tokens.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "vllm-total-length",
        {
            "object": "error",
            "message": "The prompt (total length 25938) is too long to fit into the model "
            "(context length 4096).",
            "type": "BadRequestError",
            "code": 400,
        },
    ),
    (
        "ollama",
        {
            "error": {
                "message": "the input length exceeds the context length",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
    ),
    (
        "litellm-proxy",
        {
            "error": {
                "message": "litellm.ContextWindowExceededError: litellm.BadRequestError: "
                "AnthropicException - Received Model Group=claude-sonnet",
                "type": None,
                "param": None,
                "code": "400",
            }
        },
    ),
    (
        "groq",
        {
            "error": {
                "message": "Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    (
        "deepseek",
        {
            "error": {
                "message": "This model's maximum context length is 65536 tokens. However, you "
                "requested 70000 tokens (70000 in the messages, 0 in the completion).",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
    ),
    (
        "openrouter",
        {
            "error": {
                "message": "This endpoint's maximum context length is 131072 tokens. However, "
                "you requested about 200000 tokens (200000 of text input). Please reduce the "
                'length of either one, or use the "middle-out" transform.',
                "code": 400,
                "metadata": {"provider_name": None},
            }
        },
    ),
    (
        "mistral",
        {
            "object": "error",
            "message": "Prompt contains 40000 tokens and 0 draft tokens, too large for model "
            "with 32768 maximum context length",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        },
    ),
    (
        "xai",
        {
            "code": "Client specified an invalid argument",
            "error": "This model's maximum prompt length is 131072 but the request contains "
            "150000 tokens.",
        },
    ),
    (
        "tgi",
        {
            "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= "
            "4096. Given: 4000 `inputs` tokens and 1000 `max_new_tokens`",
            "error_type": "validation",
        },
    ),
]


@pytest.mark.parametrize("body", [b for _, b in OVERFLOWS], ids=[n for n, _ in OVERFLOWS])
def test_context_overflow_bodies_are_context_exceeded(body: Any) -> None:
    turn = classify("openai-chat", body, status=400)
    assert turn.ending is Ending.CONTEXT_EXCEEDED
    assert (turn.tool_calls, turn.text) == ((), "")


@pytest.mark.parametrize("body", [b for _, b in OVERFLOWS[:4]], ids=[n for n, _ in OVERFLOWS[:4]])
def test_the_same_bodies_read_through_responses_and_mistral(body: Any) -> None:
    assert classify("openai-responses", body, status=400).ending is Ending.CONTEXT_EXCEEDED
    assert classify("mistral", body, status=400).ending is Ending.CONTEXT_EXCEEDED


NOT_OVERFLOWS: list[tuple[str, int, Any]] = [
    (
        "groq-tpm-429",
        429,
        {
            "error": {
                "message": "Request too large for model `llama3-70b-8192` on tokens per minute "
                "(TPM): Limit 6000, Requested 7000, please reduce your message size.",
                "type": "tokens",
                "code": "rate_limit_exceeded",
            }
        },
    ),
    (
        "rate-limit-naming-a-context-code",
        429,
        {"error": {"message": "Slow down.", "type": "too_many_prompt_tokens", "code": 429}},
    ),
    (
        "server-error",
        500,
        {"error": {"message": "maximum context length lookup failed", "type": "server_error"}},
    ),
    (
        "bad-key",
        401,
        {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}},
    ),
    (
        "single-string-too-long",
        400,
        {
            "error": {
                "message": "Invalid 'messages[0].content': string too long.",
                "code": "string_above_max_length",
            }
        },
    ),
]


@pytest.mark.parametrize(
    ("status", "body"), [(s, b) for _, s, b in NOT_OVERFLOWS], ids=[n for n, _, _ in NOT_OVERFLOWS]
)
def test_other_errors_are_not_context_exceeded(status: int, body: Any) -> None:
    assert classify("openai-chat", body, status=status).ending is Ending.ERROR


def test_codes_are_matched_case_blind_and_only_as_strings() -> None:
    assert context_exceeded("", "Context_Length_Exceeded")
    assert context_exceeded("", 400, None, "too_many_prompt_tokens")
    assert not context_exceeded("", 400, None, "invalid_request_error")
    assert not context_exceeded_message("Rate limit reached for requests")
    assert all(code == code.lower() for code in CONTEXT_CODES)


def test_a_200_envelope_with_a_context_code_is_context_exceeded() -> None:
    body = {"error": {"message": "", "type": "too_many_prompt_tokens", "code": 400}}
    assert classify("openai-chat", body).ending is Ending.CONTEXT_EXCEEDED
