"""The emulator's connection protocol: uvicorn's h11 one, made to answer every byte sent.

h11 waits for the end of a head that HTTP/0.9 never sends, and answers its own errors in plain
text. This protocol reads each request head as it arrives (`_routes.head_problem`) and refuses
what is not HTTP/1.x at once, random bytes, HTTP/0.9, HTTP/2, a head past `_routes.MAX_HEAD` or
`_routes.MAX_HEADERS`, with a 400 in a provider's error shape; h11's own refusals get the same
body.

Every close is a lingering close (`Lingering`): closing a socket with the client's bytes still
unread makes the kernel reset the connection, and a client still sending (a 100 MB body, 10,000
headers dribbled in) would lose the answer. So the server stops writing, drops what still
arrives, and closes when the client does, or after `LINGER` seconds.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable
from typing import Any

from donegate.errors import MissingExtra
from donegate.testing import _routes
from donegate.testing._routes import Reply

__all__ = ["LINGER", "Lingering", "protocol_class", "raw_reply"]

log = logging.getLogger("donegate.emulator")

LINGER = 2.0
"""Seconds a closed connection is still read (and dropped) so its last answer arrives."""

_PHRASES = {400: "Bad Request", 413: "Content Too Large", 500: "Internal Server Error"}


def raw_reply(reply: Reply) -> bytes:
    """`reply` as HTTP/1.1 bytes, for a connection h11 cannot answer on (it read no request)."""
    lines = [f"HTTP/1.1 {reply.status} {_PHRASES.get(reply.status, 'Error')}"]
    lines += [f"{k}: {v}" for k, v in reply.headers.items() if k.lower() not in _routes.HOP_HEADERS]
    lines += [f"content-length: {len(reply.body)}", "connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + reply.body


class Lingering(asyncio.Transport):
    """A transport whose `close` stops writing at once but closes only when the client has.

    Only while `unread` says the client may still be sending (mid-request); an idle connection
    closes at once. Everything else is the wrapped transport's. `lingering` tells the protocol
    to drop what still arrives.
    """

    def __init__(
        self,
        inner: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        unread: Callable[[], bool],
    ) -> None:
        super().__init__()
        self.inner = inner
        self.loop = loop
        self.unread = unread
        self.lingering = False
        """True once closed: reads go on only to be dropped."""

    def close(self) -> None:
        if self.lingering or self.inner.is_closing():
            return
        if not (self.unread() and self.inner.can_write_eof()):
            self.inner.close()
            return
        self.lingering = True
        self.inner.write_eof()  # the client reads the answer, then end of stream
        self.inner.resume_reading()  # flow control may have paused it: keep draining
        self.loop.call_later(LINGER, self.inner.close)  # the client's own close comes first

    def is_closing(self) -> bool:
        return self.lingering or self.inner.is_closing()

    def abort(self) -> None:
        self.inner.abort()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.lingering:
            self.inner.write(data)

    def writelines(self, list_of_data: Any) -> None:
        if not self.lingering:
            self.inner.writelines(list_of_data)

    def write_eof(self) -> None:
        self.inner.write_eof()

    def can_write_eof(self) -> bool:
        return self.inner.can_write_eof()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.inner.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.inner.get_protocol()

    def is_reading(self) -> bool:
        return self.inner.is_reading()

    def pause_reading(self) -> None:
        if not self.lingering:
            self.inner.pause_reading()

    def resume_reading(self) -> None:
        self.inner.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.inner.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self.inner.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self.inner.get_write_buffer_limits()


_CLASS: Any = None


def protocol_class() -> Any:
    """The protocol class for ``uvicorn.Config(http=...)`` (built once, on first use)."""
    global _CLASS  # noqa: PLW0603  # one class per process: uvicorn is imported only here
    if _CLASS is not None:
        return _CLASS
    try:
        h11 = importlib.import_module("h11")
        base: Any = importlib.import_module("uvicorn.protocols.http.h11_impl").H11Protocol
    except ImportError:
        raise MissingExtra("uvicorn", "server") from None

    class Protocol(base):  # type: ignore[misc]  # uvicorn is untyped here
        _head = b""
        _refused = False

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(Lingering(transport, self.loop, self._unread))

        def _unread(self) -> bool:
            """True while the client may still be sending: a head begun, a body not all read."""
            midway = self.conn.their_state in (h11.SEND_BODY, h11.ERROR)
            return self._refused or bool(self._head) or midway

        def data_received(self, data: bytes) -> None:
            if self._refused or self.transport.lingering:
                return  # closed by us: dropped unread
            if self.conn.their_state is h11.IDLE:  # these bytes start (or go on with) a head
                self._head += data
                problem = _routes.head_problem(self._head)
                if problem is not None:
                    self._refuse(problem)
                    return
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._head = b""

        def send_400_response(self, msg: str) -> None:
            # h11 found the head malformed where the pre-check could not tell (a bad header).
            self._refuse(_routes.HeadProblem(f"malformed HTTP request: {msg}"))

        def _refuse(self, problem: _routes.HeadProblem) -> None:
            self._refused = True
            peer = "%s:%d" % self.client if self.client else "a client"  # noqa: UP031
            log.warning("%s: %s; answered 400 and closed", peer, problem.message)
            reply = _routes.malformed_reply(400, problem.message, problem.method, problem.target)
            if not self.transport.is_closing():
                self.transport.write(raw_reply(reply))
                self.transport.close()

    _CLASS = Protocol
    return Protocol
