"""Amazon Bedrock Converse / ConverseStream: the JSON wire mapping.

Converse is Bedrock's model-neutral chat API (Claude, Nova, Llama, Mistral... behind one shape).
The AWS SDKs sign it and stream it as binary AWS event-stream frames; this module works on the
JSON inside: a Converse body, ConverseStream events as JSON (one per SSE ``data:`` line, either
wrapped as ``{"messageStart": {...}}`` as boto3 yields them or named by the SSE ``event:`` field),
and the ``{"message": ...}`` error bodies, whose ``x-amzn-ErrorType`` header is usually lost, so
the message text decides. The emulator does not serve Bedrock, so `render_response` refuses.
"""

from __future__ import annotations

from typing import Any

from donegate.messages import Turn
from donegate.models import _rules
from donegate.models._unserved import UnservedWire
from donegate.models.bedrock_converse._parse import (
    API,
    error_turn,
    fail,
    parse_parts,
    parse_usage,
    stop_signal,
)
from donegate.models.bedrock_converse._request import parse_request, render_request
from donegate.models.bedrock_converse._stream import BedrockConverseStream

__all__ = ["WIRE", "BedrockConverse", "BedrockConverseStream"]


class BedrockConverse(UnservedWire):
    """The ``bedrock-converse`` wire format: Bedrock Runtime Converse and ConverseStream."""

    def __init__(self) -> None:
        super().__init__(
            name=API,
            label="Bedrock Converse",
            error_turn=error_turn,
            stream=BedrockConverseStream,
            render_request=render_request,
            parse_request=parse_request,
            body_name="a Converse body",
        )

    def parse_body(self, body: dict[str, Any]) -> Turn:
        """Classify a Converse response body."""
        if "output" not in body and any(k in body for k in ("message", "Message", "__type")):
            return error_turn(None, body, None)
        output = body.get("output")
        if not isinstance(output, dict):
            raise fail("output", "missing or not an object")
        message = output.get("message")
        if not isinstance(message, dict):
            raise fail("output.message", "missing or not an object")
        parts = parse_parts(message.get("content", []), "output.message.content")
        stop = stop_signal(body.get("stopReason"))
        return _rules.stopped_turn(
            api=API, parts=parts, stop=stop, usage=parse_usage(body.get("usage"))
        )


WIRE = BedrockConverse()
"""The instance the registry imports."""
