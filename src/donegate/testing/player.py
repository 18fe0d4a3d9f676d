"""The strict script player: a `Model` that answers with scripted turns, and fails loudly.

Two ways to use one player:

* **direct**: pass it as the model; each request gets the next `Turn` as it is.
* **over HTTP**: `handler(api)` is a function for ``httpx2.MockTransport`` that reads the request
  body with the wire format's `parse_request` and answers with its `render_response`, so the
  official SDK client and donegate's adapter parse real provider bytes (`sdk_client` wires one).

Either way it records every request, raises `ScriptExhausted` ("model called N times but script
has M turns") on a call past the end, and `assert_exhausted` fails when turns were left unplayed.
A turn that calls a tool the request did not offer is served all the same (models do that) and
noted in `warnings`. A request whose history holds a tool call that no tool result answers is
refused as every provider refuses it (HTTP 400; `UnansweredCalls` recorded in `errors`), so an
agent that drops a result fails its test instead of passing one a real API would have failed.
Retryable HTTP errors (408, 409, 429, 5xx) and transport faults (a ``delay`` turn, a
``disconnect`` turn) are retried by the player itself in direct mode, as often as the SDKs retry
over HTTP, so both paths count the same model calls. Over ``httpx2.MockTransport`` a fault
raises the exception httpx raises for it (``ReadTimeout``, ``RemoteProtocolError``) at once; the
emulator's server really waits and really drops the connection.

A ``latency`` turn is no fault: its answer comes after that many seconds. The player waits
through its seams, `sleep` for `request` (and a `handler`'s transport) and `asleep` for the async
loop (so a thousand runs on one event loop wait side by side); a test swaps them to see the wait
asked for without taking it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import threading
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from donegate.errors import (
    DonegateError,
    ScriptExhausted,
    UnansweredCalls,
    UnsupportedTurn,
    UserError,
    WireFormatError,
)
from donegate.messages import Ending, ErrorInfo, Message, ToolCall, ToolResult, Turn
from donegate.models.base import ModelRequest
from donegate.models.registry import wire_format
from donegate.testing._history import History, Raw, Spool, read_request
from donegate.testing._sdk import BASE_URL, SDK_APIS, _import, sdk_client
from donegate.testing.script import Fault, Script, describe_turn, load_script

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "BASE_URL",
    "SDK_APIS",
    "Answer",
    "Responder",
    "ScriptedModel",
    "is_retryable",
    "script_model",
    "sdk_client",
]

Answer = tuple["httpx2.Response | None", Fault | None]
"""A request's response (None when the connection is dropped) and the fault to apply to it."""


@functools.lru_cache(maxsize=256)
def _parsed(path: str, mtime: float) -> Script:
    return load_script(path)


def script_model(path: str | os.PathLike[str]) -> ScriptedModel:
    """A fresh player of the script file at `path`: what ``infer_model("script:FILE")`` gives.

    Parsed scripts are cached by path and modification time: a worker running many tasks that
    share a script parses it once, yet every task gets its own player (players keep state).
    """
    name = os.fspath(path)
    try:
        mtime = os.stat(name).st_mtime
    except OSError:
        raise UserError(f"'script:{name}': no such script file") from None
    return ScriptedModel(_parsed(name, mtime), name=f"script:{os.path.basename(name)}")


def is_retryable(status: int | None) -> bool:
    """True for the statuses the official SDKs retry: 408, 409, 429 and every 5xx."""
    return status is not None and (status in (408, 409, 429) or status >= 500)


class ScriptedModel:
    """A `Model` that plays a script's turns in order and records what it was asked."""

    def __init__(
        self,
        turns_or_script: Script | Iterable[Turn] | str | os.PathLike[str],
        *,
        name: str = "script",
        max_retries: int = 2,
    ) -> None:
        if isinstance(turns_or_script, str | os.PathLike):
            turns_or_script = load_script(turns_or_script)
        self.script: Script | None = None
        """The script played, when the player was built from one."""
        self.faults: Mapping[int, Fault] = {}
        """Transport faults by turn index (``delay``, ``disconnect`` turns)."""
        self.latencies: Mapping[int, float] = {}
        """Seconds each ``latency`` turn takes to answer, by turn index."""
        if isinstance(turns_or_script, Script):
            self.script = turns_or_script
            self.turns: tuple[Turn, ...] = turns_or_script.turns
            self.faults = turns_or_script.faults
            self.latencies = turns_or_script.latencies
        else:
            self.turns = tuple(turns_or_script)
        self.max_retries = max_retries
        """Retries of a retryable HTTP error or fault in direct mode (the SDKs' default is 2)."""
        self.requests = History()
        """Every request received, in order (retries and extra calls included); one received
        over HTTP is kept as its bytes and parsed again when read."""
        self.errors: list[DonegateError] = []
        """Problems met while answering (extra calls, turns a wire format cannot express)."""
        self.warnings: list[str] = []
        """Turns served that called a tool the request did not offer, one line each."""
        self.sleep: Callable[[float], None] = time.sleep
        """How `request` (and a `handler`) waits out a ``latency`` turn."""
        self.asleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        """How `arequest` and `astream` wait out a ``latency`` turn, without blocking the loop."""
        self._name = name
        self._lock = threading.Lock()
        self._spool: Spool | None = None

    @property
    def name(self) -> str:
        """The model name events and telemetry show."""
        return self._name

    @property
    def source(self) -> str | None:
        """The script file, when there is one."""
        return self.script.source if self.script is not None else None

    @property
    def bodies(self) -> Sequence[dict[str, Any]]:
        """Every raw JSON request body received over HTTP, in order (parsed when read)."""
        return self.requests.bodies()

    def spool(self) -> Spool:
        """Where this player keeps the bodies it receives over HTTP itself."""
        with self._lock:
            if self._spool is None:
                self._spool = Spool()
            return self._spool

    @property
    def calls(self) -> int:
        """Requests received so far, each retry and each extra call counted."""
        return len(self.requests)

    @property
    def unused_turns(self) -> tuple[Turn, ...]:
        """The turns not played yet."""
        return self.turns[self.calls :]

    def assert_exhausted(self) -> None:
        """Fail unless every turn was played and nothing went wrong while answering."""
        problems = self.problems()
        if problems:
            raise AssertionError("\n".join(problems))

    def problems(self, *, unused: bool = True) -> list[str]:
        """What `assert_exhausted` fails on: errors met, then (if `unused`) turns left unplayed."""
        problems = [self._where(None) + str(e) for e in self.errors]
        left = self.unused_turns
        if unused and left:
            first = len(self.turns) - len(left)
            lines = [
                f"  turns[{first + i}]: "
                + describe_turn(
                    turn, self.faults.get(first + i), self.latencies.get(first + i, 0.0)
                )
                for i, turn in enumerate(left)
            ]
            problems.insert(
                0,
                f"{self._where(None)}{_count(len(left), 'unused turn')}: model called "
                f"{_count(self.calls, 'time')} but script has {_count(len(self.turns), 'turn')}\n"
                + "\n".join(lines),
            )
        return problems

    # -- direct mode -----------------------------------------------------------------------

    def request(self, request: ModelRequest) -> Turn:
        """The next turn; retryable HTTP errors and faults are retried like the SDKs would.

        A fault (``delay``, ``disconnect``) fails its attempt as a timeout or a dropped
        connection would; when the retries are spent it is the error turn an SDK model reports.
        A ``latency`` turn is answered after its seconds (`sleep`).
        """
        turn, wait = self._answer(request)
        if wait:
            self.sleep(wait)
        return turn

    async def arequest(self, request: ModelRequest) -> Turn:
        """`request`, for the async loop: a ``latency`` turn is awaited (`asleep`)."""
        turn, wait = self._answer(request)
        if wait:
            await self.asleep(wait)
        return turn

    async def astream(self, request: ModelRequest) -> AsyncIterator[str | Turn]:
        """The turn's visible text in a few pieces, then the turn."""
        turn = await self.arequest(request)
        for piece in _pieces(turn.text):
            yield piece
        yield turn

    def _answer(self, request: ModelRequest) -> tuple[Turn, float]:
        """The turn `request` ends with, after retries, and the latency its attempts took."""
        attempt, wait = 0, 0.0
        while True:
            try:
                index, turn = self._take(request)
            except UnansweredCalls as exc:  # the 400 an SDK model reports for it
                return Turn(
                    message=Message(role="assistant", parts=()),
                    ending=Ending.ERROR,
                    raw_reason="400",
                    detail=str(exc),
                    error=ErrorInfo(status=400, type="invalid_request_error", message=str(exc)),
                ), wait
            fault = self.faults.get(index)
            if fault is not None:
                turn = fault.error_turn()
            wait += self.latencies.get(index, 0.0)
            retryable = fault is not None or (
                turn.error is not None and is_retryable(turn.error.status)
            )
            if attempt < self.max_retries and retryable:
                attempt += 1
                continue
            return turn, wait

    # -- HTTP mode -------------------------------------------------------------------------

    def handler(self, api: str) -> Callable[[httpx2.Request], httpx2.Response]:
        """A ``httpx2.MockTransport`` handler answering as the `api` wire format would.

        A fault turn raises what httpx raises for it, at once: ``ReadTimeout`` for a delay (no
        clock here: a delay is always past the timeout), ``RemoteProtocolError`` for a dropped
        connection. A ``latency`` turn is answered after its seconds (`sleep`). Raises
        `UnsupportedTurn` at once when a turn cannot be expressed in `api`.
        """
        http = _import("httpx2", "openai")
        respond = self.responder(api)

        def handle(http_request: httpx2.Request) -> httpx2.Response:
            index = self.calls  # the turn this request takes (a transport's calls are serial)
            response, fault = respond(http_request)
            wait = self.latencies.get(index, 0.0)
            if wait and response is not None and len(self.requests) > index:
                self.sleep(wait)
            if fault is not None and fault.timeout:
                raise http.ReadTimeout("timed out", request=http_request)
            if response is None:
                raise http.RemoteProtocolError(
                    "Server disconnected without sending a response.", request=http_request
                )
            return response

        return handle

    def responder(self, api: str) -> Responder:
        """For servers: each request's response and the fault to apply to it, not raised.

        The response is None when the fault drops the connection unanswered. Raises
        `UnsupportedTurn` at once when a turn cannot be expressed in `api`.
        """
        return Responder(self, api)

    def replayed(self, request: ModelRequest, turn: Turn) -> None:
        """`request` was answered with `turn` from a run's journal, in this player's place.

        A resumed worker run replays its journaled turns instead of calling the model; the player
        counts them as played, with the error and fault turns retried before the one that
        matched, so its next request gets the turn after them. A turn the script does not hold
        next counts as one call.
        """

        def answers(i: int) -> bool:
            return i not in self.faults and self.turns[i] == turn

        with self._lock:
            start = index = len(self.requests)
            while (
                index < len(self.turns)
                and not answers(index)
                and (index in self.faults or self.turns[index].ending is Ending.ERROR)
            ):
                index += 1
            played = index - start + 1 if index < len(self.turns) and answers(index) else 1
            self.requests.extend([request] * played)

    # -- internals -------------------------------------------------------------------------

    def _take(self, request: ModelRequest, *, raw: Raw | None = None) -> tuple[int, Turn]:
        """Record one call and pick its turn; past the end, raise (over HTTP, `fail` records)."""
        with self._lock:
            self.requests.append(request if raw is None else raw)
            index = len(self.requests) - 1
            missing = unanswered(request.messages)
            if missing:
                error = UnansweredCalls(missing)
                self.errors.append(error)
                raise error
            if index < len(self.turns):
                self._check_offered(index, request)
                return index, self.turns[index]
            exc = ScriptExhausted(len(self.requests), len(self.turns))
            if raw is None:
                self.errors.append(exc)
            raise exc

    def _check_offered(self, index: int, request: ModelRequest) -> None:
        """Note each call of turn `index` to a tool `request` did not offer (once per turn)."""
        offered = {t.name for t in request.tools}
        for call in self.turns[index].tool_calls:
            if call.name in offered:
                continue
            shown = ", ".join(sorted(offered)) or "no tools"
            line = (
                f"{self._where(index)}calls {call.name!r}, a tool the request did not offer "
                f"(offered: {shown}); served as scripted"
            )
            if line not in self.warnings:
                self.warnings.append(line)

    def _where(self, index: int | None) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return prefix if index is None else f"{prefix}turns[{index}]: "


class Responder:
    """`ScriptedModel.responder(api)`: answers requests of one wire format for a server.

    Called with an ``httpx2.Request``; a server that has read the body already calls `answer`,
    so each request is parsed once.
    """

    def __init__(self, player: ScriptedModel, api: str) -> None:
        self._http = _import("httpx2", "openai")
        self._player = player
        self._api = api
        self._wire = wire = wire_format(api)
        for index, turn in enumerate(player.turns):
            fault = player.faults.get(index)
            if fault is not None and fault.disconnect:
                continue  # never rendered
            for stream in (False, True):
                try:
                    wire.render_response(turn, stream=stream)
                except UnsupportedTurn as exc:
                    raise UnsupportedTurn(f"{player._where(index)}{exc}") from None

    def __call__(self, http_request: httpx2.Request) -> Answer:
        content = http_request.content
        try:
            body = json.loads(content or b"{}")
        except ValueError as exc:
            return self._unreadable(exc), None
        return self.answer(http_request.url.path, body, content=content)

    def answer(
        self,
        path: str,
        body: Any,
        *,
        content: bytes = b"",
        raw: Raw | None = None,
        request: ModelRequest | None = None,
    ) -> Answer:
        """The answer to a request to `path` whose JSON `body` is read already.

        `request` is the body read with `read_request` (read here when None); `raw` is where
        the body's bytes are kept (else `content` goes to the player's own spool).
        """
        player, api = self._player, self._api
        try:
            if not isinstance(body, dict):
                raise WireFormatError(api, "a request body must be a JSON object")
            if request is None:
                request = read_request(api, path, body)
        except (ValueError, WireFormatError) as exc:
            return self._unreadable(exc), None
        if raw is None:
            spool = player.spool()
            raw = Raw(api, path, spool, spool.append(content, lane=path))
        try:
            index, turn = player._take(request, raw=raw)
        except ScriptExhausted as exc:
            return self._fail(500, exc), None
        except UnansweredCalls as exc:
            return self._rejected(exc), None
        fault = player.faults.get(index)
        if fault is not None and fault.disconnect:
            return None, fault
        try:
            rendered = self._wire.render_response(turn, stream=request.stream)
        except UnsupportedTurn as exc:
            return self._fail(400, UnsupportedTurn(f"{player._where(index)}{exc}")), None
        if rendered.status >= 400 and (turn.error is None or turn.error.status is None):
            # A failed response, not an HTTP error the script asked for: the SDKs must not
            # retry it into the next turn (direct mode does not retry it either).
            rendered = replace(rendered, headers={"x-should-retry": "false", **rendered.headers})
        headers = {"content-type": rendered.content_type, **rendered.headers}
        content = rendered.body.encode("utf-8")
        return self._http.Response(rendered.status, headers=headers, content=content), fault

    def _rejected(self, exc: UnansweredCalls) -> httpx2.Response:
        """What a provider answers a request it rejects (recorded in `errors` already)."""
        body = {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "code": 400,
                "status": "INVALID_ARGUMENT",
                "message": str(exc),
            },
        }
        return self._http.Response(  # type: ignore[no-any-return]
            400, headers={"x-should-retry": "false"}, json=body
        )

    def _unreadable(self, exc: Exception) -> httpx2.Response:
        return self._fail(400, UserError(f"{self._api}: unreadable request body: {exc}"))

    def _fail(self, status: int, error: DonegateError) -> httpx2.Response:
        self._player.errors.append(error)
        body = {
            "type": "error",
            "error": {
                "type": "api_error",
                "code": status,
                "status": "INTERNAL" if status >= 500 else "INVALID_ARGUMENT",
                "message": str(error),
            },
        }
        # x-should-retry: the SDKs must not retry a test-kit failure into more calls.
        return self._http.Response(  # type: ignore[no-any-return]
            status, headers={"x-should-retry": "false"}, json=body
        )


def unanswered(messages: Sequence[Message]) -> list[str]:
    """The ids of the tool calls in `messages` that no later tool result answers, in order."""
    answered: set[str] = set()
    open_calls: list[str] = []
    for message in reversed(messages):
        for part in reversed(message.parts):
            if isinstance(part, ToolResult):
                answered.add(part.call_id)
            elif isinstance(part, ToolCall) and part.id not in answered:
                open_calls.append(part.id)
    return open_calls[::-1]


def _pieces(text: str, count: int = 3) -> Iterator[str]:
    """`text` in at most `count` pieces, as a stream would deliver it."""
    if not text:
        return
    size = -(-len(text) // count)
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _count(n: int, word: str) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
