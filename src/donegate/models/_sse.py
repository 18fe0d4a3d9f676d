"""Server-sent events: split raw SSE text (as a server sends it) into ``(event, data)`` pairs.

The framing is the WHATWG event-stream format: ``event:`` and ``data:`` fields, blank-line
separated, ``:`` comments ignored, several ``data:`` lines joined by newlines. The SDKs' own
decoders are private and tied to their HTTP clients; this one works on text and on byte lines.
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from donegate.models.base import StreamAccumulator

__all__ = ["SSEDecoder", "accumulate", "iter_sse", "loads"]

_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    json.JSONDecoder()  # type: ignore[arg-type]  # typeshed types the argument as the scanner
)


def loads(data: str) -> Any:
    """`json.loads` for one event's data, without its Python-level wrappers in the common case.

    A value that starts at the first character and ends at the last is what `json.loads` would
    return; anything else (whitespace around it, trailing data, invalid JSON) is left to
    `json.loads`, so results and errors (a ValueError) are the same.
    """
    try:
        value, end = _scan(data, 0)
    except StopIteration:
        return json.loads(data)
    if end != len(data):
        return json.loads(data)
    return value


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
    if _plain_newlines(text):
        yield from _iter_blocks(text)
        return
    decoder = SSEDecoder()
    for line in text.splitlines():
        event = decoder.line(line)
        if event is not None:
            yield event
    event = decoder.flush()
    if event is not None:
        yield event


_OTHER_BREAKS = ("\r", "\v", "\f", "\x1c", "\x1d", "\x1e")
_OTHER_BREAKS_UNICODE = ("\x85", "\u2028", "\u2029")


def _plain_newlines(text: str) -> bool:
    """True when ``\\n`` is the only line break `str.splitlines` would see in `text`."""
    if any(b in text for b in _OTHER_BREAKS):
        return False
    return text.isascii() or not any(b in text for b in _OTHER_BREAKS_UNICODE)


def _iter_blocks(text: str) -> Iterator[tuple[str | None, str]]:
    """`iter_sse` for text whose only line break is ``\\n``: one event per blank-line block.

    A blank line ends an event and resets the decoder, so blocks decode independently; a block
    that is one ``data:`` line, or an ``event:`` line and a ``data:`` line (most events of every
    provider), needs no decoder at all.
    """
    for block in text.split("\n\n"):
        if not block:
            continue
        first, nl, rest = block.partition("\n")
        if not nl and first.startswith("data:"):
            value = first[5:]
            yield None, value[1:] if value[:1] == " " else value
            continue
        if first.startswith("event:") and rest.startswith("data:") and "\n" not in rest:
            name, value = first[6:], rest[5:]
            name = name[1:] if name[:1] == " " else name
            yield name, value[1:] if value[:1] == " " else value
            continue
        decoder = SSEDecoder()
        for line in block.split("\n"):
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
