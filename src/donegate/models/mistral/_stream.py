"""Streamed ``chat.completion.chunk`` events accumulated into one turn."""

from __future__ import annotations

from typing import Any

from donegate.messages import Ending, Part, ServerToolPart, TextPart, ThinkingPart, ToolCall
from donegate.models._chunks import ChunkStream
from donegate.models._function_calls import arguments_raw
from donegate.models._values import opt_str
from donegate.models.mistral._parse import (
    API,
    error_fields,
    is_error_body,
    parse_usage,
    stop_signal,
    thinking_text,
)


class _StreamCall:
    __slots__ = ("call_id", "chunks", "name")

    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name
        self.chunks: list[str] = []

    def part(self) -> ToolCall:
        return ToolCall.from_raw(
            id=self.call_id, name=self.name, arguments_raw="".join(self.chunks)
        )


class MistralStream(ChunkStream):
    """Accumulates streamed ``chat.completion.chunk`` events into one `Turn`."""

    api = API

    def __init__(self) -> None:
        super().__init__()
        self._segments: list[tuple[str, list[str]]] = []  # ("text" | "thinking", chunks)
        self._other: list[Part] = []
        self._calls: dict[int, _StreamCall] = {}

    def _append(self, kind: str, text: str) -> None:
        """Consecutive deltas of one kind make one part, as the whole body would have."""
        if not text:
            return
        if self._segments and self._segments[-1][0] == kind:
            self._segments[-1][1].append(text)
        else:
            self._segments.append((kind, [text]))

    def _take(self, event: str | None, chunk: dict[str, Any]) -> str:
        """Take one chunk; return the visible text it added."""
        if event == "error" or is_error_body(chunk):
            self._error = error_fields(chunk)
            return ""
        self._id = opt_str(chunk.get("id")) or self._id
        self._model = opt_str(chunk.get("model")) or self._model
        if isinstance(chunk.get("usage"), dict):
            self._usage = parse_usage(chunk["usage"])
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            return ""
        visible = self._delta(choice.get("delta"))
        reason = choice.get("finish_reason")
        if isinstance(reason, str):
            self._finish, self._finished = reason, True
        return visible

    def _delta(self, delta: Any) -> str:
        if not isinstance(delta, dict):
            return ""
        visible = ""
        content = delta.get("content")
        if isinstance(content, str):
            self._append("text", content)
            visible = content
        elif isinstance(content, list):
            for item in content:
                if not isinstance(item, dict):
                    continue
                if item.get("type") == "text" and isinstance(item.get("text"), str):
                    self._append("text", item["text"])
                    visible += item["text"]
                elif item.get("type") == "thinking":
                    self._append("thinking", thinking_text(item.get("thinking")))
                else:
                    self._other.append(ServerToolPart(name=str(item.get("type")), data=item))
        calls = delta.get("tool_calls")
        for position, raw in enumerate(calls if isinstance(calls, list) else ()):
            if isinstance(raw, dict):
                self._call_delta(position, raw)
        return visible

    def _call_delta(self, position: int, raw: dict[str, Any]) -> None:
        """Fragments join by ``index``; a new id at a used index is a new call (Mistral sends
        each call whole, sometimes every one at index 0)."""
        index = raw.get("index")
        key = index if isinstance(index, int) and not isinstance(index, bool) else position
        function = raw.get("function")
        function = function if isinstance(function, dict) else {}
        call_id = opt_str(raw.get("id")) or ""
        current = self._calls.get(key)
        if current is not None and call_id and current.call_id and call_id != current.call_id:
            key, current = max(self._calls) + 1, None
        if current is None:
            current = self._calls[key] = _StreamCall(call_id, "")
        current.call_id = current.call_id or call_id
        current.name = current.name or (opt_str(function.get("name")) or "")
        if "arguments" in function:
            current.chunks.append(arguments_raw(function["arguments"]))

    def _parts(self) -> list[Part]:
        parts: list[Part] = [
            TextPart(text="".join(chunks)) if kind == "text" else ThinkingPart(text="".join(chunks))
            for kind, chunks in self._segments
        ]
        parts.extend(self._other)
        parts.extend(self._calls[k].part() for k in sorted(self._calls))
        return parts

    def _stop(self) -> tuple[Ending, str | None, str | None]:
        return stop_signal(self._finish, "finish_reason")
