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

__all__ = ["MEMORY", "History", "Lazy", "Raw", "Spool", "read_request"]

MEMORY = 4 * 1024 * 1024
"""Bytes of bodies a spool holds in memory before it moves them to a temporary file."""

T = TypeVar("T")


class Spool:
    """Byte strings appended in order and read back by index; thread-safe.

    In memory up to `memory` bytes, then in an anonymous temporary file (deleted when closed or
    collected), so what it holds costs the process a few bytes an entry.
    """

    def __init__(self, memory: int = MEMORY) -> None:
        self._file = tempfile.SpooledTemporaryFile(max_size=memory)  # noqa: SIM115  # closed by close()
        self._ends = array("Q", [0])
        self._lock = threading.Lock()

    def append(self, data: bytes) -> int:
        """Keep `data`; its index."""
        with self._lock:
            self._file.seek(self._ends[-1])
            self._file.write(data)
            self._ends.append(self._ends[-1] + len(data))
            return len(self._ends) - 2

    def __getitem__(self, index: int) -> bytes:
        with self._lock:
            start, end = self._ends[index], self._ends[index + 1]
            self._file.seek(start)
            return self._file.read(end - start)

    def __len__(self) -> int:
        return len(self._ends) - 1

    def close(self) -> None:
        """Drop what it holds."""
        with self._lock:
            self._file.close()


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
