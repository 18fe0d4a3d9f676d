"""The emulator's URL map and the replies that need no script: model lists, token counts, errors.

Pure functions of the request, so the routing is tested without a server. That includes what
makes a request unanswerable before it reaches a script (`head_problem`, `json_body`): every
such request still gets an answer, a 400 (413 for a body too large) in the provider's shape.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from donegate._files import nested_deeper
from donegate.messages import Ending, ErrorInfo, Message, TextPart, Turn
from donegate.models._sse import iter_sse
from donegate.models.base import ModelRequest
from donegate.models.providers import PROVIDERS, by_wire
from donegate.models.registry import wire_format
from donegate.testing.player import is_retryable

__all__ = [
    "HOP_HEADERS",
    "MAX_DEPTH",
    "MAX_HEAD",
    "MAX_HEADERS",
    "PROXY_DROP",
    "HeadProblem",
    "Incoming",
    "Reply",
    "Route",
    "error_reply",
    "head_problem",
    "json_body",
    "listed_models",
    "malformed_reply",
    "redact_query",
    "route",
    "sse_to_array",
    "static_reply",
    "user_texts",
]

Kind = Literal["model", "count_tokens", "models", "model_info", "ping", "admin", "unknown"]

HOP_HEADERS = frozenset(("content-length", "content-encoding", "transfer-encoding", "connection"))
"""Headers the server sets itself; never copied from a rendered or forwarded response."""
PROXY_DROP = frozenset(("host", "content-length", "connection", "accept-encoding"))
"""Request headers not forwarded upstream (the client sets its own)."""

# the provider table's emulator columns: request paths -> wire format
_MODEL_PATHS = {path: p.wire for p in PROVIDERS for path in p.paths}
_COUNT_PATHS = {path: p.wire for p in PROVIDERS for path in p.count_paths}
_PATTERNS = tuple((re.compile(p.path_pattern), p.wire) for p in PROVIDERS if p.path_pattern)
_GEMINI_LIST = re.compile(r"^/(?:v1beta|v1|v1alpha)/models/?$")
_MODEL_INFO = re.compile(r"^/(?:v1|v1beta)/models/([^/:]+)$")
MAX_DEPTH = 100
"""JSON nesting a request body may have; real requests (tool schemas included) stay far below."""
MAX_HEAD = 64 * 1024
"""Bytes a request line and its headers may take."""
MAX_HEADERS = 256
"""Header lines a request may have."""
_MAX_LINE = 8 * 1024
_REQUEST_LINE = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP/(\d+\.\d+)")
_METHOD_PREFIX = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]{0,32}(?: |$)")


@dataclass(frozen=True, kw_only=True, slots=True)
class Reply:
    """One HTTP answer."""

    status: int
    """The HTTP status."""
    body: bytes
    """The body bytes, exactly as sent."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Response headers, ``content-type`` included."""
    delay: float = 0.0
    """Seconds to wait before sending (a scripted slow answer; the client may time out)."""
    disconnect: bool = False
    """Close the connection instead of answering (after `delay`); `status` is 0, unsent."""

    @classmethod
    def json(cls, status: int, value: Any) -> Reply:
        """A JSON reply."""
        text = json.dumps(value, ensure_ascii=False)
        return cls(
            status=status, body=text.encode("utf-8"), headers={"content-type": "application/json"}
        )


@dataclass(frozen=True, slots=True)
class Route:
    """What a request is for."""

    kind: Kind
    """Which kind of endpoint."""
    api: str | None = None
    """The wire format whose shapes (answers and errors) apply."""
    name: str = ""
    """The admin endpoint, or the model named in a Gemini path."""
    stream: bool = False
    """The path itself asks for a stream (Gemini ``streamGenerateContent``)."""
    stream_array: bool = False
    """Gemini streaming without ``alt=sse``: the chunks as one JSON array."""


def route(method: str, path: str, headers: Mapping[str, str], query: str = "") -> Route:
    """Where a request goes; `headers` have lower-case names."""
    method = method.upper()
    if path.startswith("/_donegate/") and method == "GET":
        return Route("admin", name=path.removeprefix("/_donegate/").strip("/"))
    if method in ("GET", "HEAD") and path in ("", "/"):
        return Route("ping")
    if method == "POST":
        if path in _MODEL_PATHS:
            return Route("model", _MODEL_PATHS[path])
        if path in _COUNT_PATHS:
            return Route("count_tokens", _COUNT_PATHS[path])
        for pattern, api in _PATTERNS:  # Gemini's: the model and the method are in the path
            m = pattern.match(path)
            if m and m.group(2) in ("generateContent", "streamGenerateContent"):
                stream = m.group(2) == "streamGenerateContent"
                sse = "alt=sse" in query
                return Route("model", api, m.group(1), stream, stream and not sse)
            if m and m.group(2) == "countTokens":
                return Route("count_tokens", api, m.group(1))
    if method == "GET":
        if path in ("/v1/models", "/models"):
            api = "anthropic-messages" if "anthropic-version" in headers else "openai-chat"
            return Route("models", api)
        if _GEMINI_LIST.match(path):
            return Route("models", "gemini")
        m = _MODEL_INFO.match(path)
        if m:
            api = "anthropic-messages" if "anthropic-version" in headers else "openai-chat"
            return Route("model_info", "gemini" if "v1beta" in path else api, m.group(1))
    return Route("unknown")


def json_body(body: bytes) -> tuple[Any, str | None]:
    """The parsed body, or None and what is wrong with it (nesting past `MAX_DEPTH` included)."""
    if not body:
        return None, "empty body"
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"not JSON: {exc}"
    except RecursionError:
        return None, f"JSON nested deeper than {MAX_DEPTH} levels"
    if nested_deeper(value, MAX_DEPTH):
        return None, f"JSON nested deeper than {MAX_DEPTH} levels"
    return value, None


@dataclass(frozen=True, slots=True)
class HeadProblem:
    """Why the bytes received so far cannot be an HTTP/1.x request head."""

    message: str
    """What is wrong, for the error body."""
    method: str = ""
    """The request line's method, when it was read."""
    target: str = ""
    """The request line's target, when it was read (it picks the error's provider shape)."""


def head_problem(head: bytes) -> HeadProblem | None:
    """What makes `head`, the start of a request as received so far, not HTTP/1.x; None if fine.

    Decided as early as the bytes allow, so a client sending something else (random bytes,
    HTTP/0.9's bare ``GET /path``, HTTP/2's preface, 10,000 headers) is answered at once
    instead of being left waiting for a head that never completes.
    """
    head = head.lstrip(b"\r\n")
    line, newline, rest = head.partition(b"\n")
    line = line.removesuffix(b"\r")
    if not newline:
        if not _METHOD_PREFIX.match(line):
            return HeadProblem("not an HTTP request")
        if len(line) > _MAX_LINE:
            return HeadProblem(f"request line longer than {_MAX_LINE // 1024} KiB")
        return None
    m = _REQUEST_LINE.fullmatch(line)
    if m is None:
        parts = line.split(b" ")
        if len(parts) == 2 and _METHOD_PREFIX.match(parts[0] + b" "):
            return HeadProblem(
                "HTTP/0.9 is not supported: send HTTP/1.1", _ascii(parts[0]), _ascii(parts[1])
            )
        return HeadProblem("not an HTTP/1.x request line")
    method, target, version = _ascii(m.group(1)), _ascii(m.group(2)), m.group(3)
    if not version.startswith(b"1."):
        return HeadProblem(
            f"HTTP/{_ascii(version)} is not supported: send HTTP/1.1", method, target
        )
    headers, end, _ = rest.partition(b"\r\n\r\n")
    if not end:
        headers, end, _ = rest.partition(b"\n\n")
    if headers.count(b"\n") + (1 if headers else 0) > MAX_HEADERS:
        return HeadProblem(f"more than {MAX_HEADERS} header lines", method, target)
    if len(head) > MAX_HEAD and not end:
        return HeadProblem(f"request head larger than {MAX_HEAD // 1024} KiB", method, target)
    return None


def _ascii(raw: bytes) -> str:
    return raw.decode("ascii", "replace")


UNIVERSAL_TYPE = "invalid_request_error"


def malformed_reply(
    status: int, message: str, method: str = "", target: str = "", *, close: bool = True
) -> Reply:
    """The answer to a request that could not be read: its provider's error shape if the path
    names one, else a body every SDK reads (OpenAI's, Anthropic's and Gemini's fields at once).
    With `close`, the connection is closed after it."""
    path = target.partition("?")[0]
    api = route(method or "POST", path, {}).api if path.startswith("/") else None
    if api is not None:
        reply = error_reply(api, status, message)
    else:
        body = {
            "type": "error",
            "error": {
                "type": UNIVERSAL_TYPE if status < 500 else "api_error",
                "code": status,
                "status": "INVALID_ARGUMENT" if status != 413 else "FAILED_PRECONDITION",
                "message": message,
            },
        }
        reply = Reply.json(status, body)
    return replace(reply, headers={**reply.headers, "connection": "close"}) if close else reply


def redact_query(query: str) -> str:
    """The query string with Gemini's ``key=`` API key removed."""
    return re.sub(r"(^|&)key=[^&]*", r"\1key=[REDACTED]", query)


def rough_tokens(value: Any) -> int:
    """About four characters a token: enough for clients that budget their context."""
    return max(1, math.ceil(len(json.dumps(value, ensure_ascii=False)) / 4))


def static_reply(route: Route, body: Any) -> Reply:
    """Answers that come from no script: token counts, model lists, pings, unknown paths."""
    if route.kind == "ping":
        return Reply(status=200, body=b"", headers={"content-type": "text/plain"})
    if route.kind == "count_tokens":
        src = body if isinstance(body, dict) else {}
        if route.api == "gemini":
            count = rough_tokens([src.get("contents"), src.get("systemInstruction")])
            return Reply.json(200, {"totalTokens": count})
        parts = [src.get("system"), src.get("messages"), src.get("tools")]
        return Reply.json(200, {"input_tokens": rough_tokens(parts)})
    if route.kind == "models":
        return Reply.json(200, _model_list(route.api))
    if route.kind == "model_info":
        return Reply.json(200, _model_info(route.api, route.name))
    return Reply.json(
        404,
        {
            "type": "error",
            "error": {
                "type": "not_found_error",
                "code": 404,
                "status": "NOT_FOUND",
                "message": "donegate emulator: no such endpoint",
            },
        },
    )


def _model_info(api: str | None, name: str) -> dict[str, Any]:
    if api == "gemini":
        return {
            "name": f"models/{name}",
            "displayName": name,
            "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }
    if api == "anthropic-messages":
        return {
            "type": "model",
            "id": name,
            "display_name": name,
            "created_at": "2025-01-01T00:00:00Z",
        }
    return {"id": name, "object": "model", "created": 1735689600, "owned_by": "donegate"}


def listed_models(api: str | None) -> tuple[str, ...]:
    """The names the model list of `api` shows (OpenAI's for any other); any name is accepted
    in requests."""
    row = by_wire(api) if api is not None else None
    if row is None or not row.listed_models:
        row = by_wire("openai-chat")
    return row.listed_models if row is not None else ()


def _model_list(api: str | None) -> dict[str, Any]:
    names = listed_models(api)
    if api == "gemini":
        return {"models": [_model_info(api, n) for n in names]}
    if api == "anthropic-messages":
        return {
            "data": [_model_info(api, n) for n in names],
            "has_more": False,
            "first_id": names[0],
            "last_id": names[-1],
        }
    return {"object": "list", "data": [_model_info(api, n) for n in names]}


def sse_to_array(reply: Reply) -> Reply:
    """Gemini's streamed answer without ``alt=sse``: the same chunks as one JSON array."""
    if reply.status >= 400:
        return reply
    chunks = [data for _, data in iter_sse(reply.body.decode("utf-8")) if data.strip()]
    body = "[" + ",\r\n".join(chunks) + "]"
    headers = {**reply.headers, "content-type": "application/json; charset=UTF-8"}
    return Reply(status=reply.status, body=body.encode("utf-8"), headers=headers)


@dataclass(frozen=True, slots=True)
class Incoming:
    """One request as received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    parsed: Any
    problem: str | None


def error_reply(api: str, status: int, message: str) -> Reply:
    """The provider's own error body for `status`, marked so SDKs do not retry it."""
    turn = Turn(
        message=Message(role="assistant", parts=()),
        ending=Ending.ERROR,
        error=ErrorInfo(status=status, message=message),
    )
    rendered = wire_format(api).render_response(turn)
    headers = {"content-type": rendered.content_type, **rendered.headers}
    if is_retryable(status):
        headers["x-should-retry"] = "false"
    return Reply(status=status, body=rendered.body.encode("utf-8"), headers=headers)


def user_texts(request: ModelRequest) -> tuple[str, ...]:
    """The text parts of the request's user messages, in order, stripped.

    The emulator matches them against each script's ``prompt`` to tell conversations apart when
    one client runs several at once (Claude Code's subagents share its base URL).
    """
    return tuple(
        part.text.strip()
        for message in request.messages
        if message.role == "user"
        for part in message.parts
        if isinstance(part, TextPart)
    )
