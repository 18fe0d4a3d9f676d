"""Which wire format a response body looks like, from its shape alone.

`classify` trusts the ``api`` it is given: an OpenAI body read as Gemini is not an exception
but a turn with no candidates, a silent `error`. `looks_like` gives a second opinion, from
the fields each format always carries, so the CLI can say "this looks like openai-chat". It
only ever names a format when a field that format is known by is present; anything else is
None (no opinion), never a guess.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from donegate.models._sse import iter_sse

__all__ = ["FAMILIES", "looks_like", "same_family"]

FAMILIES: tuple[frozenset[str], ...] = (frozenset({"openai-chat", "mistral"}),)
"""Formats whose bodies share a shape (Mistral's chat completions are OpenAI's), so a body of
one is no sign of a mistake when the other was chosen."""

_ANTHROPIC_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)
_COHERE_EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "message-end",
    }
)
_COHERE_V1_EVENTS = frozenset({"stream-start", "text-generation", "stream-end"})
_BEDROCK_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)


def same_family(a: str, b: str) -> bool:
    """True when bodies of `a` and `b` look alike (the same format, or one family)."""
    return a == b or any(a in f and b in f for f in FAMILIES)


def _mistral_content(message: Any) -> bool:
    """Mistral's content chunks: a list holding a ``thinking`` chunk whose text is a list."""
    content = message.get("content") if isinstance(message, Mapping) else None
    return isinstance(content, list) and any(
        isinstance(c, Mapping)
        and c.get("type") == "thinking"
        and isinstance(c.get("thinking"), list)
        for c in content
    )


def _object(body: Mapping[str, Any]) -> str | None:
    """The format of one JSON object: a whole response or one stream chunk."""
    kind, obj = body.get("type"), body.get("object")
    if obj in ("chat.completion", "chat.completion.chunk") or isinstance(body.get("choices"), list):
        choices = body.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        if isinstance(first, Mapping) and _mistral_content(first.get("message")):
            return "mistral"
        return "openai-chat"
    if obj == "response" or (isinstance(kind, str) and kind.startswith("response.")):
        return "openai-responses"
    if isinstance(body.get("output"), list) and "status" in body:
        return "openai-responses"
    if kind == "message" and isinstance(body.get("content"), list):
        return "anthropic-messages"
    if kind in _ANTHROPIC_EVENTS:
        return "anthropic-messages"
    if "candidates" in body or "promptFeedback" in body:
        return "gemini"
    output = body.get("output")
    if "stopReason" in body or (isinstance(output, Mapping) and "message" in output):
        return "bedrock-converse"
    if any(k in body for k in _BEDROCK_EVENTS if k != "metadata"):
        return "bedrock-converse"
    if kind in _COHERE_EVENTS or body.get("event_type") in _COHERE_V1_EVENTS:
        return "cohere"
    message = body.get("message")
    if isinstance(message, Mapping) and "finish_reason" in body:
        return "cohere"  # v2: the message and its finish reason side by side
    if "generation_id" in body and "text" in body:
        return "cohere"  # v1
    return None


def _stream_objects(text: str) -> Iterator[tuple[str | None, Any]]:
    for event, data in iter_sse(text):
        try:
            value = json.loads(data)
        except ValueError:
            continue
        yield event, value


def _named(event: str | None) -> str | None:
    """The format an SSE ``event:`` name belongs to."""
    if event is None:
        return None
    if event in _ANTHROPIC_EVENTS:
        return "anthropic-messages"
    if event.startswith("response."):
        return "openai-responses"
    if event in _COHERE_EVENTS:
        return "cohere"
    if event in _BEDROCK_EVENTS and event != "metadata":
        return "bedrock-converse"
    return None


def looks_like(body: Any) -> str | None:
    """The wire format `body` looks like, or None when its shape says nothing certain.

    `body` is parsed JSON (an object, or a JSON-array stream of Gemini chunks) or raw SSE text;
    the first event of a stream whose shape is known decides.
    """
    if isinstance(body, Mapping):
        return _object(body)
    if isinstance(body, list):
        first = next((c for c in body if isinstance(c, Mapping)), None)
        return _object(first) if first is not None else None
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if not isinstance(body, str):
        return None
    for event, value in _stream_objects(body):
        found = _named(event) or (_object(value) if isinstance(value, Mapping) else None)
        if found is not None:
            return found
    return None
