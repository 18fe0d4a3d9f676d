"""What every request body carries under its own names: the sampling settings, the model, the
messages read one by one, and the stream switch, written and read in one place."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from donegate.messages import Message
from donegate.models._values import Fail, append_merging_results, opt_float
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec

__all__ = [
    "Sampling",
    "SamplingNames",
    "finish_request",
    "parse_messages",
    "parse_sampling",
    "render_sampling",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class SamplingNames:
    """A wire format's field names for the sampling settings."""

    max_tokens: str = "max_tokens"
    """The output token limit."""
    temperature: str = "temperature"
    """The sampling temperature."""
    top_p: str = "top_p"
    """Nucleus sampling (Cohere calls it ``p``, Bedrock ``topP``)."""
    stop: str = "stop"
    """The stop sequences (a list)."""


class Sampling(TypedDict):
    """The `ModelSettings` keywords a body's sampling fields give."""

    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    stop: tuple[str, ...]


def render_sampling(settings: ModelSettings, names: SamplingNames) -> dict[str, Any]:
    """The sampling fields `settings` sets, under `names`; unset ones are left out."""
    out: dict[str, Any] = {}
    if settings.max_tokens is not None:
        out[names.max_tokens] = settings.max_tokens
    if settings.temperature is not None:
        out[names.temperature] = settings.temperature
    if settings.top_p is not None:
        out[names.top_p] = settings.top_p
    if settings.stop:
        out[names.stop] = list(settings.stop)
    return out


def parse_sampling(
    raw: Mapping[str, Any], names: SamplingNames, *, lone_stop: bool = False
) -> Sampling:
    """`ModelSettings` keywords for the sampling fields in `raw`; a value of the wrong type is
    absent. With `lone_stop`, a single string is accepted as the one stop sequence."""
    max_tokens = raw.get(names.max_tokens)
    stop = raw.get(names.stop)
    if lone_stop and isinstance(stop, str):
        stop = [stop]
    return {
        "max_tokens": max_tokens if isinstance(max_tokens, int) else None,
        "temperature": opt_float(raw.get(names.temperature)),
        "top_p": opt_float(raw.get(names.top_p)),
        "stop": tuple(s for s in stop if isinstance(s, str)) if isinstance(stop, list) else (),
    }


ReadMessage = Callable[[Any, str, dict[str, str]], Message | None]
"""``(raw, path, names)``: one wire message, None to skip it; `names` maps call ids to tool names
so that a result can name its tool."""


def parse_messages(raw_messages: Any, read: ReadMessage, fail: Fail) -> list[Message]:
    """``messages`` read one by one, consecutive tool results merged into one batch."""
    if not isinstance(raw_messages, list):
        raise fail("messages", "expected a list")
    names: dict[str, str] = {}
    messages: list[Message] = []
    for i, raw in enumerate(raw_messages):
        message = read(raw, f"messages[{i}]", names)
        if message is not None:
            append_merging_results(messages, message)
    return messages


def finish_request(
    body: Mapping[str, Any],
    *,
    model_key: str = "model",
    messages: Sequence[Message],
    tools: Sequence[ToolSpec | None],
    settings: ModelSettings,
) -> ModelRequest:
    """The request: the model named at `model_key` (``""`` if none), tools that were read, and
    ``stream`` only when it is ``true``."""
    model = body.get(model_key)
    return ModelRequest(
        model=model if isinstance(model, str) else "",
        messages=tuple(messages),
        tools=tuple(t for t in tools if t is not None),
        settings=settings,
        stream=body.get("stream") is True,
    )
