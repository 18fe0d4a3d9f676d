"""Models backed by the official SDK clients, over their real HTTP path.

The SDK client sends the request (auth, base URL, retries with backoff and jitter honouring
``retry-after``, timeouts); donegate's wire format renders the body and classifies the raw
response, so the SDK's typed models are never built and every ending is read by our adapter.
An error status the SDK gives up on becomes an error turn, never an exception.

Where the wire format can encode a body itself (history encoded once, `models/_encode.py`) and
the client is an SDK's plain client whose ``post`` takes ``content=``, the body goes as those
bytes: the same bytes the SDK would have made from the dict, without re-encoding the whole
conversation every turn. Any other client (Azure, Bedrock, Vertex, a subclass) gets the dict.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import warnings
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from donegate.errors import MissingExtra
from donegate.messages import Ending, Turn
from donegate.models._rules import error_turn
from donegate.models._sse import SSEDecoder
from donegate.models.base import ModelRequest, StreamAccumulator, WireFormat
from donegate.models.registry import wire_format

__all__ = ["AnthropicModel", "OpenAIChatModel", "OpenAIResponsesModel", "SDKClientModel"]


def _import(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(module, extra) from None


def _retry_after(headers: Any) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class SDKClientModel:
    """A model reached through an ``openai`` or ``anthropic`` SDK client's raw ``client.post``.

    The client sends our rendered body and hands back the raw response, which our wire format
    classifies. (Named ``StainlessModel`` in 0.1.0, after the generator of those SDKs; that name
    is a deprecated alias for one release.)
    """

    api = "openai-chat"
    path = "/chat/completions"
    provider = "openai"
    sdk = "openai"
    extra = "openai"

    def __init__(self, client: Any, model: str) -> None:
        self.client = client
        self.model = model
        self._sdk = _import(self.sdk, self.extra)
        self._wire: WireFormat = wire_format(self.api)
        self._is_async = type(client).__name__.startswith("Async")
        self._response_type: type[Any] | None = None
        self._takes_content = _takes_content(client)

    def _raw(self) -> type[Any]:
        """``httpx2.Response``: the ``cast_to`` that makes the SDK hand back the raw response."""
        if self._response_type is None:
            self._response_type = _import("httpx2", self.extra).Response
        return self._response_type

    @property
    def name(self) -> str:
        """``provider:model``."""
        return f"{self.provider}:{self.model}"

    def _wire_for(self, request: ModelRequest) -> WireFormat:
        """The wire format that reads this request's response (some depend on the request)."""
        return self._wire

    def _payload(self, wire: WireFormat, request: ModelRequest, stream: bool) -> dict[str, Any]:
        """``body=`` (a dict the SDK encodes) or ``content=`` (bytes encoded by the wire)."""
        encode = getattr(wire, "encode_request", None) if self._takes_content else None
        if encode is not None:
            if request.stream is not stream:
                request = replace(request, stream=stream)
            return {"content": encode(request, model=self.model)}
        if request.model != self.model or request.stream is not stream:
            request = replace(request, model=self.model, stream=stream)
        return {"body": wire.render_request(request)}

    def _http_error(self, wire: WireFormat, exc: Exception) -> Turn:
        status = getattr(exc, "status_code", None)
        response = getattr(exc, "response", None)
        if isinstance(status, int) and response is not None:
            try:
                body: Any = response.json()
            except ValueError:
                body = response.text
            return wire.parse_error(status, body, retry_after=_retry_after(response.headers))
        return error_turn(
            api=self.api,
            ending=Ending.ERROR,
            status=None,
            type_=type(exc).__name__,
            message=str(exc),
        )

    def request(self, request: ModelRequest) -> Turn:
        """One call through the SDK."""
        if self._is_async:
            return asyncio.run(self.arequest(request))
        wire = self._wire_for(request)
        try:
            response = self.client.post(
                self.path, **self._payload(wire, request, False), cast_to=self._raw()
            )
        except self._sdk.APIError as exc:
            return self._http_error(wire, exc)
        return wire.parse_response(response.json())

    async def arequest(self, request: ModelRequest) -> Turn:
        """One call through the async SDK client (a sync client runs on a thread)."""
        if not self._is_async:
            return await asyncio.to_thread(self.request, request)
        wire = self._wire_for(request)
        try:
            response = await self.client.post(
                self.path, **self._payload(wire, request, False), cast_to=self._raw()
            )
        except self._sdk.APIError as exc:
            return self._http_error(wire, exc)
        return wire.parse_response(response.json())

    async def astream(self, request: ModelRequest) -> AsyncIterator[str | Turn]:
        """Stream: text deltas as they arrive, then the turn.

        An async client streams line by line; a sync client's response is read on a thread.
        """
        httpx2 = _import("httpx2", self.extra)
        wire = self._wire_for(request)
        acc = wire.stream()
        decoder = SSEDecoder()
        body = self._payload(wire, request, True)
        try:
            if self._is_async:
                response = await self.client.post(
                    self.path, **body, cast_to=httpx2.Response, stream=True, stream_cls=None
                )
                async for line in response.aiter_lines():
                    for delta in _feed(decoder, acc, line):
                        yield delta
            else:
                response = await asyncio.to_thread(
                    functools.partial(self.client.post, **body),
                    self.path,
                    cast_to=httpx2.Response,
                    stream=True,
                    stream_cls=None,
                )
                lines = await asyncio.to_thread(lambda: list(response.iter_lines()))
                for line in lines:
                    for delta in _feed(decoder, acc, line):
                        yield delta
        except self._sdk.APIError as exc:
            yield self._http_error(wire, exc)
            return
        event = decoder.flush()
        if event is not None:
            acc.feed(*event)
        yield acc.finish()


_PLAIN_CLIENTS = frozenset(
    {
        ("openai", "OpenAI"),
        ("openai", "AsyncOpenAI"),
        ("anthropic", "Anthropic"),
        ("anthropic", "AsyncAnthropic"),
    }
)
"""The SDKs' own client classes, which send ``content=`` as it is. Others read the JSON body
while building the request (Azure OpenAI takes the deployment from its ``model``, Anthropic's
Bedrock and Vertex clients move ``model`` into the URL), and a subclass may too: they get the
dict."""


def _takes_content(client: Any) -> bool:
    """True when `client` is one of the SDKs' plain clients and its ``post`` takes ``content=``
    (releases before it had none: then the dict)."""
    kind = type(client)
    if (kind.__module__.partition(".")[0], kind.__name__) not in _PLAIN_CLIENTS:
        return False
    try:
        return "content" in inspect.signature(client.post).parameters
    except (AttributeError, TypeError, ValueError):
        return False


def _feed(decoder: SSEDecoder, acc: StreamAccumulator, line: str) -> list[str]:
    event = decoder.line(line)
    if event is None:
        return []
    delta = acc.feed(*event)
    return [delta] if delta else []


class OpenAIChatModel(SDKClientModel):
    """OpenAI Chat Completions, or any compatible server through ``base_url``."""


class OpenAIResponsesModel(SDKClientModel):
    """The OpenAI Responses API."""

    api = "openai-responses"
    path = "/responses"
    provider = "openai-responses"


class AnthropicModel(SDKClientModel):
    """The Anthropic Messages API."""

    api = "anthropic-messages"
    path = "/v1/messages"
    provider = "anthropic"
    sdk = "anthropic"
    extra = "anthropic"

    def _wire_for(self, request: ModelRequest) -> WireFormat:
        """Under ``thinking.display: "updates"`` (Opus 5.5) thinking text is a progress update."""
        thinking = request.settings.extra_body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("display") == "updates":
            from donegate.models.anthropic_messages import AnthropicMessages

            return AnthropicMessages(thinking_display="updates")
        return wire_format(self.api)


if TYPE_CHECKING:
    StainlessModel = SDKClientModel
    """Deprecated alias of `SDKClientModel` (removed in the next release)."""
else:

    def __getattr__(name: str) -> Any:
        """``StainlessModel``, the old name of `SDKClientModel`, still resolves, with a warning."""
        if name == "StainlessModel":
            warnings.warn(
                "donegate.models.sdk.StainlessModel is deprecated: use SDKClientModel",
                DeprecationWarning,
                stacklevel=2,
            )
            return SDKClientModel
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
