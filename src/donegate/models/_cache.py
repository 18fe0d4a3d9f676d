"""Rendered histories kept between turns, so a request costs what the new messages cost.

The loop sends the whole transcript every turn, and an adapter used to render every message of
it every time (about 1 us a message: at 200 turns, 400 messages a request). Messages are frozen,
so a message renders the same every time: a `HistoryCache` keeps each transcript's rendered
messages and, when the next request's messages begin with the very same message objects
(identity, not equality: ``1 == True`` yet they render differently), renders only the ones
added since. It serves adapters whose messages render independently of one another.

Each entry also keeps the JSON text of its rendered messages, made when first asked for
(`HistoryCache.encode`), so the body an SDK sends as bytes is encoded once per message too.

What it holds is bounded: the last `size` transcripts, keyed by their first message, so
concurrent runs through one adapter each keep theirs. A transcript that no longer matches (edited
history, another run) is rendered whole and replaces its entry; results never depend on the cache.
Kept lists are never changed in place (a grown transcript gets new lists), so a reader never sees
another thread's half-made entry.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from donegate.messages import Message
from donegate.models._encode import Encoded, dumps

__all__ = ["HistoryCache", "LastRendered"]

T = TypeVar("T")


class HistoryCache:
    """The wire forms of recent transcripts, one adapter's, extended as each transcript grows."""

    __slots__ = ("_entries", "_lock", "_render", "_size")

    def __init__(self, render: Callable[[Message], Sequence[Any]], *, size: int = 8) -> None:
        self._render = render
        self._size = size
        self._entries: dict[int, tuple[tuple[Message, ...], list[Any], list[bytes]]] = {}
        self._lock = threading.Lock()

    def render(self, messages: Sequence[Message]) -> list[Any]:
        """The wire messages of `messages`, in order: a fresh list the caller may keep.

        The rendered messages themselves are shared with later requests: never mutate them.
        """
        if not messages:
            return []
        rendered, _ = self._grow(messages, encode=False)
        return rendered.copy()

    def encode(self, messages: Sequence[Message]) -> Encoded:
        """The JSON array of the wire messages of `messages`, each message encoded once."""
        if not messages:
            return Encoded(b"[]")
        _, encoded = self._grow(messages, encode=True)
        return Encoded(b"".join((b"[", b",".join(encoded), b"]")))

    def _grow(self, messages: Sequence[Message], *, encode: bool) -> tuple[list[Any], list[bytes]]:
        """The entry for `messages`, extended by what is new (and, with `encode`, encoded)."""
        key = id(messages[0])
        entry = self._entries.get(key)
        if entry is not None:
            seen, rendered, encoded = entry
            if len(seen) > len(messages) or not all(map(operator.is_, seen, messages)):
                seen, rendered, encoded = (), [], []
        else:
            seen, rendered, encoded = (), [], []
        grown = entry is None or len(seen) < len(messages)
        if grown:
            rendered = rendered.copy()  # a kept list is never changed in place
            render = self._render
            for message in messages[len(seen) :]:
                rendered.extend(render(message))
        if encode and len(encoded) < len(rendered):
            encoded = [*encoded, *map(dumps, rendered[len(encoded) :])]
            grown = True
        if grown:
            self._keep(key, tuple(messages), rendered, encoded)
        return rendered, encoded

    def _keep(
        self, key: int, messages: tuple[Message, ...], rendered: list[Any], encoded: list[bytes]
    ) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (messages, rendered, encoded)
            while len(self._entries) > self._size:
                del self._entries[next(iter(self._entries))]


class LastRendered(Generic[T]):
    """The rendering of the last object given, kept while that same object comes back.

    A run sends one tuple of tool specs every turn, and each run of the same tools a tuple of
    the same spec objects: they render once. A tuple counts as the same when its items are the
    same objects (identity, never equality). The items of the returned list are shared with
    later calls (never mutate them); the list is the caller's.
    """

    __slots__ = ("_entry", "_render")

    def __init__(self, render: Callable[[T], Sequence[Any]]) -> None:
        self._render = render
        self._entry: tuple[T, list[Any], Encoded | None] | None = None

    def render(self, value: T) -> list[Any]:
        """`value` rendered, from the kept copy when `value` is the object last given."""
        return self._get(value)[1].copy()

    def encode(self, value: T) -> Encoded:
        """The JSON text of `value` rendered, made once while `value` keeps coming back."""
        entry = self._get(value)
        text = entry[2]
        if text is None:
            text = Encoded(dumps(entry[1]))
            self._entry = (entry[0], entry[1], text)
        return text

    def _get(self, value: T) -> tuple[T, list[Any], Encoded | None]:
        entry = self._entry
        if entry is None or not _same(entry[0], value):
            entry = (value, list(self._render(value)), None)
            self._entry = entry
        return entry


def _same(kept: Any, value: Any) -> bool:
    """`value` is `kept`, or a tuple of the very same objects."""
    if kept is value:
        return True
    return (
        type(kept) is tuple
        and type(value) is tuple
        and len(kept) == len(value)
        and all(map(operator.is_, kept, value))
    )
