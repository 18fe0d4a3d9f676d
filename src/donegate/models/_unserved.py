"""The part of a wire format the emulator does not serve: everything but reading a response.

Bedrock Converse, Cohere and Mistral are read and rendered (requests) but never served, so the
methods that only hand over to their modules, and the refusal, are written once here; each
adapter passes its functions in and keeps only `parse_response`, where the formats differ.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from donegate.errors import UnsupportedTurn, WireFormatError
from donegate.messages import Turn
from donegate.models._sse import accumulate, iter_sse
from donegate.models.base import ModelRequest, StreamAccumulator, WireResponse

__all__ = ["UnservedWire"]

ErrorTurn = Callable[[int | None, Any, float | None], Turn]
"""An adapter's ``error_turn(status, body, retry_after)``."""


class UnservedWire:
    """A `WireFormat` base whose `render_response` refuses every turn, naming `label`."""

    __slots__ = (
        "_body_name",
        "_error_turn",
        "_label",
        "_parse_request",
        "_render_request",
        "_stream",
        "name",
    )

    def __init__(
        self,
        *,
        name: str,
        label: str,
        error_turn: ErrorTurn,
        stream: Callable[[], StreamAccumulator],
        render_request: Callable[[ModelRequest], dict[str, Any]],
        parse_request: Callable[[Mapping[str, Any]], ModelRequest],
        body_name: str,
    ) -> None:
        self.name = name
        self._label = label
        self._error_turn = error_turn
        self._stream = stream
        self._render_request = render_request
        self._parse_request = parse_request
        self._body_name = body_name

    def parse_response(self, body: Any) -> Turn:
        """Classify a response body: it must be a JSON object, which `parse_body` reads."""
        if not isinstance(body, dict):
            what = f"{self._body_name} must be an object, got {type(body).__name__}"
            raise WireFormatError(self.name, what, path="$")
        return self.parse_body(body)

    def parse_body(self, body: dict[str, Any]) -> Turn:
        """Classify a response body that is a JSON object (each adapter's own reading)."""
        raise NotImplementedError

    def parse_error(self, status: int, body: Any, *, retry_after: float | None = None) -> Turn:
        """The turn an HTTP error body implies; never raises."""
        return self._error_turn(status, body, retry_after)

    def stream(self) -> StreamAccumulator:
        """A fresh accumulator for one streamed response."""
        return self._stream()

    def parse_stream(self, text: str) -> Turn:
        """Classify a streamed response given as raw SSE text."""
        return accumulate(self.stream(), iter_sse(text)).finish()

    def render_request(self, request: ModelRequest) -> dict[str, Any]:
        """The request body (see the adapter's `render_request`)."""
        return self._render_request(request)

    def parse_request(self, body: Mapping[str, Any]) -> ModelRequest:
        """The canonical request a body describes (inverse of `render_request`)."""
        return self._parse_request(body)

    def render_response(self, turn: Turn, *, stream: bool = False) -> WireResponse:
        """Not served by the emulator: every turn is refused."""
        raise UnsupportedTurn(
            f"a {turn.ending.value} turn cannot be served as {self.name}: "
            f"the emulator does not serve {self._label}"
        )
