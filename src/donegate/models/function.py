"""`FunctionModel`: a model backed by a Python function, the double at the model seam."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable

from donegate.messages import Turn
from donegate.models.base import ModelRequest

__all__ = ["FunctionModel"]

Responder = Callable[[ModelRequest], Turn | Awaitable[Turn]]


class FunctionModel:
    """Answers each request by calling `function` (plain or async) with it."""

    def __init__(self, function: Responder, *, name: str = "function:model") -> None:
        self.function = function
        self._name = name
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        """The name given."""
        return self._name

    def request(self, request: ModelRequest) -> Turn:
        """Call the function (an async one on a private loop)."""
        self.requests.append(request)
        value = self.function(request)
        if inspect.isawaitable(value):
            import asyncio  # here: only an async function needs it, and `import donegate` not

            return asyncio.run(_wait(value))
        return value

    async def arequest(self, request: ModelRequest) -> Turn:
        """Call the function, awaiting it when async."""
        self.requests.append(request)
        value = self.function(request)
        if inspect.isawaitable(value):
            return await value
        return value

    async def astream(self, request: ModelRequest) -> AsyncIterator[str | Turn]:
        """The text in one piece, then the turn."""
        turn = await self.arequest(request)
        if turn.text:
            yield turn.text
        yield turn


async def _wait(value: Awaitable[Turn]) -> Turn:
    return await value
