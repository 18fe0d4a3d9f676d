"""The frame of a stream of JSON ``data:`` chunks closed by ``[DONE]`` (Cohere, Mistral).

Both formats read a stream the same way: nothing counts after an error event, ``[DONE]`` marks
the normal end, data that is not a JSON object (keep-alives, garbage) is skipped, and the turn
comes from `_rules.stream_turn`. That frame is written once here; each adapter's subclass reads
its own chunks (`_take`), builds its parts and says why the model stopped.
"""

from __future__ import annotations

from typing import Any, ClassVar

from donegate.messages import Ending, Part, Turn, Usage
from donegate.models import _rules
from donegate.models._sse import loads

__all__ = ["ChunkStream"]


class ChunkStream:
    """Accumulates one format's ``data:`` chunks into one `Turn`; subclasses read the chunks."""

    api: ClassVar[str]
    """The wire format's name, for the turn's errors."""

    def __init__(self) -> None:
        self._finish: str | None = None
        self._finished = False
        self._done = False  # ``[DONE]`` seen: the stream reached its normal end
        self._usage = Usage()
        self._id: str | None = None
        self._model: str | None = None
        self._error: tuple[str | None, str] | None = None

    def feed(self, event: str | None, data: str) -> str:
        """Take one event; return the visible text it added (none after an error event)."""
        if self._error is not None:
            return ""
        if data.strip() == "[DONE]":
            self._done = True
            return ""
        try:
            payload = loads(data)
        except ValueError:
            return ""
        if not isinstance(payload, dict):
            return ""
        return self._take(event, payload)

    def _take(self, event: str | None, payload: dict[str, Any]) -> str:
        """Read one chunk (a JSON object); return the visible text it added."""
        raise NotImplementedError

    def _parts(self) -> list[Part]:
        """The turn's parts, from what the chunks carried."""
        raise NotImplementedError

    def _stop(self) -> tuple[Ending, str | None, str | None]:
        """Why the model stopped, once the stream said so (`_finished`)."""
        raise NotImplementedError

    def finish(self) -> Turn:
        """The turn: an error event is an error; no stop reason means truncated, or an error
        if the stream reached ``[DONE]``."""
        return _rules.stream_turn(
            api=self.api,
            parts=self._parts(),
            usage=self._usage,
            error=self._error,
            stop=self._stop() if self._finished else None,
            ended=self._done,
            model=self._model,
            response_id=self._id,
        )
