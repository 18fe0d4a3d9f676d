"""The store's JSON codec is `donegate.codec` (one codec for the canonical values); re-exported
here for the store modules that import it from this place."""

from __future__ import annotations

from donegate.codec import (
    call_from_json,
    dumps,
    loads,
    message_from_json,
    message_to_json,
    part_to_json,
    result_from_json,
    turn_from_json,
    turn_to_json,
)

__all__ = [
    "call_from_json",
    "dumps",
    "loads",
    "message_from_json",
    "message_to_json",
    "part_to_json",
    "result_from_json",
    "turn_from_json",
    "turn_to_json",
]
