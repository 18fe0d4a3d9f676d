"""Every wire format reads an error body's envelope through one helper (`_error_body`): bytes,
JSON text, a list-wrapped object and plain text give the same message in each."""

from __future__ import annotations

from typing import Any

import pytest

from donegate.models.registry import APIS, classify

OBJECT = {"error": {"message": "boom"}}
BODIES: list[tuple[Any, str]] = [
    (OBJECT, "boom"),
    ([OBJECT], "boom"),
    (b'{"error": {"message": "boom"}}', "boom"),
    ('[{"error": {"message": "boom"}}]', "boom"),
    ([1, OBJECT], "boom"),
    ("  upstream proxy error\n", "upstream proxy error"),
    ('"a JSON string"', "a JSON string"),
    (b"", ""),
]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("body", "message"),
    BODIES,
    ids=[
        "object",
        "list",
        "bytes",
        "json-list",
        "list-number-first",
        "text",
        "json-string",
        "empty",
    ],
)
def test_each_format_reads_the_error_envelope_alike(api: str, body: Any, message: str) -> None:
    turn = classify(api, body, status=400)
    assert turn.error is not None
    assert turn.error.message == message
