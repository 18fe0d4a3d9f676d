"""`donegate._files`: untrusted files are sized, UTF-8, and parsed within depth and size bounds."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from donegate._files import (
    MAX_DEPTH,
    BoundedLoader,
    FileError,
    load_data,
    parse_json,
    parse_yaml,
    read_stream,
    read_text,
)


def test_a_file_over_the_cap_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"")
    os.truncate(path, 50 * 2**20)  # sparse: reading it would take its time
    with pytest.raises(FileError) as info:
        read_text(path)
    assert str(info.value) == f"{path}: too large: 52,428,800 bytes (the limit is 4 MiB)"
    path.write_text("x" * 11)
    with pytest.raises(FileError, match=r"too large: 11 bytes \(the limit is 10 bytes\)"):
        read_text(path, limit=10)
    assert read_text(path, limit=11) == "x" * 11


def test_non_utf8_names_the_byte_the_offset_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(b"id: t\nprompt: caf\xe9\n")
    with pytest.raises(FileError) as info:
        read_text(path, source="t.yaml")
    assert str(info.value) == "t.yaml: line 2: not UTF-8 text: byte 0xe9 at offset 17"


def test_a_bom_is_dropped_and_unreadable_paths_say_why(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(b"\xef\xbb\xbfid: t\n")
    assert read_text(path) == "id: t\n"
    with pytest.raises(FileError, match=r"cannot read the task: Is a directory"):
        read_text(tmp_path, what="task")
    with pytest.raises(FileError, match=r"cannot read the file: No such file"):
        read_text(tmp_path / "nope")


def test_a_stream_is_capped_and_decoded_like_a_file() -> None:
    assert read_stream(io.BytesIO(b'{"a": 1}'), source="stdin") == '{"a": 1}'
    with pytest.raises(FileError, match=r"^stdin: too large: over 8 bytes"):
        read_stream(io.BytesIO(b"x" * 9), source="stdin", limit=8)
    with pytest.raises(FileError, match=r"^stdin: line 1: not UTF-8 text: byte 0xff"):
        read_stream(io.BytesIO(b"\xff"), source="stdin")


def _flow(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_yaml_nesting_is_capped_before_the_recursion_limit() -> None:
    assert parse_yaml(_flow(MAX_DEPTH)) is not None
    for text in (_flow(MAX_DEPTH + 1), _flow(5000), "- " * 5000 + "x"):
        with pytest.raises(FileError, match=rf"not valid YAML: nested deeper than {MAX_DEPTH}"):
            parse_yaml(text, source="f")


def test_aliases_count_as_often_as_they_are_used() -> None:
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)
    )
    with pytest.raises(FileError, match=r"line 7: not valid YAML: expands to more than 1,000,000"):
        parse_yaml(bomb, source="f")
    reused = parse_yaml("base: &b {run: pytest}\nchecks: [*b, *b]\n")
    assert reused["checks"] == [{"run": "pytest"}, {"run": "pytest"}]


def test_duplicate_keys_are_refused_with_their_line() -> None:
    with pytest.raises(FileError) as info:
        parse_yaml("id: t\nchecks: []\nchecks: [x]\n", source="t.yaml")
    assert str(info.value) == "t.yaml: line 3: not valid YAML: duplicate key 'checks'"
    assert parse_yaml("a: 1\na: 2\n", loader=BoundedLoader) == {"a": 2}  # PyYAML's own rule


def test_json_nesting_is_capped_whether_or_not_python_could_parse_it() -> None:
    assert parse_json(_flow(MAX_DEPTH)) is not None
    for depth in (MAX_DEPTH + 1, 900, 100_000):
        with pytest.raises(FileError, match=rf"not valid JSON: nested deeper than {MAX_DEPTH}"):
            parse_json(_flow(depth), source="f")
    with pytest.raises(FileError, match=r"^f: line 2: not valid JSON: Expecting value"):
        parse_json('{"a":\n', source="f")


def test_load_data_picks_the_parser_by_suffix(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text('{"a": [1, 2]}')
    (tmp_path / "t.yaml").write_text("a: [1, 2]\n")
    assert load_data(tmp_path / "t.json") == load_data(tmp_path / "t.yaml") == {"a": [1, 2]}


_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_values = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@given(_values)
def test_anything_within_bounds_reads_back_as_written(value: Any) -> None:
    assert _depth(value) < MAX_DEPTH
    assert parse_yaml(yaml.safe_dump(value)) == value
    assert parse_json(json.dumps(value)) == value
