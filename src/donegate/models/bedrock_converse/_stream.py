"""ConverseStream events (as JSON) accumulated into one turn."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from donegate.messages import (
    Part,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
    parse_arguments,
)
from donegate.models import _rules
from donegate.models._sse import loads
from donegate.models._values import as_int
from donegate.models.bedrock_converse._parse import API, parse_usage, stop_signal

_STREAM_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)


class _Block:
    """One streamed content block, built from its start and delta events."""

    __slots__ = ("call_id", "chunks", "kind", "name", "redacted", "signature", "tool_type")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.chunks: list[str] = []
        self.call_id = ""
        self.name = ""
        self.tool_type: str | None = None
        self.signature: str | None = None
        self.redacted: str | None = None

    def part(self) -> Part:
        text = "".join(self.chunks)
        if self.kind == "text":
            return TextPart(text=text)
        if self.kind == "reasoning":
            if self.redacted is not None:
                return ThinkingPart(text=text, signature=self.redacted, redacted=True)
            return ThinkingPart(text=text, signature=self.signature)
        if self.kind == "toolUse":
            if self.tool_type == "server_tool_use":
                raw = {"toolUseId": self.call_id, "name": self.name, "input": text}
                return ServerToolPart(name=self.name, id=self.call_id, data={"toolUse": raw})
            args, error = parse_arguments(text)
            if error is None:  # the same call the non-streamed body gives
                return ToolCall.from_args(id=self.call_id, name=self.name, arguments=args)
            return ToolCall.from_raw(id=self.call_id, name=self.name, arguments_raw=text)
        return ServerToolPart(name=self.kind, data={self.kind: text})


class BedrockConverseStream:
    """Accumulates ConverseStream events (JSON) into one `Turn`."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._stop: str | None = None
        self._stopped = False
        self._ended = False  # ``metadata``, the stream's last event, seen
        self._usage = Usage()
        self._error: tuple[str, str] | None = None

    def _events(self, event: str | None, payload: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """The ``(kind, value)`` events in one data payload, wrapped or named by the SSE event."""
        if (
            event
            and (event in _STREAM_EVENTS or event.endswith("Exception"))
            and event not in payload
        ):
            yield event, payload
            return
        for key, value in payload.items():
            if key in _STREAM_EVENTS or key.endswith("Exception"):
                yield key, value

    def _get(self, value: dict[str, Any], kind: str) -> _Block:
        index = as_int(value.get("contentBlockIndex"))
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block(kind)
        return block

    def feed(self, event: str | None, data: str) -> str:
        """Take one event; return the visible text it added."""
        if self._error is not None:
            return ""
        try:
            payload = loads(data)
        except ValueError:
            return ""
        if not isinstance(payload, dict):
            return ""
        return "".join(self._apply(kind, value) for kind, value in self._events(event, payload))

    def _apply(self, kind: str, value: Any) -> str:
        if kind.endswith("Exception"):
            message = value.get("message") if isinstance(value, dict) else value
            self._error = (kind, message if isinstance(message, str) else "")
            return ""
        if not isinstance(value, dict):
            return ""
        if kind == "contentBlockStart":
            start = value.get("start")
            tool = start.get("toolUse") if isinstance(start, dict) else None
            if isinstance(tool, dict):
                block = self._get(value, "toolUse")
                call_id, name, tool_type = tool.get("toolUseId"), tool.get("name"), tool.get("type")
                block.call_id = call_id if isinstance(call_id, str) else ""
                block.name = name if isinstance(name, str) else ""
                block.tool_type = tool_type if isinstance(tool_type, str) else None
            elif isinstance(start, dict) and start:
                self._get(value, str(next(iter(start))))
        elif kind == "contentBlockDelta":
            return self._delta(value)
        elif kind == "messageStop":
            reason = value.get("stopReason")
            self._stop = reason if isinstance(reason, str) else None
            self._stopped = True
        elif kind == "metadata":
            self._usage = parse_usage(value.get("usage"))
            self._ended = True
        return ""

    def _delta(self, value: dict[str, Any]) -> str:
        delta = value.get("delta")
        if not isinstance(delta, dict):
            return ""
        text = delta.get("text")
        if isinstance(text, str):
            self._get(value, "text").chunks.append(text)
            return text
        tool = delta.get("toolUse")
        if isinstance(tool, dict):
            fragment = tool.get("input")
            if isinstance(fragment, str):
                self._get(value, "toolUse").chunks.append(fragment)
            return ""
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            block = self._get(value, "reasoning")
            if isinstance(reasoning.get("text"), str):
                block.chunks.append(reasoning["text"])
            if isinstance(reasoning.get("signature"), str):
                block.signature = (block.signature or "") + reasoning["signature"]
            if isinstance(reasoning.get("redactedContent"), str):
                block.redacted = (block.redacted or "") + reasoning["redactedContent"]
        return ""

    def finish(self) -> Turn:
        """The turn: an exception event is an error; no ``messageStop`` is the shared missing-reason
        rule (``metadata`` is the normal end)."""
        parts = [self._blocks[i].part() for i in sorted(self._blocks)]
        return _rules.stream_turn(
            api=API,
            parts=parts,
            usage=self._usage,
            error=self._error,
            stop=stop_signal(self._stop) if self._stopped else None,
            ended=self._ended,
        )
