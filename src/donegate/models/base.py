"""The seams between the loop and providers: requests, wire formats, models.

A `WireFormat` owns everything about one provider API's JSON: parsing a response (whole or
streamed) into a classified `Turn`, mapping error bodies, rendering a canonical request, and (for
the test kit) rendering a `Turn` back into the provider's response bytes. A `Model` sends a
`ModelRequest` somewhere and returns a `Turn`; it never decides what the loop does next.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from donegate._frozen import fast_init
from donegate.messages import Message, Turn

__all__ = [
    "Model",
    "ModelRequest",
    "ModelSettings",
    "StreamAccumulator",
    "ToolSpec",
    "WireFormat",
    "WireResponse",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """A tool as the model sees it."""

    name: str
    """The tool name."""
    description: str = ""
    """What the tool does, for the model."""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON Schema of the arguments object."""
    strict: bool = False
    """Ask providers that support it to enforce the schema."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelSettings:
    """Generation settings; None means the provider's default."""

    max_tokens: int | None = None
    """Output-token limit for one call."""
    temperature: float | None = None
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling."""
    stop: tuple[str, ...] = ()
    """Stop sequences."""
    tool_choice: str | None = None
    """``auto``, ``required``, ``none`` or a tool name."""
    parallel_tool_calls: bool | None = None
    """Allow several calls in one turn, where the provider has the switch."""
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """Provider-specific fields merged into the request body as-is."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    """One model call, provider-neutral."""

    model: str
    """The provider's model name."""
    messages: tuple[Message, ...]
    """The transcript; system messages first."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools offered."""
    settings: ModelSettings = field(default_factory=ModelSettings)
    """Generation settings."""
    stream: bool = False
    """Ask for a streamed response."""


@dataclass(frozen=True, kw_only=True, slots=True)
class WireResponse:
    """A provider's HTTP answer, rendered by the test kit."""

    status: int
    """The HTTP status."""
    body: str
    """JSON text, or SSE text when streamed."""
    content_type: str = "application/json"
    """``application/json`` or ``text/event-stream``."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra headers (``retry-after``, request ids)."""


class StreamAccumulator(Protocol):
    """Builds one `Turn` from a streamed response, event by event."""

    def feed(self, event: str | None, data: str) -> str:
        """Take one SSE event; return the visible-text delta it carried (``""`` if none)."""
        ...

    def finish(self) -> Turn:
        """The turn; a stream that stopped before its final event is never `complete`."""
        ...


@runtime_checkable
class WireFormat(Protocol):
    """All wire mapping for one provider API."""

    name: str
    """The API name: ``openai-chat``, ``anthropic-messages``, ..."""

    def parse_response(self, body: Any) -> Turn:
        """Classify a non-streamed response body (parsed JSON)."""
        ...

    def parse_error(self, status: int, body: Any, *, retry_after: float | None = None) -> Turn:
        """The turn an HTTP error body implies (429/5xx -> error, context length, filter...)."""
        ...

    def stream(self) -> StreamAccumulator:
        """A fresh accumulator for one streamed response."""
        ...

    def parse_stream(self, text: str) -> Turn:
        """Classify a whole streamed response given as raw SSE text."""
        ...

    def render_request(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON request body for a canonical request."""
        ...

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        """The canonical request a JSON body describes (reads emulator request logs)."""
        ...

    def render_response(self, turn: Turn, *, stream: bool = False) -> WireResponse:
        """The provider's HTTP answer for a turn (test kit); raises UnsupportedTurn if it can't."""
        ...


@runtime_checkable
class Model(Protocol):
    """Something that answers a `ModelRequest` with a classified `Turn`.

    Provider faults come back as turns with `Ending.ERROR` (after the transport's retries), never
    as exceptions, so the loop decides every ending in one place.
    """

    @property
    def name(self) -> str:
        """``provider:model``, for events and telemetry."""
        ...

    def request(self, request: ModelRequest) -> Turn:
        """Call the model synchronously."""
        ...

    async def arequest(self, request: ModelRequest) -> Turn:
        """Call the model asynchronously."""
        ...

    def astream(self, request: ModelRequest) -> AsyncIterator[str | Turn]:
        """Stream: visible-text deltas, then the final `Turn` as the last item."""
        ...
