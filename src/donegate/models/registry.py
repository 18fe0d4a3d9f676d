"""Wire formats by API name, imported lazily, and `classify`: one body in, one `Turn` out."""

from __future__ import annotations

import importlib
from typing import Any

from donegate.errors import UserError, WireFormatError
from donegate.messages import Turn
from donegate.models.base import WireFormat
from donegate.models.providers import PROVIDERS

__all__ = ["APIS", "classify", "wire_format"]

_MODULES: dict[str, str] = {p.wire: p.wire_module for p in PROVIDERS}
APIS: tuple[str, ...] = tuple(_MODULES)
"""Every wire format donegate reads."""

_cache: dict[str, WireFormat] = {}


def wire_format(api: str) -> WireFormat:
    """The wire format named `api`; a `UserError` lists the known names otherwise."""
    try:
        return _cache[api]
    except KeyError:
        pass
    module = _MODULES.get(api)
    if module is None:
        raise UserError(f"unknown api {api!r}; expected one of: {', '.join(APIS)}")
    wire: WireFormat = importlib.import_module(module).WIRE
    _cache[api] = wire
    return wire


def classify(api: str, body: Any, *, stream: bool = False, status: int = 200) -> Turn:
    """Classify one provider response: how did this model turn end?

    `body` is the parsed JSON body, or the raw SSE text when `stream` is true. A non-2xx
    `status` reads `body` as an error body. Well-formed error bodies never raise: they return a
    turn with the ending they imply. A body that is not the documented shape raises
    `WireFormatError` naming the field.
    """
    wire = wire_format(api)
    if not 200 <= status < 300:
        return wire.parse_error(status, body)
    if stream:
        if isinstance(body, bytes):
            body = body.decode("utf-8", errors="replace")
        if not isinstance(body, str):
            raise WireFormatError(api, f"a stream must be SSE text, got {type(body).__name__}")
        return wire.parse_stream(body)
    return wire.parse_response(body)
