"""Request bodies as the official SDKs put them on the wire, from parts encoded once.

The SDKs encode a JSON body compactly (``,`` and ``:`` separators), as UTF-8 without ASCII
escapes, refusing NaN, and send a body given to them as bytes (``content=``) as it is. A long
conversation's body is mostly messages already sent, and encoding it whole every turn costs
what the history costs (55 KB, ~0.3 ms at 200 turns). An `Encoded` holds a value's JSON text
made earlier; `encode_body` writes it in place, so a request costs what its new parts cost and
the bytes are the very bytes the SDK would have made from the dict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

__all__ = ["Encoded", "dumps", "encode_body"]


class Encoded:
    """JSON text made earlier, written into a body as it is (`encode_body`)."""

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Encoded({self.text[:60]!r}{'...' if len(self.text) > 60 else ''})"


def _default(value: Any) -> Any:
    """What the SDKs' encoder does with the two kinds a user may put in ``extra_body``."""
    if isinstance(value, datetime):
        return value.isoformat()
    dump = getattr(value, "model_dump", None)  # a pydantic model, without importing pydantic
    if callable(dump):
        return dump(exclude_unset=True, mode="json", by_alias=True)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default
)
_string = json.encoder.encode_basestring  # what that encoder does with a string, in C
_c_encoder = getattr(json.encoder, "c_make_encoder", None)  # not in the stubs; None without _json
# `json.dumps` builds its C encoder anew on every call (~1 us, half of encoding one message);
# built once here with the same settings (no circular check: a body is a tree).
_iterencode: Any = (
    _c_encoder(None, _default, _string, None, ":", ",", False, False, False)
    if _c_encoder is not None
    else None
)


def dumps(value: Any) -> bytes:
    """`value` as the SDKs encode a body: compact UTF-8 JSON, NaN refused."""
    if _iterencode is None:  # pragma: no cover - a Python without the C accelerator
        return _ENCODER.encode(value).encode()
    return "".join(_iterencode(value, 0)).encode()


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The JSON text of `body`, its top-level `Encoded` values written as they are."""
    pieces = []
    for key, value in body.items():
        name = _KEYS.get(key)
        if name is None:
            name = _string(key).encode() + b":"
            if len(_KEYS) < 256:
                _KEYS[key] = name
        if type(value) is Encoded:
            pieces.append(name + value.text)
        elif isinstance(value, str):
            pieces.append(name + _string(value).encode())
        else:
            pieces.append(name + dumps(value))
    return b"{" + b",".join(pieces) + b"}"


_KEYS: dict[str, bytes] = {}
"""The encoded ``"key":`` of the body fields seen (a few dozen names; bounded all the same)."""
