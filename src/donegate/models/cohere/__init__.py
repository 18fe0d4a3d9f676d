"""Cohere chat (``/v2/chat``): the wire mapping.

A v2 response is one assistant ``message`` (``content`` items, a ``tool_plan``, ``tool_calls``
whose ``arguments`` is a JSON string) with an upper-case ``finish_reason``. The ``tool_plan``
is the model thinking aloud before its calls, so it becomes a `ThinkingPart`, never visible
text. v1 ``/chat`` bodies (``text``, ``tool_calls`` with ``parameters``) are read too. Streams
are named SSE events (``message-start`` ... ``message-end``); errors are ``{"message": ...}``.
The emulator does not serve Cohere, so `render_response` refuses.
"""

from __future__ import annotations

from typing import Any

from donegate.messages import Turn
from donegate.models import _rules
from donegate.models._unserved import UnservedWire
from donegate.models._values import opt_str
from donegate.models.cohere._parse import (
    API,
    error_turn,
    fail,
    message_parts,
    parse_usage,
    stop_signal,
    v1_parts,
)
from donegate.models.cohere._request import parse_request, render_request
from donegate.models.cohere._stream import CohereStream

__all__ = ["WIRE", "Cohere", "CohereStream"]

_V1_KEYS = ("text", "generation_id", "response_id", "chat_history")


class Cohere(UnservedWire):
    """The ``cohere`` wire format: Cohere chat v2 (and v1 bodies)."""

    def __init__(self) -> None:
        super().__init__(
            name=API,
            label="Cohere",
            error_turn=error_turn,
            stream=CohereStream,
            render_request=render_request,
            parse_request=parse_request,
            body_name="a chat response",
        )

    def parse_body(self, body: dict[str, Any]) -> Turn:
        """Classify a chat response body."""
        message = body.get("message")
        if isinstance(message, dict):
            parts = message_parts(message, "message")
            usage = body.get("usage")
        elif any(k in body for k in _V1_KEYS):
            parts = v1_parts(body)
            usage = body.get("meta")
        elif isinstance(message, str):  # an error body handed over as a 200
            return error_turn(None, body, None)
        else:
            raise fail("message", "missing or not an object")
        stop = stop_signal(body.get("finish_reason"), "finish_reason")
        response_id = opt_str(body.get("id")) or opt_str(body.get("response_id"))
        return _rules.stopped_turn(
            api=API, parts=parts, stop=stop, usage=parse_usage(usage), response_id=response_id
        )


WIRE = Cohere()
"""The instance the registry imports."""
