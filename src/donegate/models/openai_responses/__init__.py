"""The OpenAI Responses API (``/v1/responses``), also served by xAI and Bedrock Mantle.

Modules: ``_items`` maps output items to parts and back, ``_parse`` classifies whole bodies and
error bodies, ``_stream`` accumulates SSE events, ``_request`` renders and reads request bodies,
``_render`` serves a turn back as the API would (test kit).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.messages import Turn
from donegate.models._sse import accumulate, iter_sse
from donegate.models.base import ModelRequest, WireResponse
from donegate.models.openai_responses._items import API
from donegate.models.openai_responses._parse import parse_body, parse_error
from donegate.models.openai_responses._render import render_response
from donegate.models.openai_responses._request import parse_request, render_request
from donegate.models.openai_responses._stream import ResponsesStream

__all__ = ["WIRE", "OpenAIResponses", "ResponsesStream"]


class OpenAIResponses:
    """Wire mapping for ``/v1/responses``: ``status`` and typed output items, no finish_reason."""

    name = API

    def parse_response(self, body: Any) -> Turn:
        """Classify a non-streamed response object (or a 200 error envelope)."""
        return parse_body(body)

    def parse_error(self, status: int, body: Any, *, retry_after: float | None = None) -> Turn:
        """The ending an HTTP error body implies."""
        return parse_error(status, body, retry_after=retry_after)

    def stream(self) -> ResponsesStream:
        """A fresh accumulator for one streamed response."""
        return ResponsesStream()

    def parse_stream(self, text: str) -> Turn:
        """Classify a whole SSE stream."""
        return accumulate(ResponsesStream(whole=True), iter_sse(text)).finish()

    def render_request(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON request body for a canonical request."""
        return render_request(request)

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        """The canonical request a body describes (reads emulator request logs)."""
        return parse_request(body)

    def render_response(self, turn: Turn, *, stream: bool = False) -> WireResponse:
        """What the Responses API would answer for `turn`; UnsupportedTurn for paused."""
        return render_response(turn, stream=stream)


WIRE = OpenAIResponses()
"""The instance the registry hands out."""
