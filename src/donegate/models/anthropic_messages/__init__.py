"""Anthropic Messages API (``/v1/messages``), also as Bedrock ``InvokeModel`` and Vertex bodies.

Signals: ``stop_reason`` (``end_turn``, ``stop_sequence``, ``tool_use``, ``max_tokens``,
``model_context_window_exceeded``, ``pause_turn``, ``refusal`` with ``stop_details``) read
together with the content blocks: ``text``, ``thinking`` / ``redacted_thinking`` (never visible
text), client ``tool_use`` calls, and server-side tool blocks (``server_tool_use``,
``*_tool_result``), which need no client action and so never make a turn ``tool_use``.

Opus 5.5 progress updates arrive as ordinary ``thinking`` blocks; no block field marks them. Under
``thinking.display: "updates"`` every thinking block with text is one, so an adapter built with
``AnthropicMessages(thinking_display="updates")`` marks those `ThinkingPart.progress`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import Part, Turn
from donegate.models._sse import accumulate, iter_sse
from donegate.models.anthropic_messages._parse import (
    API,
    parse_block,
    parse_error_body,
    stop_turn,
    usage_of,
)
from donegate.models.anthropic_messages._render import render_response
from donegate.models.anthropic_messages._request import parse_request, render_request
from donegate.models.anthropic_messages._stream import MessageStream
from donegate.models.base import ModelRequest, WireResponse

__all__ = ["WIRE", "AnthropicMessages", "MessageStream"]


class AnthropicMessages:
    """Wire mapping for the Anthropic Messages API."""

    name = API

    def __init__(self, *, thinking_display: str | None = None) -> None:
        self.thinking_display = thinking_display
        """The request's ``thinking.display``; ``"updates"`` marks text thinking as progress."""

    @property
    def _updates(self) -> bool:
        return self.thinking_display == "updates"

    # -- responses ---------------------------------------------------------------------------

    def parse_response(self, body: Any) -> Turn:
        """Classify a non-streamed ``message`` body (or a 200 ``error`` envelope)."""
        if not isinstance(body, Mapping):
            raise WireFormatError(API, f"expected an object, got {type(body).__name__}")
        if body.get("type") == "error" or ("error" in body and "content" not in body):
            return parse_error_body(None, body)
        content = body.get("content")
        if content is None:
            content = []
        elif not isinstance(content, list):
            raise WireFormatError(API, "expected a list", path="content")
        updates = self._updates
        parts: list[Part] = [
            parse_block(block, f"content[{i}]", updates=updates) for i, block in enumerate(content)
        ]
        model, rid = body.get("model"), body.get("id")
        if model is not None and not isinstance(model, str):
            raise WireFormatError(API, "expected a string", path="model")
        if rid is not None and not isinstance(rid, str):
            raise WireFormatError(API, "expected a string", path="id")
        return stop_turn(
            parts=parts,
            stop_reason=body.get("stop_reason"),
            stop_details=body.get("stop_details"),
            usage=usage_of(body.get("usage")),
            model=model,
            response_id=rid,
        )

    def parse_error(self, status: int, body: Any, *, retry_after: float | None = None) -> Turn:
        """The ending an HTTP error body implies (``prompt is too long`` -> context exceeded)."""
        return parse_error_body(status, body, retry_after=retry_after)

    def stream(self) -> MessageStream:
        """A fresh accumulator for one streamed message."""
        return MessageStream(updates=self._updates)

    def parse_stream(self, text: str) -> Turn:
        """Classify a whole SSE stream."""
        return accumulate(self.stream(), iter_sse(text)).finish()

    # -- requests ----------------------------------------------------------------------------

    def render_request(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API body for `request`."""
        return render_request(request)

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        """The canonical request a Messages API body describes."""
        return parse_request(body)

    # -- serving (test kit) ------------------------------------------------------------------

    def render_response(self, turn: Turn, *, stream: bool = False) -> WireResponse:
        """What the Messages API would answer for `turn`."""
        return render_response(turn, stream=stream)


WIRE = AnthropicMessages()
"""The instance the registry hands out."""
