"""Request history kept off the heap: raw bodies in a spool, parsed again only when read.

An agent resends its whole conversation on every request, so a server that keeps each request
as parsed JSON (or as a `ModelRequest`) holds the square of the conversation: 200 turns of
10 KB tool results are 200 MB of bodies. The emulator and the player keep each body once, as the
bytes received, in memory up to `MEMORY` bytes and past that in an anonymous temporary file, and
parse one again only when a test reads it (`ScriptedModel.requests`, `Emulator.requests`). What
answering needs (the tools offered, the user texts a conversation is chosen by) comes from the one
parse each request gets as it arrives.
"""

from __future__ import annotations

import json
import tempfile
import threading
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar, overload

from donegate.models.base import ModelRequest
from donegate.models.registry import wire_format

__all__ = ["MEMORY", "History", "Lazy", "Raw", "Spool", "common_prefix", "read_request"]

MEMORY = 4 * 1024 * 1024
"""Bytes of bodies a spool holds in memory before it moves them to a temporary file."""

MIN_SHARED = 1024
"""Bytes a string must share with its lane's last one to be kept as a difference."""
LANES = 16
"""Lanes a spool remembers the last string of (the oldest is forgotten first)."""

T = TypeVar("T")


class Spool:
    """Byte strings appended in order and read back by index; thread-safe.

    A string appended on a `lane` that starts like the lane's previous one is kept as that
    shared prefix's length and the rest: an agent's next request is its last one plus the new
    turn, so a conversation costs its length, not its square. What is kept lives in memory up
    to `memory` bytes, then in an anonymous temporary file (deleted when closed or collected);
    the process holds a few numbers an entry and the last string of each lane.
    """

    def __init__(self, memory: int = MEMORY) -> None:
        self._file = tempfile.SpooledTemporaryFile(max_size=memory)  # noqa: SIM115  # close()
        self._ends = array("Q", [0])  # record i's own bytes: file[_ends[i]:_ends[i + 1]]
        self._bases = array("q")  # record i = record _bases[i] cut at _shared[i], then its own
        self._shared = array("Q")
        self._last: dict[str, tuple[int, bytes]] = {}
        self._lock = threading.Lock()

    def append(self, data: bytes, *, lane: str | None = None) -> int:
        """Keep `data`; its index. `lane` names a stream of strings that repeat their past."""
        with self._lock:
            base, shared = -1, 0
            last = self._last.get(lane) if lane is not None else None
            if last is not None:
                shared = common_prefix(last[1], data)
                base = last[0] if shared >= MIN_SHARED else -1
                shared = shared if base >= 0 else 0
            self._file.seek(self._ends[-1])
            self._file.write(memoryview(data)[shared:])
            self._ends.append(self._ends[-1] + len(data) - shared)
            self._bases.append(base)
            self._shared.append(shared)
            index = len(self._bases) - 1
            if lane is not None:
                self._last.pop(lane, None)
                self._last[lane] = (index, data)
                if len(self._last) > LANES:
                    del self._last[next(iter(self._last))]
            return index

    def __getitem__(self, index: int) -> bytes:
        if not 0 <= index < len(self._bases):
            raise IndexError("spool index out of range")
        with self._lock:
            parts: list[bytes] = []
            wanted = -1  # how much of the record at `index` is needed (-1: all of it)
            while index >= 0:
                shared, start = self._shared[index], self._ends[index]
                own = self._ends[index + 1] - start
                take = own if wanted < 0 else min(own, max(0, wanted - shared))
                if take:
                    self._file.seek(start)
                    parts.append(self._file.read(take))
                wanted = shared if wanted < 0 else min(wanted, shared)
                index = self._bases[index] if wanted else -1
            return b"".join(reversed(parts))

    def __len__(self) -> int:
        return len(self._bases)

    def close(self) -> None:
        """Drop what it holds."""
        with self._lock:
            self._file.close()
            self._last.clear()


def common_prefix(a: bytes, b: bytes) -> int:
    """How many bytes `a` and `b` start with in common (compared in C, without copies)."""
    n = min(len(a), len(b))
    view, step, i = memoryview(a), 1 << 16, 0
    while i < n and b.startswith(view[i : min(i + step, n)], i):
        i += step
    if i >= n:
        return n
    low, high = i, min(i + step, n) - 1  # a[:low] == b[:low]; they differ before `high` + 1
    while low < high:
        mid = (low + high + 1) // 2
        if b.startswith(view[low:mid], low):
            low = mid
        else:
            high = mid - 1
    return low


@dataclass(frozen=True, slots=True)
class Raw:
    """A request body received over HTTP, kept as bytes in a `Spool`."""

    api: str
    """The wire format it was read with."""
    path: str
    """The URL path (Gemini names the model and streaming there)."""
    spool: Spool
    index: int

    @property
    def body(self) -> Any:
        """The body, parsed again."""
        return json.loads(self.spool[self.index])

    def request(self) -> ModelRequest:
        """The `ModelRequest` it held, parsed again as it was when it arrived."""
        return read_request(self.api, self.path, self.body)


def read_request(api: str, path: str, body: dict[str, Any]) -> ModelRequest:
    """`body` read by the `api` wire format, the model and streaming completed from `path`.

    Raises what the wire format's ``parse_request`` raises for a body it cannot read.
    """
    request = wire_format(api).parse_request(body)
    stream = ":streamGenerateContent" in path or body.get("stream") is True
    if stream != request.stream or (not request.model and "/models/" in path):
        # Gemini puts the model and streaming in the URL, not the body.
        model = request.model or path.rpartition("/models/")[2].partition(":")[0]
        request = replace(request, model=model, stream=stream)
    return request


class _Items(Sequence[T], Generic[T]):
    """A read-only sequence whose items are made when read; equal to any sequence of its items."""

    def _count(self) -> int:
        raise NotImplementedError

    def _item(self, index: int) -> T:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        count = self._count()
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(count))]
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("index out of range")
        return self._item(index)

    def __len__(self) -> int:
        return self._count()

    def __iter__(self) -> Iterator[T]:
        return (self._item(i) for i in range(self._count()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a sequence that compares by value

    def __repr__(self) -> str:
        return repr(list(self))


class Lazy(_Items[T]):
    """`length` items, item i made by ``item(i)`` each time it is read."""

    def __init__(self, length: int, item: Callable[[int], T]) -> None:
        self._length = length
        self._make = item

    def _count(self) -> int:
        return self._length

    def _item(self, index: int) -> T:
        return self._make(index)


class History(_Items[ModelRequest]):
    """`ScriptedModel.requests`: each request received, in order; HTTP ones parsed when read.

    A request given directly is kept as it is (the caller holds it anyway); one received over
    HTTP is a `Raw` body, read again with the wire format each time it is looked at.
    """

    def __init__(self) -> None:
        self._items: list[ModelRequest | Raw] = []

    def _count(self) -> int:
        return len(self._items)

    def _item(self, index: int) -> ModelRequest:
        item = self._items[index]
        return item.request() if isinstance(item, Raw) else item

    def append(self, item: ModelRequest | Raw) -> None:
        """One more request."""
        self._items.append(item)

    def extend(self, items: Sequence[ModelRequest | Raw]) -> None:
        """More requests."""
        self._items.extend(items)

    def bodies(self) -> Lazy[dict[str, Any]]:
        """The JSON bodies of the requests received over HTTP, in order, parsed when read."""
        raws = [item for item in self._items if isinstance(item, Raw)]
        return Lazy(len(raws), lambda i: raws[i].body)
