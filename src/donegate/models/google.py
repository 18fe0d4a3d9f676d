"""Gemini through the official ``google-genai`` client, over its real HTTP path.

The public ``generate_content`` builds typed objects from the response, which would hide the raw
``finishReason`` handling from our adapter; the client's request layer (auth, base URL, retries)
is used directly with donegate's rendered body, and the raw body is classified by our adapter.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from donegate.errors import MissingExtra
from donegate.messages import Ending, Turn
from donegate.models._rules import error_turn
from donegate.models.base import ModelRequest
from donegate.models.registry import wire_format

__all__ = ["GeminiModel"]


def _errors() -> Any:
    try:
        return importlib.import_module("google.genai.errors")
    except ImportError:
        raise MissingExtra("google-genai", "gemini") from None


class GeminiModel:
    """A Gemini model reached through a ``google.genai.Client``."""

    api = "gemini"

    def __init__(self, client: Any, model: str) -> None:
        self.client = client
        self.model = model.removeprefix("models/")
        self._errors = _errors()
        self._wire = wire_format(self.api)

    @property
    def name(self) -> str:
        """``google:model``."""
        return f"google:{self.model}"

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        body = self._wire.render_request(replace(request, model=self.model))
        body.pop("model", None)
        body.pop("stream", None)
        return body

    def _error(self, exc: Exception) -> Turn:
        code = getattr(exc, "code", None)
        if isinstance(code, int):
            body = getattr(exc, "details", None)
            return self._wire.parse_error(code, body)
        return error_turn(
            api=self.api,
            ending=Ending.ERROR,
            status=None,
            type_=type(exc).__name__,
            message=str(exc),
        )

    def request(self, request: ModelRequest) -> Turn:
        """One ``generateContent`` call."""
        try:
            response = self.client._api_client.request(
                "post", f"models/{self.model}:generateContent", self._body(request)
            )
        except self._errors.APIError as exc:
            return self._error(exc)
        return self._wire.parse_response(json.loads(response.body))

    async def arequest(self, request: ModelRequest) -> Turn:
        """One call through the client's async path."""
        try:
            response = await self.client._api_client.async_request(
                "post", f"models/{self.model}:generateContent", self._body(request)
            )
        except self._errors.APIError as exc:
            return self._error(exc)
        return self._wire.parse_response(json.loads(response.body))

    async def astream(self, request: ModelRequest) -> AsyncIterator[str | Turn]:
        """``streamGenerateContent?alt=sse``: text deltas, then the turn."""
        acc = self._wire.stream()
        path = f"models/{self.model}:streamGenerateContent?alt=sse"
        try:
            chunks = await asyncio.to_thread(
                lambda: [
                    c.body
                    for c in self.client._api_client.request_streamed(
                        "post", path, self._body(request)
                    )
                ]
            )
        except self._errors.APIError as exc:
            yield self._error(exc)
            return
        for body in chunks:
            delta = acc.feed(None, body if isinstance(body, str) else str(body))
            if delta:
                yield delta
        yield acc.finish()
