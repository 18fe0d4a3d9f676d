"""Google Gemini ``generateContent`` / ``streamGenerateContent`` (AI Studio and Vertex AI).

Signals: ``candidates[0].finishReason`` (``STOP``, ``MAX_TOKENS``, the filter reasons, the
rejected-call reasons), ``promptFeedback.blockReason`` when no candidate came back, and Google
API error bodies. Streams are ``alt=sse`` events or, without it, one JSON array of the same
chunks; both read the same way. Integer enums (``$alt=json;enum-encoding=int``) are read as
their names (`_enums`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import Turn
from donegate.models._sse import iter_sse
from donegate.models.base import ModelRequest, WireResponse
from donegate.models.gemini._enums import decode_request
from donegate.models.gemini._errors import error_turn_for
from donegate.models.gemini._parse import API, array_items, parse_body
from donegate.models.gemini._render import render_response
from donegate.models.gemini._request import parse_request, render_request
from donegate.models.gemini._stream import GeminiStream

__all__ = ["WIRE", "Gemini"]


class Gemini:
    """Wire mapping for Gemini's native ``generateContent`` API."""

    name = API

    def parse_response(self, body: Any) -> Turn:
        """Classify a ``GenerateContentResponse`` (a list is read as a JSON-array stream)."""
        if isinstance(body, list):
            acc = GeminiStream()
            for i, chunk in enumerate(body):
                if not isinstance(chunk, Mapping):
                    raise WireFormatError(API, "a chunk must be an object", path=f"[{i}]")
                acc.take(chunk)
            acc.end()
            return acc.finish()
        turn = parse_body(body)
        if turn is None:  # a 200 carrying {"error": {...}}
            return error_turn_for(None, body)
        return turn

    def parse_error(self, status: int, body: Any, *, retry_after: float | None = None) -> Turn:
        """The ending an error body implies (never raises)."""
        return error_turn_for(status, body, retry_after=retry_after)

    def stream(self) -> GeminiStream:
        """A fresh accumulator for one streamed response."""
        return GeminiStream()

    def parse_stream(self, text: str) -> Turn:
        """Classify a whole stream: SSE text, or a (possibly cut-off) JSON array."""
        acc = GeminiStream()
        if text.lstrip().startswith("["):
            items = array_items(text)
            while True:
                try:
                    acc.take(next(items))
                except StopIteration as stop:
                    if stop.value:
                        acc.end()
                    break
        else:
            for event, data in iter_sse(text):
                acc.feed(event, data)
        return acc.finish()

    def render_request(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for a canonical request (model and streaming go in the URL)."""
        return render_request(request)

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        """The canonical request a body describes (integer enums read as their names)."""
        return parse_request(decode_request(body))

    def render_response(self, turn: Turn, *, stream: bool = False) -> WireResponse:
        """Gemini's HTTP answer for a turn; refused and paused turns raise `UnsupportedTurn`."""
        return render_response(turn, stream=stream)


WIRE = Gemini()
"""The instance the registry hands out."""
