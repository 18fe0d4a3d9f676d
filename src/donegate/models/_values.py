"""Small readers of untrusted JSON values and transcript helpers the adapters share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from donegate.errors import WireFormatError
from donegate.messages import MediaPart, Message

__all__ = [
    "MAPPING",
    "Fail",
    "append_merging_results",
    "as_int",
    "data_url",
    "exact_int",
    "opt_float",
    "opt_str",
    "url_media",
    "wire_fail",
]

MAPPING = (dict, Mapping)
"""``isinstance(x, MAPPING)`` is ``isinstance(x, Mapping)`` without the ABC check for a plain dict
(every decoded JSON object): the check answers in C, a few times faster on the hot paths. For a
value that is usually absent, test ``is not None`` first (None still takes the ABC path)."""


Fail = Callable[[str, str], WireFormatError]
"""An adapter's ``fail(path, message)``: the error that names its API and the bad field."""


def wire_fail(api: str) -> Fail:
    """The `Fail` of the wire format `api`."""

    def fail(path: str, message: str) -> WireFormatError:
        return WireFormatError(api, message, path=path)

    return fail


def exact_int(value: Any) -> int | None:
    """`value` when it is an integer (JSON's, so a bool is not one), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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


def opt_float(value: Any) -> float | None:
    """A number setting (``temperature``, ``top_p``) as a float, None when absent or not one."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def data_url(part: MediaPart) -> str | None:
    """A media part as an image URL: its own URI, else a base64 ``data:`` URL (None if neither)."""
    if part.uri is not None:
        return part.uri
    return f"data:{part.mime_type};base64,{part.data}" if part.data is not None else None


def url_media(url: str) -> MediaPart:
    """An image URL as media; a base64 ``data:`` URL keeps its type and data (inverse of
    `data_url`)."""
    head, comma, data = url.partition(",")
    if url.startswith("data:") and comma and head.endswith(";base64"):
        return MediaPart(mime_type=head[5:-7] or "image/*", data=data)
    return MediaPart(mime_type="image/*", uri=url)


def append_merging_results(messages: list[Message], message: Message) -> None:
    """Append `message`, merging it into the previous one when both carry tool results.

    Wire formats send one message per result; the canonical transcript has one per batch.
    """
    if message.role == "tool" and messages and messages[-1].role == "tool":
        messages[-1] = Message(role="tool", parts=messages[-1].parts + message.parts)
    else:
        messages.append(message)
