"""A provider-emulating HTTP server: any agent, in any language, against a script.

`Emulator` serves scripted turns on the providers' real endpoints, so an agent built on the
official SDKs (or on none: Claude Code, a curl loop) is tested with the bytes it meets in
production::

    POST /v1/chat/completions                      OpenAI Chat Completions
    POST /v1/responses                             OpenAI Responses
    POST /v1/messages                              Anthropic Messages
    POST /v1/messages/count_tokens                 Anthropic token count (a rough one)
    POST /v1beta/models/{model}:generateContent    Gemini (also under /v1/)
    POST /v1beta/models/{model}:streamGenerateContent   ?alt=sse: SSE, otherwise a JSON array
    GET  /v1/models, /v1beta/models                minimal model lists, for clients that probe
    GET  /_donegate/requests, /_donegate/status    the request log; turns served per script

Each conversation is a `ScriptedModel`, and each request goes through its ``handler(api)``: the
same turn selection and the same wire rendering as the in-process player, so a script replays
alike in both. Several scripts are several conversations, chosen by the
``x-donegate-conversation`` header (an index or the script file's stem); else by prompt: a
conversation whose script ``prompt`` is the text of one of the request's user messages (the
latest such message wins, so a subagent with its own prompt gets its own script); else in order:
the first conversation with turns left answers. A call past the last turn is an HTTP 500 in the
provider's error shape saying "model called N times but script has M turns". The client runs
its own tools: a script needs no stubs, and a turn calling a tool the client's request did not
offer is served as scripted, with a warning (logged on ``donegate.emulator``, kept in the
request log and in ``/_donegate/status``).

Fault turns are served for real: ``{delay: S}`` holds the answer S seconds (a client whose
timeout is shorter gives up, and that attempt has used the turn), ``{disconnect: true}`` closes
the connection without a response. The SDKs retry both, as they retry a 429 or a 5xx. A
``{latency: S}`` turn is no fault: its answer is held S seconds, then sent (a slow model), and
the request log notes it as ``latency``.

With ``side_calls`` (``--side-calls``), a request that offers no tools is a side call (Gemini
CLI's router, a title or summary request) and is answered without a turn: see
`donegate.testing._side`.

The request log keeps each body once, as the bytes received (a request that repeats the last
one's history costs only its new end), in memory up to a few MiB and then in a temporary file;
each request is parsed once as it arrives, and the log's bodies are parsed again only when a
test reads ``requests`` (see `donegate.testing._history`). ``log=`` (``--log``) writes the full
log, bodies included and secrets redacted, as JSON lines.

With ``upstream`` the emulator is a recording proxy instead (see `donegate.testing.recorder`).
The HTTP side (starlette + uvicorn, the ``server`` extra) lives in `donegate.testing._server`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from donegate.errors import DonegateError, UnsupportedTurn, UserError
from donegate.messages import Turn
from donegate.models.base import ModelRequest
from donegate.models.registry import wire_format
from donegate.testing import _routes
from donegate.testing._conversation import CONVERSATION_HEADER, Conversation, select
from donegate.testing._history import Raw, Spool, read_request
from donegate.testing._redact import log_line
from donegate.testing._routes import Incoming, Reply, Route, error_reply
from donegate.testing._side import side_turn
from donegate.testing.player import ScriptedModel
from donegate.testing.script import Script

if TYPE_CHECKING:
    from collections.abc import Callable

    from donegate.testing._server import ServerThread
    from donegate.testing.recorder import Recorder

__all__ = ["CONVERSATION_HEADER", "MAX_BODY", "Conversation", "Emulator", "Reply"]

MAX_BODY = 32 * 1024 * 1024
"""The default cap on a request body (``--max-body``): 32 MiB."""

log = logging.getLogger("donegate.emulator")

_SECRET_HEADERS = frozenset(
    ("authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie")
)


class Emulator:
    """A provider-emulating server; a context manager that runs it on a background thread.

    ``with Emulator("refund.yaml") as emu:`` then point a client at ``emu.base_url`` (OpenAI
    clients at ``emu.base_url + "/v1"``). `handle` answers one request without any HTTP, for
    callers that bring their own server.
    """

    def __init__(
        self,
        *scripts: Script | ScriptedModel | Iterable[Turn] | str | os.PathLike[str],
        host: str = "127.0.0.1",
        port: int = 0,
        log: str | os.PathLike[str] | None = None,
        upstream: str | None = None,
        recorder: Recorder | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        max_body: int = MAX_BODY,
        side_calls: bool = False,
    ) -> None:
        if max_body < 1:
            raise UserError(f"max_body must be a positive number of bytes, got {max_body}")
        self.max_body = max_body
        """Bytes a request body may have; a longer one is a 413, refused before it is read."""
        self.side_calls = side_calls
        """Answer requests that offer no tools without a turn (`donegate.testing._side`)."""
        self._side_served = 0
        self.base_dir = Path(base_dir) if base_dir is not None else None
        """Relative script paths given to `load` resolve here (default: the working directory)."""
        self.strict = False
        """Read by the pytest fixture: check `assert_exhausted` at teardown."""
        self.host = host
        """The interface to listen on (loopback by default)."""
        self.port = port
        """The port; 0 picks a free one when the server starts."""
        self.upstream = upstream.rstrip("/") if upstream else None
        """Proxy mode: forward every model request here instead of answering from scripts."""
        self.recorder = recorder
        """Proxy mode: receives every exchange forwarded upstream."""
        if self.upstream and self.recorder is None:
            from donegate.testing.recorder import Recorder

            self.recorder = Recorder()
        self.conversations: list[Conversation] = []
        """The scripts served, in load order."""
        self._log: list[dict[str, Any]] = []  # a "body" is (its index in _bodies, is it JSON)
        self._bodies = Spool()
        self._log_path = os.fspath(log) if log is not None else None
        self._log_file: Any = None
        self._lock = threading.RLock()
        self._server: ServerThread | None = None
        self.stopping = threading.Event()
        """Set while the server stops: replies held by a ``delay`` are dropped at once."""
        self._upstream_client: Any = None
        for script in scripts:
            self.load(script)

    # -- scripts -----------------------------------------------------------------------------

    def load(
        self,
        source: Script | ScriptedModel | Iterable[Turn] | str | os.PathLike[str],
        *,
        name: str | None = None,
    ) -> ScriptedModel:
        """Add a conversation (a script file, a `Script`, turns or a player); return its player."""
        if isinstance(source, str | os.PathLike) and self.base_dir is not None:
            source = self.base_dir / source  # an absolute `source` stays as it is
        model = source if isinstance(source, ScriptedModel) else ScriptedModel(source)
        with self._lock:
            if name is None:
                src = model.source
                name = Path(src).stem if src else f"conversation{len(self.conversations)}"
            self.conversations.append(Conversation(name=name, model=model))
        return model

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The request log: one JSON-ready entry per request received, in order.

        The bodies are kept as the bytes received and parsed again here, when a test asks.
        """
        with self._lock:
            entries = list(self._log)
        return [self._full(entry) for entry in entries]

    def _full(self, entry: dict[str, Any]) -> dict[str, Any]:
        """`entry` with its ``body`` read back: parsed JSON, or the text of one that is not."""
        if "body" not in entry:
            return dict(entry)
        index, is_json = entry["body"]
        raw = self._bodies[index]
        return {**entry, "body": json.loads(raw) if is_json else raw.decode("utf-8", "replace")}

    def status(self) -> dict[str, Any]:
        """Turns served and left per conversation (what ``GET /_donegate/status`` answers)."""
        with self._lock:
            convs = [c.status(i) for i, c in enumerate(self.conversations)]
            return {
                "requests": len(self._log),
                "conversations": convs,
                "unused_turns": sum(len(c["unused"]) for c in convs),
                "errors": sum(len(c["errors"]) for c in convs),
                "warnings": sum(len(c["warnings"]) for c in convs),
                "side_calls": self._side_served,
            }

    def assert_exhausted(self) -> None:
        """Fail unless every conversation used all its turns and nothing went wrong."""
        problems: list[str] = []
        for conv in self.conversations:
            try:
                conv.model.assert_exhausted()
            except AssertionError as exc:
                problems.append(f"conversation {conv.name!r}: {exc}")
        if problems:
            raise AssertionError("\n".join(problems))

    # -- one request, no HTTP ----------------------------------------------------------------

    def handle(
        self,
        method: str,
        path: str,
        *,
        query: str = "",
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> Reply:
        """The reply to one request (headers with lower-case names)."""
        if len(body) > self.max_body:
            message = f"request body larger than {self.max_body} bytes (--max-body)"
            return self.refuse(
                method, path, query=query, headers=headers, status=413, message=message
            )
        heads = {k.lower(): v for k, v in (headers or {}).items()}
        route = _routes.route(method, path, heads, query)
        if route.kind == "admin":
            return self._admin(route)
        entry = self._entry(method, path, query, heads, route)
        parsed, problem = _routes.json_body(body)
        if body:  # kept once, as received; `requests` parses it again when asked
            entry["body"] = (self._bodies.append(body, lane=path), problem is None)
        incoming = Incoming(method, path, query, heads, body, parsed, problem)
        if self.upstream is not None and route.kind != "ping":
            reply = self._forward(route, incoming)
        elif route.kind == "model":
            reply = self._answer(route, incoming, entry)
        else:
            reply = _routes.static_reply(route, parsed)
        entry["status"] = None if reply.disconnect else reply.status
        self._record(entry, incoming)
        return reply

    def refuse(
        self,
        method: str,
        path: str,
        *,
        query: str = "",
        headers: Mapping[str, str] | None = None,
        status: int,
        message: str,
    ) -> Reply:
        """Answer a request that is not read (a body past `max_body`), and log it.

        The connection stays open: the server drops the rest of the body as it arrives, so the
        client, still sending, reads this answer instead of a connection reset.
        """
        heads = {k.lower(): v for k, v in (headers or {}).items()}
        entry = self._entry(method, path, query, heads, _routes.route(method, path, heads, query))
        entry["status"], entry["error"] = status, message
        self._record(entry)
        log.warning("%s %s: %s; answered %d", method, path, message, status)
        return _routes.malformed_reply(status, message, method, path, close=False)

    def _entry(
        self, method: str, path: str, query: str, heads: Mapping[str, str], route: Route
    ) -> dict[str, Any]:
        return {
            "seq": 0,
            "method": method,
            "path": path,
            "query": _routes.redact_query(query),
            "headers": {k: v for k, v in heads.items() if k not in _SECRET_HEADERS},
            "api": route.api,
            "kind": route.kind,
        }

    def _answer(self, route: Route, incoming: Incoming, entry: dict[str, Any]) -> Reply:
        api = route.api
        assert api is not None
        path, heads, parsed = incoming.path, incoming.headers, incoming.parsed
        if incoming.problem is not None or not isinstance(parsed, dict):
            problem = incoming.problem or "not an object"
            return error_reply(api, 400, f"{api}: unreadable request body: {problem}")
        request = _read(api, path, parsed)  # the one parse; None: the player says what is wrong
        if self.side_calls and request is not None and not request.tools:
            return self._side(route, parsed, entry)
        with self._lock:
            try:
                index, conv = select(self.conversations, heads.get(CONVERSATION_HEADER), request)
            except UserError as exc:
                return error_reply(api, 400, str(exc))
            entry["conversation"] = conv.name
            entry["conversation_index"] = index
            entry["turn"] = conv.model.calls
            try:
                handler = conv.handlers.get(api) or conv.model.responder(api)
            except UnsupportedTurn as exc:
                return error_reply(api, 400, str(exc))
            conv.handlers[api] = handler
            errors, warned = len(conv.model.errors), len(conv.model.warnings)
            raw = Raw(api, path, self._bodies, entry["body"][0])
            response, fault = handler.answer(path, parsed, raw=raw, request=request)
            latency = conv.model.latencies.get(index_taken := entry["turn"], 0.0)
            if len(conv.model.requests) <= index_taken:
                latency = 0.0  # the request took no turn (unreadable): answered at once
            failed: DonegateError | None = None
            if len(conv.model.errors) > errors:
                failed = conv.model.errors[-1]
                entry["error"] = str(failed)
            warnings = conv.model.warnings[warned:]
        if warnings:
            entry["warnings"] = warnings
            for line in warnings:
                log.warning("conversation %r: %s", conv.name, line)
        if fault is not None:
            entry["fault"] = {"delay": fault.delay, "disconnect": fault.disconnect}
        if response is None:
            assert fault is not None
            return Reply(status=0, body=b"", delay=fault.delay, disconnect=True)
        if failed is not None:
            # A test-kit failure: the provider's own error shape, and no SDK retry of it.
            return error_reply(api, response.status_code, str(failed))
        headers = {
            k: v for k, v in response.headers.items() if k.lower() not in _routes.HOP_HEADERS
        }
        reply = Reply(status=response.status_code, body=response.content, headers=headers)
        if route.stream_array:
            reply = _routes.sse_to_array(reply)
        if fault is not None:
            reply = replace(reply, delay=fault.delay)
        if latency and failed is None:  # a slow model, not a fault: held, then answered
            entry["latency"] = latency
            reply = replace(reply, delay=reply.delay + latency)
        return reply

    def _side(self, route: Route, body: dict[str, Any], entry: dict[str, Any]) -> Reply:
        """A side call (no tools offered): answered here, no conversation's turn used."""
        assert route.api is not None
        stream = route.stream or body.get("stream") is True
        rendered = wire_format(route.api).render_response(side_turn(route.api, body), stream=stream)
        with self._lock:
            self._side_served += 1
        entry["side_call"] = True
        headers = {"content-type": rendered.content_type, **rendered.headers}
        reply = Reply(status=rendered.status, body=rendered.body.encode("utf-8"), headers=headers)
        return _routes.sse_to_array(reply) if route.stream_array else reply

    def _admin(self, route: Route) -> Reply:
        if route.name == "requests":
            return Reply.json(200, self.requests)
        return Reply.json(200, self.status())

    def _record(self, entry: dict[str, Any], incoming: Incoming | None = None) -> None:
        with self._lock:
            entry["seq"] = len(self._log)
            self._log.append(entry)
            if self._log_path is not None:
                if self._log_file is None:
                    self._log_file = open(self._log_path, "w", encoding="utf-8")  # noqa: SIM115
                if incoming is not None and "body" in entry:
                    parsed, body = incoming.parsed, incoming.body
                    shown = parsed if incoming.problem is None else body.decode("utf-8", "replace")
                    entry = {**entry, "body": shown}
                self._log_file.write(self._log_line(entry))
                self._log_file.flush()

    def _log_line(self, entry: dict[str, Any]) -> str:
        """The line ``--log`` writes for `entry`: the one place request bodies reach a file."""
        return log_line(entry, self.recorder) + "\n"

    # -- proxy mode --------------------------------------------------------------------------

    def _forward(self, route: Route, incoming: Incoming) -> Reply:
        import httpx2

        method, path, query = incoming.method, incoming.path, incoming.query
        heads, body, parsed = incoming.headers, incoming.body, incoming.parsed
        assert self.upstream is not None
        with self._lock:
            if self._upstream_client is None:
                self._upstream_client = httpx2.Client(timeout=600.0)
            client = self._upstream_client
        url = self.upstream + path + (f"?{query}" if query else "")
        send = {k: v for k, v in heads.items() if k not in _routes.PROXY_DROP}
        send["accept-encoding"] = "identity"
        try:
            response = client.request(method, url, headers=send, content=body)
        except httpx2.HTTPError as exc:
            return error_reply(route.api or "openai-chat", 502, f"upstream {self.upstream}: {exc}")
        headers = {
            k: v for k, v in response.headers.items() if k.lower() not in _routes.HOP_HEADERS
        }
        reply = Reply(status=response.status_code, body=response.content, headers=headers)
        if route.kind == "model" and route.api is not None and isinstance(parsed, dict):
            assert self.recorder is not None
            self.recorder.add(
                route.api,
                parsed,
                status=reply.status,
                body=reply.body.decode("utf-8", "replace"),
                stream=route.stream or parsed.get("stream") is True,
                retry_after=reply.headers.get("retry-after"),
            )
        return reply

    # -- the server --------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the running server (OpenAI clients want ``+ "/v1"``)."""
        if self._server is None:
            raise UserError("the emulator is not running: use it as a context manager or start()")
        return self._server.base_url

    def app(self) -> Any:
        """The ASGI application answering through `handle` (starlette; the ``server`` extra)."""
        from donegate.testing._server import asgi_app

        return asgi_app(self)

    def start(self) -> Emulator:
        """Start serving on a background thread; returns once the port accepts connections."""
        from donegate.testing._server import ServerThread

        if self._server is None:
            self.stopping.clear()
            self._server = ServerThread(self.app(), host=self.host, port=self.port)
            self._server.start()
            self.port = self._server.port
        return self

    def stop(self) -> None:
        """Stop the server, close the log, and in proxy mode leave the recorder complete."""
        if self._server is not None:
            self.stopping.set()
            self._server.stop()
            self._server = None
        with self._lock:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None
            if self._upstream_client is not None:
                self._upstream_client.close()
                self._upstream_client = None

    def serve(self, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve in the foreground until interrupted; `on_ready` gets the base URL first."""
        from donegate.testing._server import serve_forever

        try:
            serve_forever(self.app(), host=self.host, port=self.port, on_ready=on_ready)
        finally:
            self.stop()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _read(api: str, path: str, body: dict[str, Any]) -> ModelRequest | None:
    """`body` read by its wire format, or None when it cannot be (the player reports why)."""
    try:
        return read_request(api, path, body)
    except (DonegateError, ValueError, TypeError, KeyError, AttributeError):
        return None
