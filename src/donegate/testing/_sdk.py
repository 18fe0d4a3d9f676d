"""`sdk_client`: an official SDK client whose HTTP goes to a `ScriptedModel`, in process.

The client is the one users build (``openai.OpenAI``, ``anthropic.Anthropic``,
``google.genai.Client``) over ``httpx2.MockTransport(player.handler(api))``, so the SDK's own
request building, retries and response parsing run on the player's provider bytes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from donegate.errors import MissingExtra, UserError
from donegate.models.providers import PROVIDERS

if TYPE_CHECKING:
    from donegate.testing.player import ScriptedModel

__all__ = ["BASE_URL", "SDK_APIS", "sdk_client"]

BASE_URL = "http://donegate.test"
"""The host SDK clients made by `sdk_client` talk to (never resolved: the transport answers)."""

SDK_APIS = tuple(p.wire for p in PROVIDERS if p.sdk is not None)
"""The wire formats `sdk_client` can build an official client for."""


def sdk_client(api: str, player: ScriptedModel, *, asynchronous: bool = False) -> Any:
    """The official SDK client for `api`, wired to `player` through ``httpx2.MockTransport``.

    ``openai-chat``/``openai-responses``: ``openai.OpenAI`` (``AsyncOpenAI``);
    ``anthropic-messages``: ``anthropic.Anthropic`` (``AsyncAnthropic``); ``gemini``: a
    ``google.genai.Client`` whose sync surface and ``.aio`` both reach the player. Every client
    retries as many times as `player.max_retries`, so HTTP and direct replays count alike
    (Gemini's SDK does not retry unless told: it is told, with no wait between attempts; it
    never retries a dropped connection, a ``disconnect`` turn).
    """
    if api not in SDK_APIS:
        raise UserError(f"no SDK client for {api!r}; expected one of: {', '.join(SDK_APIS)}")
    httpx2 = _import("httpx2", "openai")
    transport = httpx2.MockTransport(player.handler(api))
    http = httpx2.AsyncClient(transport=transport) if asynchronous else None
    http = http or httpx2.Client(transport=transport)
    if api in ("openai-chat", "openai-responses"):
        openai = _import("openai", "openai")
        cls = _no_wait(openai.AsyncOpenAI if asynchronous else openai.OpenAI)
        return cls(
            api_key="test",
            base_url=f"{BASE_URL}/v1",
            http_client=http,
            max_retries=player.max_retries,
        )
    if api == "anthropic-messages":
        anthropic = _import("anthropic", "anthropic")
        cls = _no_wait(anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic)
        return cls(
            api_key="test", base_url=BASE_URL, http_client=http, max_retries=player.max_retries
        )
    genai = _import("google.genai", "gemini")
    types = _import("google.genai.types", "gemini")
    retryable = [408, 409, 429, *range(500, 600)]
    options = types.HttpOptions(
        base_url=BASE_URL,
        httpx_client=httpx2.Client(transport=transport),
        httpx_async_client=httpx2.AsyncClient(transport=transport),
        retry_options=types.HttpRetryOptions(
            attempts=player.max_retries + 1,
            http_status_codes=retryable,
            initial_delay=0.0,
            max_delay=0.0,
            jitter=0.0,
        ),
    )
    return genai.Client(api_key="test", http_options=options)


_NO_WAIT: dict[type[Any], type[Any]] = {}


def _no_wait(cls: type[Any]) -> type[Any]:
    """`cls` (an OpenAI or Anthropic client class) retrying with no back-off between attempts.

    Both SDKs compute each wait in ``_calculate_retry_timeout`` (0.5 s doubling, or a server's
    ``retry-after``); a replay has no server to spare, so the wait is zero and the retry count,
    the requests sent and the errors raised are the SDK's own. One subclass per SDK class.
    """
    if cls not in _NO_WAIT:

        def _calculate_retry_timeout(self: Any, *args: Any, **kwargs: Any) -> float:
            return 0.0

        _NO_WAIT[cls] = type(
            cls.__name__,
            (cls,),
            {  # the SDK's module: `infer_model` tells a client's provider by its package
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "_calculate_retry_timeout": _calculate_retry_timeout,
            },
        )
    return _NO_WAIT[cls]


def _import(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(module, extra) from None
