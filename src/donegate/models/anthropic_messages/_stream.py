"""Accumulating an Anthropic Messages event stream into the turn the whole body would give.

Events: ``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``
(stop reason, cumulative usage), ``message_stop``, ``ping`` and ``error``. Blocks are keyed by
their ``index``; tool input arrives as ``input_json_delta`` fragments, joined per block and
parsed once at the end, so a call cut off by ``max_tokens`` keeps its partial JSON.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import Ending, Part, ServerToolPart, TextPart, ToolCall, Turn
from donegate.models._rules import make_turn
from donegate.models._sse import loads
from donegate.models._values import MAPPING
from donegate.models.anthropic_messages._parse import (
    API,
    CALL_KEYS,
    STREAM_CUT,
    TEXT_KEYS,
    extras,
    parse_block,
    parse_error_body,
    stop_turn,
    usage_of,
)

__all__ = ["MessageStream"]


class _Block:
    """One content block being streamed: its start object plus the deltas seen so far."""

    __slots__ = ("citations", "json", "signature", "start", "text")

    def __init__(self, start: Mapping[str, Any]) -> None:
        self.start = start
        self.text: list[str] = []
        self.json: list[str] = []
        self.signature: str | None = None
        self.citations: list[Any] = []

    def part(self, path: str, updates: bool) -> Part:
        """The block as the non-streamed body would have held it."""
        start, kind = self.start, self.start.get("type")
        if kind == "text":
            details = {k: v for k, v in start.items() if k not in TEXT_KEYS and v is not None}
            initial = details.pop("citations", None)
            citations = [*(initial if isinstance(initial, list) else ()), *self.citations]
            if citations:
                details["citations"] = citations
            head = start.get("text")
            text = (head if isinstance(head, str) else "") + "".join(self.text)
            return TextPart(text=text, provider_details=details or None)
        if kind == "thinking":
            block: dict[str, Any] = dict(start)
            head = start.get("thinking")
            block["thinking"] = (head if isinstance(head, str) else "") + "".join(self.text)
            if self.signature is not None:
                block["signature"] = self.signature
            return parse_block(block, path, updates=updates)
        if kind == "tool_use":
            call_id, name, initial = start.get("id"), start.get("name"), start.get("input")
            if not self.json and isinstance(initial, MAPPING) and initial:
                return parse_block(start, path)
            return ToolCall.from_raw(
                id=call_id if isinstance(call_id, str) else "",
                name=name if isinstance(name, str) else "",
                arguments_raw="".join(self.json),
                provider_details=extras(start, CALL_KEYS),
            )
        part = parse_block(start, path)
        if self.json and isinstance(part, ServerToolPart):  # server_tool_use input fragments
            try:
                value = json.loads("".join(self.json))
            except ValueError:
                value = None
            if isinstance(value, dict):
                part = dataclasses.replace(part, data={**part.data, "input": value})
        return part


class MessageStream:
    """Builds one `Turn` from Messages API server-sent events."""

    def __init__(self, *, updates: bool = False) -> None:
        self._updates = updates
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, Any] = {}
        self._stop_reason: Any = None
        self._stop_details: Any = None
        self._model: str | None = None
        self._id: str | None = None
        self._stopped = False
        self._error: Mapping[str, Any] | None = None

    def feed(self, event: str | None, data: str) -> str:
        """Take one event; return the visible text it added."""
        try:
            payload = loads(data)
        except ValueError:
            return ""
        if not isinstance(payload, MAPPING):
            return ""
        kind = payload.get("type")
        if not isinstance(kind, str):
            kind = event
        if kind == "content_block_delta":
            return self._delta(payload)
        if kind == "content_block_start":
            index, block = payload.get("index"), payload.get("content_block")
            if isinstance(index, int) and isinstance(block, MAPPING):
                self._blocks[index] = _Block(block)
        elif kind == "message_start":
            message = payload.get("message")
            if isinstance(message, MAPPING):
                self._message_start(message)
        elif kind == "message_delta":
            delta, usage = payload.get("delta"), payload.get("usage")
            if isinstance(delta, MAPPING):
                self._stop_reason = delta.get("stop_reason", self._stop_reason)
                self._stop_details = delta.get("stop_details", self._stop_details)
            self._merge_usage(usage)
        elif kind == "message_stop":
            self._stopped = True
        elif kind == "error":
            self._error = payload
        return ""

    def _message_start(self, message: Mapping[str, Any]) -> None:
        if isinstance(message.get("id"), str):
            self._id = message["id"]
        if isinstance(message.get("model"), str):
            self._model = message["model"]
        self._merge_usage(message.get("usage"))

    def _merge_usage(self, usage: Any) -> None:
        """Usage on ``message_delta`` is cumulative: later non-null counts replace earlier ones."""
        if isinstance(usage, MAPPING):
            self._usage.update((k, v) for k, v in usage.items() if v is not None)

    def _delta(self, payload: Mapping[str, Any]) -> str:
        index, delta = payload.get("index"), payload.get("delta")
        if not isinstance(index, int) or not isinstance(delta, MAPPING):
            return ""
        kind = delta.get("type")
        block = self._blocks.get(index)
        if block is None:  # a delta without its start: infer the block from the delta
            guess = {"thinking_delta": "thinking", "signature_delta": "thinking"}.get(
                kind if isinstance(kind, str) else "", "text"
            )
            if kind == "input_json_delta":
                guess = "tool_use"
            block = self._blocks[index] = _Block({"type": guess})
        if kind == "text_delta":
            text = delta.get("text")
            if isinstance(text, str):
                block.text.append(text)
                return text if block.start.get("type") == "text" else ""
        elif kind == "input_json_delta":
            if isinstance(delta.get("partial_json"), str):
                block.json.append(delta["partial_json"])
        elif kind == "thinking_delta":
            if isinstance(delta.get("thinking"), str):
                block.text.append(delta["thinking"])
        elif kind == "signature_delta":
            if isinstance(delta.get("signature"), str):
                block.signature = delta["signature"]  # replaces, as the SDK does
        elif kind == "citations_delta" and delta.get("citation") is not None:
            block.citations.append(delta["citation"])
        return ""

    def _part(self, index: int) -> Part:
        """A block as a part; a malformed block is kept as data rather than failing the turn."""
        block = self._blocks[index]
        try:
            return block.part(f"content[{index}]", self._updates)
        except WireFormatError:
            kind = block.start.get("type")
            return ServerToolPart(
                name=kind if isinstance(kind, str) else "unknown", data=block.start
            )

    def finish(self) -> Turn:
        """The turn: an ``error`` event is an error, no ``message_stop`` is `truncated`."""
        parts = [self._part(i) for i in sorted(self._blocks)]
        usage = usage_of(self._usage, strict=False)
        if self._error is not None:
            turn = parse_error_body(None, self._error, parts=parts, usage=usage)
            return dataclasses.replace(turn, model=self._model, response_id=self._id)
        if not self._stopped:
            return make_turn(
                api=API,
                signal=Ending.TRUNCATED,
                parts=parts,
                raw_reason=self._stop_reason if isinstance(self._stop_reason, str) else None,
                detail=STREAM_CUT,
                usage=usage,
                model=self._model,
                response_id=self._id,
            )
        return stop_turn(
            parts=parts,
            stop_reason=self._stop_reason,
            stop_details=self._stop_details,
            usage=usage,
            model=self._model,
            response_id=self._id,
        )
