"""Rendered histories kept between turns, so a request costs what the new messages cost.

The loop sends the whole transcript every turn, and an adapter used to render every message of
it every time (about 1 us a message: at 200 turns, 400 messages a request). Messages are frozen,
so a message renders the same every time: a `HistoryCache` keeps each transcript's rendered
messages and, when the next request's messages begin with the very same message objects
(identity, not equality: ``1 == True`` yet they render differently), renders only the ones
added since. It serves adapters whose messages render independently of one another.

What it holds is bounded: the last `size` transcripts, keyed by their first message, so
concurrent runs through one adapter each keep theirs. A transcript that no longer matches (edited
history, another run) is rendered whole and replaces its entry; results never depend on the cache.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from donegate.messages import Message

__all__ = ["HistoryCache", "LastRendered"]

T = TypeVar("T")


class HistoryCache:
    """The wire forms of recent transcripts, one adapter's, extended as each transcript grows."""

    __slots__ = ("_entries", "_lock", "_render", "_size")

    def __init__(self, render: Callable[[Message], Sequence[Any]], *, size: int = 8) -> None:
        self._render = render
        self._size = size
        self._entries: dict[int, tuple[tuple[Message, ...], list[Any]]] = {}
        self._lock = threading.Lock()

    def render(self, messages: Sequence[Message]) -> list[Any]:
        """The wire messages of `messages`, in order: a fresh list the caller may keep.

        The rendered messages themselves are shared with later requests: never mutate them.
        """
        if not messages:
            return []
        key = id(messages[0])
        entry = self._entries.get(key)
        start, out = 0, []
        if entry is not None:
            seen, rendered = entry
            if len(seen) <= len(messages) and all(map(operator.is_, seen, messages)):
                start, out = len(seen), rendered.copy()
        render = self._render
        for message in messages[start:]:
            out.extend(render(message))
        if start < len(messages) or entry is None:
            self._keep(key, tuple(messages), out)
        return out.copy()

    def _keep(self, key: int, messages: tuple[Message, ...], rendered: list[Any]) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (messages, rendered)
            while len(self._entries) > self._size:
                del self._entries[next(iter(self._entries))]


class LastRendered(Generic[T]):
    """The rendering of the last object given, kept while that same object comes back.

    A run sends one tuple of tool specs every turn: it renders once. The items of the returned
    list are shared with later calls (never mutate them); the list is the caller's.
    """

    __slots__ = ("_entry", "_render")

    def __init__(self, render: Callable[[T], Sequence[Any]]) -> None:
        self._render = render
        self._entry: tuple[T, list[Any]] | None = None

    def render(self, value: T) -> list[Any]:
        """`value` rendered, from the kept copy when `value` is the object last given."""
        entry = self._entry
        if entry is None or entry[0] is not value:
            entry = (value, list(self._render(value)))
            self._entry = entry
        return entry[1].copy()
