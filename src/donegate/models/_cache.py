"""Rendered histories kept between turns, so a request costs what the new messages cost.

The loop sends the whole transcript every turn, and an adapter used to render every message of
it every time (about 1 us a message: at 200 turns, 400 messages a request). Messages are frozen,
so a message renders the same every time: a `HistoryCache` keeps each transcript's rendered
messages and, when the next request's messages begin with the very same message objects
(identity, not equality: ``1 == True`` yet they render differently), renders only the ones
added since. It serves adapters whose messages render independently of one another.

The JSON text of the rendered messages is kept the same way (`HistoryCache.encode`), so the
body an SDK sends as bytes is encoded once per message too.

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

    __slots__ = ("_encoded", "_render", "_rendered")

    def __init__(self, render: Callable[[Message], Sequence[Any]], *, size: int = 8) -> None:
        self._render = render
        self._rendered = _Prefixes(render, size)
        self._encoded = _Prefixes(self._encode_one, size)

    def render(self, messages: Sequence[Message]) -> list[Any]:
        """The wire messages of `messages`, in order: a fresh list the caller may keep.

        The rendered messages themselves are shared with later requests: never mutate them.
        """
        if not messages:
            return []
        return self._rendered.get(messages).copy()

    def encode(self, messages: Sequence[Message]) -> Encoded:
        """The JSON array of the wire messages of `messages`, each message encoded once.

        Only the JSON text is kept for it (not the rendered dicts as well): a run sent as bytes
        holds, and later frees, one form of its history.
        """
        if not messages:
            return Encoded(b"[]")
        return Encoded(b"".join((b"[", b",".join(self._encoded.get(messages)), b"]")))

    def _encode_one(self, message: Message) -> list[bytes]:
        return [dumps(item) for item in self._render(message)]


class _Prefixes:
    """Per transcript, what `each` makes of its messages, extended as the transcript grows."""

    __slots__ = ("_each", "_entries", "_lock", "_size")

    def __init__(self, each: Callable[[Message], Sequence[Any]], size: int) -> None:
        self._each = each
        self._size = size
        self._entries: dict[int, tuple[tuple[Message, ...], list[Any]]] = {}
        self._lock = threading.Lock()

    def get(self, messages: Sequence[Message]) -> list[Any]:
        """The kept list for `messages` (shared: never change it), made or extended first."""
        key = id(messages[0])
        entry = self._entries.get(key)
        start, kept = 0, []
        if entry is not None:
            seen, made = entry
            if len(seen) <= len(messages) and all(map(operator.is_, seen, messages)):
                if len(seen) == len(messages):
                    return made
                start, kept = len(seen), made
        out = kept.copy()  # a kept list is never changed in place
        each = self._each
        for message in messages[start:]:
            out.extend(each(message))
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (tuple(messages), out)
            while len(self._entries) > self._size:
                del self._entries[next(iter(self._entries))]
        return out


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
