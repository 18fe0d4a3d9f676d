"""Server-sent events: split raw SSE text (as a server sends it) into ``(event, data)`` pairs.

The framing is the WHATWG event-stream format: ``event:`` and ``data:`` fields, blank-line
separated, ``:`` comments ignored, several ``data:`` lines joined by newlines. The SDKs' own
decoders are private and tied to their HTTP clients; this one works on text and on byte lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from donegate.models.base import StreamAccumulator

__all__ = ["SSEDecoder", "accumulate", "iter_sse"]


class SSEDecoder:
    """Incremental decoder: feed lines (without their line ending), get complete events."""

    __slots__ = ("_data", "_event")

    def __init__(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []

    def line(self, line: str) -> tuple[str | None, str] | None:
        """Take one line; return an event when the line completes one."""
        if not line:
            return self.flush()
        if line[0] == ":":
            return None
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def flush(self) -> tuple[str | None, str] | None:
        """End of an event (blank line or end of input)."""
        if not self._data and self._event is None:
            return None
        event = (self._event, "\n".join(self._data))
        self._event, self._data = None, []
        return event


def iter_sse(text: str) -> Iterator[tuple[str | None, str]]:
    """Events of a whole SSE text; a JSON array (Gemini without ``alt=sse``) yields its items."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            chunks = json.loads(stripped)
        except ValueError:
            chunks = None
        if isinstance(chunks, list):
            for chunk in chunks:
                yield None, json.dumps(chunk)
            return
    decoder = SSEDecoder()
    for line in text.splitlines():
        event = decoder.line(line)
        if event is not None:
            yield event
    event = decoder.flush()
    if event is not None:
        yield event


def accumulate(
    acc: StreamAccumulator, events: Iterable[tuple[str | None, str]]
) -> StreamAccumulator:
    """Feed every event to `acc` and return it."""
    for event, data in events:
        acc.feed(event, data)
    return acc
