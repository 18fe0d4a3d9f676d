"""Streamed ``streamGenerateContent``: each SSE ``data:`` (or JSON-array item) is a response.

Text and thoughts are concatenated across chunks into one part per run; function calls come
whole, one per part; the finish reason and the final usage ride on the last chunk. A stream
with no finish reason follows the shared missing-reason rule (`end` marks a closed JSON array);
an ``{"error": ...}`` chunk breaks it (`Ending.ERROR`, partial output kept). Every chunk's
integer enums are named first, in the dialect the stream has shown so far.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import Part, TextPart, ThinkingPart, ToolCall, Turn, Usage
from donegate.models._sse import loads
from donegate.models._values import MAPPING
from donegate.models.gemini._enums import (
    Dialect,
    decode_response,
    dialect_of,
    may_hold_enum_numbers,
)
from donegate.models.gemini._errors import error_turn_for
from donegate.models.gemini._parse import API, finish_turn, parse_parts, parse_usage

__all__ = ["GeminiStream"]


class _Run:
    """A text or thought run still being concatenated."""

    __slots__ = ("pieces", "sig", "thought")

    def __init__(self, thought: bool, text: str, sig: str | None) -> None:
        self.thought = thought
        self.pieces = [text]
        self.sig = sig

    def build(self) -> Part:
        text = "".join(self.pieces)
        if self.thought:
            return ThinkingPart(text=text, signature=self.sig)
        details = {"thoughtSignature": self.sig} if self.sig else None
        return TextPart(text=text, provider_details=details)


class GeminiStream:
    """Accumulates ``GenerateContentResponse`` chunks into one turn."""

    def __init__(self) -> None:
        self._items: list[Part | _Run] = []
        self._calls = 0
        self._reason: str | None = None
        self._candidate: dict[str, Any] | None = None
        self._feedback: Mapping[str, Any] | None = None
        self._usage = Usage()
        self._model: str | None = None
        self._id: str | None = None
        self._error: Any = None
        self._dialect: Dialect | None = None
        self._ended = False

    def feed(self, event: str | None, data: str) -> str:
        """Take one SSE event; non-JSON data (``[DONE]``, keep-alives) is ignored."""
        try:
            chunk = loads(data)
        except ValueError:
            return ""
        return self.take(chunk, named=not may_hold_enum_numbers(data))

    def take(self, chunk: Any, *, named: bool = False) -> str:
        """Take one parsed chunk; return the visible text it added.

        `named`: the chunk is known to hold no integer enum (see `may_hold_enum_numbers`).
        """
        if isinstance(chunk, list):
            return "".join(self.take(c, named=named) for c in chunk)
        if not isinstance(chunk, MAPPING):
            return ""
        if "error" in chunk and "candidates" not in chunk:
            self._error = chunk
            return ""
        self._dialect = dialect_of(chunk) or self._dialect  # Vertex marks only some chunks
        if not named:
            chunk = decode_response(chunk, self._dialect)
        if isinstance(chunk.get("modelVersion"), str):
            self._model = chunk["modelVersion"]
        if isinstance(chunk.get("responseId"), str):
            self._id = chunk["responseId"]
        if chunk.get("usageMetadata") is not None:
            self._usage = parse_usage(chunk["usageMetadata"])  # cumulative: the last one counts
        if isinstance(chunk.get("promptFeedback"), MAPPING):
            self._feedback = chunk["promptFeedback"]
        candidates = chunk.get("candidates")
        if candidates is None:
            return ""
        if not isinstance(candidates, list):
            raise WireFormatError(API, "expected a list", path="candidates")
        if not candidates:
            return ""
        cand = candidates[0]
        if not isinstance(cand, MAPPING):
            raise WireFormatError(API, "a candidate must be an object", path="candidates[0]")
        if self._candidate is None:
            self._candidate = {}
        delta: list[str] = []
        for part in parse_parts(cand.get("content"), "candidates[0].content", self._calls):
            self._add(part, delta)
        reason = cand.get("finishReason")
        if reason is not None and not isinstance(reason, str):
            raise WireFormatError(
                API,
                f"expected a string or an enum number, got {type(reason).__name__}",
                path="candidates[0].finishReason",
            )
        if reason:
            self._reason = reason
        for key in ("finishMessage", "safetyRatings"):
            if key in cand:
                self._candidate[key] = cand[key]
        return "".join(delta)

    def _add(self, part: Part, delta: list[str]) -> None:
        last = self._items[-1] if self._items else None
        if isinstance(part, TextPart | ThinkingPart):
            thought = isinstance(part, ThinkingPart)
            if isinstance(part, ThinkingPart):
                sig = part.signature
            else:
                details = part.provider_details or {}
                sig = details.get("thoughtSignature")
                delta.append(part.text)
            if isinstance(last, _Run) and last.thought == thought and not (last.sig and sig):
                last.pieces.append(part.text)
                last.sig = last.sig or sig
            else:
                self._items.append(_Run(thought, part.text, sig))
            return
        self._calls += isinstance(part, ToolCall)
        self._items.append(part)

    def end(self) -> None:
        """The stream reached its normal end (a JSON array's closing ``]``).

        SSE has no closing event, so an ``alt=sse`` stream never calls this: with no finish
        reason it reads as cut off (`truncated`), a closed array without one as an `error`.
        """
        self._ended = True

    def finish(self) -> Turn:
        """The turn the stream gave; never `complete` without a finish reason."""
        parts = [i.build() if isinstance(i, _Run) else i for i in self._items]
        if self._error is not None:
            return error_turn_for(None, self._error, parts=parts, usage=self._usage, in_stream=True)
        return finish_turn(
            self._reason,
            parts,
            candidate=self._candidate,
            feedback=self._feedback,
            usage=self._usage,
            model=self._model,
            response_id=self._id,
            ended=self._ended,
        )
