"""Small readers of untrusted JSON values and transcript helpers the adapters share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from donegate.messages import Message

__all__ = ["MAPPING", "append_merging_results", "as_int", "opt_str"]

MAPPING = (dict, Mapping)
"""``isinstance(x, MAPPING)`` is ``isinstance(x, Mapping)`` without the ABC check for a plain dict
(every decoded JSON object): the check answers in C, a few times faster on the hot paths. For a
value that is usually absent, test ``is not None`` first (None still takes the ABC path)."""


def as_int(value: Any) -> int:
    """A token count, 0 when absent or not a number (some providers bill in floats)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and abs(value) < 1e18:  # False for NaN and infinities
        return int(value)
    return 0


def opt_str(value: Any) -> str | None:
    """`value` when it is a string, else None."""
    return value if isinstance(value, str) else None


def append_merging_results(messages: list[Message], message: Message) -> None:
    """Append `message`, merging it into the previous one when both carry tool results.

    Wire formats send one message per result; the canonical transcript has one per batch.
    """
    if message.role == "tool" and messages and messages[-1].role == "tool":
        messages[-1] = Message(role="tool", parts=messages[-1].parts + message.parts)
    else:
        messages.append(message)
