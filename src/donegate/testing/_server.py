"""The emulator's HTTP side: a starlette app over `Emulator.handle`, served by uvicorn.

Imported only when a server is started, so the ``server`` extra is needed only then.

Fault turns need two things plain request/response handling does not give: a reply held for a
``delay`` without blocking the loop (and let go as soon as the client hangs up), and a
connection closed without a response. ASGI has no message for the latter; the outermost layer
finds the connection's transport behind uvicorn's ``send`` and hands the endpoint a way to
close it.

Everything sent gets an answer. Bytes that are not an HTTP/1.x request head are refused by the
connection's protocol (`donegate.testing._protocol`) before h11 sees them. A body longer than
``max_body`` is a 413 without being read; a client that hangs up is one debug line; anything
else that fails is a 500 in the provider's shape and one error line, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from donegate.errors import MissingExtra, UserError
from donegate.testing import _routes
from donegate.testing._protocol import protocol_class
from donegate.testing._routes import Reply

if TYPE_CHECKING:
    from donegate.testing.emulator import Emulator

log = logging.getLogger("donegate.emulator")

__all__ = ["ServerThread", "asgi_app", "serve_forever"]

_METHODS = ["GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"]
_DROP = "donegate.drop"
"""The scope key of a callable that closes the request's connection without a response."""


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(module.partition(".")[0], "server") from None


def asgi_app(emulator: Emulator) -> Any:
    """A starlette app answering every path through `emulator.handle`."""
    applications = _import("starlette.applications")
    responses = _import("starlette.responses")
    routing = _import("starlette.routing")
    concurrency = _import("starlette.concurrency")

    requests = _import("starlette.requests")

    def send(reply: Reply) -> Any:
        headers = dict(reply.headers)
        media_type = headers.pop("content-type", None)
        return responses.Response(
            reply.body, status_code=reply.status, headers=headers, media_type=media_type
        )

    async def endpoint(request: Any) -> Any:
        method, path, query = request.method, request.url.path, request.url.query
        heads = dict(request.headers)
        try:
            body = await _read_body(request, emulator.max_body)
        except requests.ClientDisconnect:
            log.debug("%s %s: the client hung up before its request was read", method, path)
            return responses.Response(b"")  # nobody to answer
        except _TooLarge as exc:
            return send(emulator.refuse(method, path, query=query, headers=heads,
                                        status=413, message=str(exc)))  # fmt: skip
        args = (method, path)
        kwargs = {"query": query, "headers": heads, "body": body}
        try:
            if emulator.upstream is not None:  # forwarding blocks: keep the loop free
                reply = await concurrency.run_in_threadpool(emulator.handle, *args, **kwargs)
            else:
                reply = emulator.handle(*args, **kwargs)
        except Exception as exc:  # the last line of defence: an answer, and one line
            log.error("%s %s failed: %s: %s", method, path, type(exc).__name__, exc,
                      exc_info=log.isEnabledFor(logging.DEBUG))  # fmt: skip
            message = f"donegate emulator: {type(exc).__name__}: {exc}"
            return send(_routes.malformed_reply(500, message, method, path))
        drop = reply.disconnect
        if reply.delay:
            if not await _hold(reply.delay, request.receive, emulator.stopping.is_set):
                log.debug("%s %s: the client hung up while its answer was held", method, path)
                return responses.Response(b"")  # the client hung up (timed out): never sent
            drop = drop or emulator.stopping.is_set()  # held past shutdown: never answered
        if drop:
            close = request.scope.get(_DROP)
            if close is None:
                raise RuntimeError("this server does not expose its connections: cannot drop one")
            close()
            await _disconnected(request.receive)  # so the server sees it and answers nothing
            return responses.Response(b"")  # the connection is gone: never sent
        return send(reply)

    route = routing.Route("/{path:path}", endpoint, methods=_METHODS)
    inner = applications.Starlette(routes=[route])

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            # uvicorn's send is a bound method of the request cycle, which holds the transport.
            transport = getattr(getattr(send, "__self__", None), "transport", None)
            if isinstance(transport, asyncio.BaseTransport):
                scope[_DROP] = transport.close
        await inner(scope, receive, send)

    return app


class _TooLarge(Exception):
    """The request body is longer than the emulator accepts."""


async def _read_body(request: Any, limit: int) -> bytes:
    """The body, refused (`_TooLarge`) past `limit` bytes without holding more than that."""
    declared = request.headers.get("content-length")
    too_large = f"request body larger than {limit} bytes (--max-body)"
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge(too_large)  # not a byte of it read
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _TooLarge(too_large)
    return bytes(body)


async def _hold(delay: float, receive: Any, stopping: Callable[[], bool]) -> bool:
    """Wait `delay` seconds (or until `stopping`); False as soon as the client hangs up."""
    gone = asyncio.ensure_future(_disconnected(receive))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + delay
    try:
        while not stopping():
            left = deadline - loop.time()
            if left <= 0:
                return True
            done, _ = await asyncio.wait({gone}, timeout=min(left, 0.1))
            if done:
                return False
        return True
    finally:
        gone.cancel()


async def _disconnected(receive: Any, timeout: float = 5.0) -> None:
    """Return once the server reports the client gone (the request body is already read)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while (await receive())["type"] != "http.disconnect":
                pass


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted sockets only when the protocol
    # says TCP, and without it every small response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _config(app: Any, host: str, port: int) -> Any:
    uvicorn = _import("uvicorn")
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol_class(),
        h11_max_incomplete_event_size=_routes.MAX_HEAD,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )


class ServerThread:
    """uvicorn on a daemon thread, on a socket bound before the thread starts."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._sock = _bind(host, port)
        self.port: int = self._sock.getsockname()[1]
        """The port actually bound (a free one when 0 was asked)."""
        uvicorn = _import("uvicorn")
        self._server = uvicorn.Server(_config(app, host, self.port))
        self._thread = threading.Thread(
            target=self._run, name=f"donegate-emulator-{self.port}", daemon=True
        )

    @property
    def base_url(self) -> str:
        """``http://host:port``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._sock]))

    def start(self, timeout: float = 10.0) -> None:
        """Start; return once the server accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise UserError(f"the emulator did not start on {self.base_url}")
            time.sleep(0.005)

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit and wait for the thread."""
        self._server.should_exit = True
        self._thread.join(timeout)
        self._sock.close()


def serve_forever(
    app: Any, *, host: str, port: int, on_ready: Callable[[str], None] | None = None
) -> None:
    """Serve in the foreground until SIGINT or SIGTERM (uvicorn handles the signals)."""
    uvicorn = _import("uvicorn")
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    if on_ready is not None:
        shown = f"[{host}]" if ":" in host else host
        on_ready(f"http://{shown}:{bound}")
    # uvicorn re-raises the signal that stopped it once it has shut down: turn SIGTERM, like
    # SIGINT, into KeyboardInterrupt so the caller still prints its summary and saves its file.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        uvicorn.Server(_config(app, host, bound)).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
