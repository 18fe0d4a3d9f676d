"""OpenAI Chat Completions, and every server that speaks it (Azure, Groq, vLLM, Ollama, ...).

Signals: ``finish_reason`` (``stop``, ``tool_calls``, legacy ``function_call``, ``length``,
``content_filter``), ``message.refusal``, and the compatible servers' ``reasoning_content`` /
``reasoning`` fields (thinking, never visible text). A tool call counts whatever the finish
reason says: Gemini's compatible endpoint and forced legacy calls report ``stop``.

Modules: ``_parse`` classifies whole bodies, ``_stream`` accumulates SSE chunks, ``_request``
renders and reads request bodies, ``_render`` serves a turn back as the API would (test kit).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.messages import Turn
from donegate.models import _openai_common as common
from donegate.models._sse import accumulate, iter_sse
from donegate.models.base import ModelRequest, WireResponse
from donegate.models.openai_chat._parse import API, parse_body
from donegate.models.openai_chat._render import render_response
from donegate.models.openai_chat._request import encode_request, parse_request, render_request
from donegate.models.openai_chat._stream import ChatStream

__all__ = ["API", "WIRE", "ChatStream", "OpenAIChat"]


class OpenAIChat:
    """Wire mapping for ``/v1/chat/completions``."""

    name = API

    def parse_response(self, body: Any) -> Turn:
        """Classify a non-streamed completion."""
        return parse_body(body)

    def parse_error(self, status: int, body: Any, *, retry_after: float | None = None) -> Turn:
        """The ending an error body implies."""
        return common.openai_error_turn(API, status, body, retry_after=retry_after)

    def stream(self) -> ChatStream:
        """A fresh accumulator for a streamed completion."""
        return ChatStream()

    def parse_stream(self, text: str) -> Turn:
        """Classify a whole SSE stream."""
        return accumulate(self.stream(), iter_sse(text)).finish()

    def render_request(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for a canonical request."""
        return render_request(request)

    def encode_request(self, request: ModelRequest, *, model: str | None = None) -> bytes:
        """`render_request`'s body as the bytes an SDK sends (history encoded once)."""
        return encode_request(request, model=model)

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        """The canonical request a body describes; unknown roles are ignored, unknown fields
        are kept as ``extra_body``."""
        return parse_request(body)

    def render_response(self, turn: Turn, *, stream: bool = False) -> WireResponse:
        """What OpenAI would answer for `turn`."""
        return render_response(turn, stream=stream)


WIRE = OpenAIChat()
"""The instance the registry hands out."""
