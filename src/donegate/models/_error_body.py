"""Error bodies as they arrive: one reader for every shape, before an adapter reads its fields.

A provider's error may come as a dict, a list holding one, JSON text, bytes, an HTML page from a
proxy or nothing at all; the adapters that take any of these share this first step.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["client_error", "error_object"]

_TEXT_LIMIT = 2000
"""How much of a non-JSON error body is kept as its message."""


def error_object(body: Any, *, limit: int = _TEXT_LIMIT) -> dict[str, Any] | str:
    """The error body's JSON object, else the text to use as its message (``""`` for none), cut
    to `limit` characters."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except ValueError:
            return body.strip()[:limit]
        if isinstance(parsed, str):  # a JSON string: its text
            return parsed.strip()[:limit]
        if not isinstance(parsed, dict | list):
            return body.strip()[:limit]
        body = parsed
    if isinstance(body, list):
        body = next((item for item in body if isinstance(item, dict)), None)
    return body if isinstance(body, dict) else ""


def client_error(status: int | None) -> bool:
    """True for a 4xx other than 429 (or no status): only these may mean the prompt is too long;
    a rate limit or a server error is never read for the context-window phrases."""
    return status is None or (400 <= status < 500 and status != 429)
