"""Cohere v2 chat stream events (and v1 ``event_type`` events) accumulated into one turn."""

from __future__ import annotations

from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import Ending, Part, ServerToolPart, TextPart, ThinkingPart, ToolCall
from donegate.models._chunks import ChunkStream
from donegate.models._function_calls import arguments_raw
from donegate.models._values import as_int, opt_str
from donegate.models.cohere._parse import (
    API,
    TOOL_PLAN,
    error_fields,
    parse_usage,
    stop_signal,
    v1_parts,
)


def _message_delta(payload: dict[str, Any]) -> dict[str, Any]:
    """``delta.message`` of an event, or an empty dict."""
    delta = payload.get("delta")
    message = delta.get("message") if isinstance(delta, dict) else None
    return message if isinstance(message, dict) else {}


class _Block:
    __slots__ = ("chunks", "kind")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.chunks: list[str] = []


class _Call:
    __slots__ = ("call_id", "chunks", "name")

    def __init__(self) -> None:
        self.call_id = ""
        self.name = ""
        self.chunks: list[str] = []


class CohereStream(ChunkStream):
    """Accumulates ``/v2/chat`` stream events into one `Turn`; ``message-end`` is final."""

    api = API

    def __init__(self) -> None:
        super().__init__()
        self._plan: list[str] = []
        self._blocks: dict[int, _Block] = {}
        self._calls: dict[int, _Call] = {}
        self._v1_parts: list[Part] = []
        self._failure: str | None = None

    def _take(self, event: str | None, payload: dict[str, Any]) -> str:
        """Take one event (v2 ``type``, v1 ``event_type``); return the visible text it added."""
        kind = payload.get("type") or payload.get("event_type") or event
        if kind == "error" or (kind is None and "message" in payload):
            self._error = error_fields(payload)
            return ""
        if kind == "message-start":
            self._id = opt_str(payload.get("id")) or self._id
        elif kind == "tool-plan-delta":
            plan = _message_delta(payload).get("tool_plan")
            if isinstance(plan, str):
                self._plan.append(plan)
        elif kind in ("content-start", "content-delta"):
            return self._content(payload)
        elif kind in ("tool-call-start", "tool-call-delta"):
            self._tool_call(payload)
        elif kind == "message-end":
            delta = payload.get("delta")
            delta = delta if isinstance(delta, dict) else {}
            self._end(delta.get("finish_reason"), delta.get("usage"))
            self._failure = opt_str(delta.get("error"))
        else:
            return self._v1(kind, payload)
        return ""

    def _content(self, payload: dict[str, Any]) -> str:
        content = _message_delta(payload).get("content")
        if not isinstance(content, dict):
            return ""
        index = as_int(payload.get("index"))
        block = self._blocks.get(index)
        if block is None:
            kind = content.get("type")
            if not isinstance(kind, str):
                kind = "thinking" if "thinking" in content else "text"
            block = self._blocks[index] = _Block(kind)
        piece = content.get(block.kind if block.kind in ("text", "thinking") else "text")
        if not isinstance(piece, str):
            return ""
        block.chunks.append(piece)
        return piece if block.kind == "text" else ""

    def _tool_call(self, payload: dict[str, Any]) -> None:
        raw = _message_delta(payload).get("tool_calls")
        if not isinstance(raw, dict):
            return
        call = self._calls.setdefault(as_int(payload.get("index")), _Call())
        call.call_id = call.call_id or (opt_str(raw.get("id")) or "")
        function = raw.get("function")
        if isinstance(function, dict):
            call.name = call.name or (opt_str(function.get("name")) or "")
            if "arguments" in function:
                call.chunks.append(arguments_raw(function["arguments"]))

    def _end(self, reason: Any, usage: Any) -> None:
        self._finish = reason if isinstance(reason, str) else None
        self._finished = True
        self._usage = parse_usage(usage)

    def _v1(self, kind: Any, payload: dict[str, Any]) -> str:
        """The v1 stream: ``text-generation``, ``tool-calls-generation``, ``stream-end``."""
        if kind == "stream-start":
            self._id = opt_str(payload.get("generation_id")) or self._id
        elif kind == "text-generation":
            text = payload.get("text")
            if isinstance(text, str):
                self._blocks.setdefault(0, _Block("text")).chunks.append(text)
                return text
        elif kind == "tool-calls-generation":
            try:
                self._v1_parts = v1_parts({"tool_calls": payload.get("tool_calls")})
            except WireFormatError:
                self._v1_parts = []
        elif kind == "stream-end":
            response = payload.get("response")
            meta = response.get("meta") if isinstance(response, dict) else None
            self._end(payload.get("finish_reason"), meta)
        return ""

    def _parts(self) -> list[Part]:
        parts: list[Part] = []
        plan = "".join(self._plan)
        if plan:
            parts.append(ThinkingPart(text=plan, provider_details=TOOL_PLAN))
        for index in sorted(self._blocks):
            block = self._blocks[index]
            text = "".join(block.chunks)
            if block.kind == "thinking":
                parts.append(ThinkingPart(text=text))
            elif block.kind == "text":
                if text:
                    parts.append(TextPart(text=text))
            else:
                parts.append(ServerToolPart(name=block.kind, data={"type": block.kind}))
        for index in sorted(self._calls):
            call = self._calls[index]
            raw = "".join(call.chunks)
            parts.append(ToolCall.from_raw(id=call.call_id, name=call.name, arguments_raw=raw))
        parts.extend(self._v1_parts)
        return parts

    def _stop(self) -> tuple[Ending, str | None, str | None]:
        """The finish reason's ending; a failed ``message-end``'s error is its detail."""
        signal, raw, detail = stop_signal(self._finish, "finish_reason")
        return signal, raw, self._failure or detail
