"""The fast SSE and JSON paths give exactly what the general ones give, on any input."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from donegate.models import gemini
from donegate.models._sse import SSEDecoder, iter_sse, loads
from donegate.models.gemini._enums import RESPONSE_ENUM_KEYS, may_hold_enum_numbers


def by_lines(text: str) -> list[tuple[str | None, str]]:
    """The general decoder, line by line (what `iter_sse` did for every text)."""
    decoder, out = SSEDecoder(), []
    for line in text.splitlines():
        event = decoder.line(line)
        if event is not None:
            out.append(event)
    event = decoder.flush()
    if event is not None:
        out.append(event)
    return out


PIECES = ["data:", "data: ", "event:", "event: ", ":", "id: 1", "\n", "\n\n", "\r\n", "\r"]
pieces = st.sampled_from([*PIECES, " ", "x", '{"a": 1}', "[DONE]", "\u2028", "\x85", "\f", "é"])


@given(st.lists(pieces, max_size=30).map("".join))
def test_iter_sse_equals_the_line_decoder_on_any_text(text: str) -> None:
    if text.lstrip().startswith("["):
        text = "x" + text  # the JSON-array form is another path
    assert list(iter_sse(text)) == by_lines(text)


def test_iter_sse_fast_shapes_equal_the_line_decoder() -> None:
    texts = [
        "data: a\n\ndata: b\n\n",
        "event: x\ndata: 1\ndata: 2\n\n\n\ndata:z",
        "event:x\ndata:y",
        "event: x\ndata",
        "event: \ndata: \n\n",
        ": keep-alive\n\nevent: e\n\n",
        "data:  two spaces\n\n",
        "data: a\r\n\r\ndata: b\r\n\r\n",
        "event: x\r\ndata: 1\r\n\r\n\r\n",
        "data: a\r\n\rdata: b\n",
    ]
    for text in texts:
        assert list(iter_sse(text)) == by_lines(text), text


json_texts = st.one_of(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=8,
    ).map(json.dumps),
    st.text(max_size=12),
)


@given(json_texts, st.sampled_from(["", " ", "\n", "x", "}"]), st.sampled_from(["", " ", "\t"]))
def test_loads_equals_json_loads(text: str, tail: str, head: str) -> None:
    text = head + text + tail
    try:
        expected: object = ("value", json.loads(text))
    except ValueError as exc:
        expected = ("error", type(exc))
    try:
        got: object = ("value", loads(text))
    except ValueError as exc:
        got = ("error", type(exc))
    assert got == expected


def test_every_field_decode_response_names_is_in_the_fast_check() -> None:
    source = Path(gemini.__file__).with_name("_enums.py").read_text()
    named = {
        node.args[1].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "_field"
        and isinstance(node.args[1], ast.Constant)
    }
    request_side = {"mode", "type"}  # decode_request's fields, never in a response
    assert named - request_side == set(RESPONSE_ENUM_KEYS)


def test_a_chunk_with_enum_numbers_is_named_and_one_without_is_left_alone() -> None:
    numbered = '{"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason" : 1}]}'
    assert may_hold_enum_numbers(numbered)
    assert not may_hold_enum_numbers(numbered.replace(" 1}", ' "STOP"}'))
    assert may_hold_enum_numbers('{"x": "\\u0041"}')
    named = numbered.replace(" 1}", ' "STOP"}')
    by_number = gemini.WIRE.parse_stream(f"data: {numbered}\n\n")
    by_name = gemini.WIRE.parse_stream(f"data: {named}\n\n")
    assert by_number.ending == by_name.ending == "complete"
    assert by_number.raw_reason == by_name.raw_reason == "STOP"
