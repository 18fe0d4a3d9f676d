"""Mistral La Plateforme chat completions: the wire mapping.

Mistral's ``/v1/chat/completions`` looks like OpenAI's but differs where it matters here: a tool
call's ``function.arguments`` may be a JSON object instead of a string, ``content`` may be a list
of chunks (``text``, and ``thinking`` chunks from Magistral holding their own list of text chunks),
``finish_reason`` adds ``model_length`` and ``error``, and error bodies are
``{"object": "error", "message": ..., "type", "code"}`` (``message`` itself an object on 422
validation errors) or FastAPI's ``{"detail": ...}``. Streams are OpenAI-style ``data:`` chunks
closed by ``[DONE]``. The emulator does not serve Mistral, so `render_response` refuses.
"""

from __future__ import annotations

from typing import Any

from donegate.messages import Turn
from donegate.models import _rules
from donegate.models._unserved import UnservedWire
from donegate.models._values import opt_str
from donegate.models.mistral._parse import (
    API,
    error_turn,
    fail,
    is_error_body,
    message_parts,
    parse_usage,
    stop_signal,
)
from donegate.models.mistral._request import parse_request, render_request
from donegate.models.mistral._stream import MistralStream

__all__ = ["WIRE", "Mistral", "MistralStream"]


class Mistral(UnservedWire):
    """The ``mistral`` wire format: La Plateforme ``/v1/chat/completions``."""

    def __init__(self) -> None:
        super().__init__(
            name=API,
            label="Mistral",
            error_turn=error_turn,
            stream=MistralStream,
            render_request=render_request,
            parse_request=parse_request,
            body_name="a chat completion",
        )

    def parse_body(self, body: dict[str, Any]) -> Turn:
        """Classify a chat completion body."""
        if is_error_body(body):
            return error_turn(None, body, None)
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise fail("choices", "missing, empty or not a list")
        choice = choices[0]
        if not isinstance(choice, dict):
            raise fail("choices[0]", "expected an object")
        message = choice.get("message")
        if not isinstance(message, dict):
            raise fail("choices[0].message", "missing or not an object")
        parts = message_parts(message, "choices[0].message")
        return _rules.stopped_turn(
            api=API,
            parts=parts,
            stop=stop_signal(choice.get("finish_reason"), "choices[0].finish_reason"),
            usage=parse_usage(body.get("usage")),
            model=opt_str(body.get("model")),
            response_id=opt_str(body.get("id")),
        )


WIRE = Mistral()
"""The instance the registry imports."""
