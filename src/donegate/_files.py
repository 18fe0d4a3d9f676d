"""Reading the files people and agents hand donegate: sized, UTF-8, and nested within bounds.

Task files, scripts and hook inputs are untrusted input (STYLE.md habit 18): a 50 MB file must be
refused before it is read, not parsed for a minute; invalid UTF-8 is one line naming the byte and
line, not a ``UnicodeDecodeError``; YAML or JSON nested thousands deep (or an alias "billion
laughs") is refused before Python's recursion limit or memory is met. Every loader (`load_task`,
`load_script`, the agent hooks) reads through here, and reports problems with its own error
class, so the message names the file and where in it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, BinaryIO

import yaml

from donegate.errors import FileError, UserError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "BoundedLoader",
    "ErrorFactory",
    "FileError",
    "UniqueKeyLoader",
    "load_data",
    "nested_deeper",
    "parse_json",
    "parse_yaml",
    "read_stream",
    "read_text",
]

MAX_FILE_BYTES = 4 * 1024 * 1024
"""The default size cap of a file read by `read_text` (4 MiB: far above any hand-written task)."""
MAX_DEPTH = 64
"""How deep mappings and lists may nest in a YAML or JSON file."""
MAX_NODES = 1_000_000
"""How many values a YAML document may expand to, aliases counted as often as they are used."""


ErrorFactory = Callable[..., UserError]
"""Builds the caller's error: called as ``error(message, source=..., field=...)``."""


def read_text(
    path: str | os.PathLike[str],
    *,
    source: str | None = None,
    what: str = "file",
    limit: int = MAX_FILE_BYTES,
    error: ErrorFactory = FileError,
) -> str:
    """The UTF-8 text of `path`, refused before reading when it is larger than `limit` bytes."""
    source = source if source is not None else os.fspath(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise error(_too_large(size, limit), source=source)
            data = f.read(limit + 1)  # a pipe or a growing file has no size to trust
    except OSError as exc:
        raise error(f"cannot read the {what}: {exc.strerror or exc}", source=source) from None
    if len(data) > limit:
        raise error(_too_large(limit, limit, more=True), source=source)
    return _decode(data, source=source, error=error)


def read_stream(
    stream: BinaryIO,
    *,
    source: str,
    limit: int = MAX_FILE_BYTES,
    error: ErrorFactory = FileError,
) -> str:
    """The UTF-8 text of a binary stream (stdin), refused past `limit` bytes."""
    try:
        data = stream.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", source=source) from None
    if len(data) > limit:
        raise error(_too_large(limit, limit, more=True), source=source)
    return _decode(data, source=source, error=error)


def _decode(data: bytes, *, source: str, error: ErrorFactory) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}",
            source=source,
            field=f"line {line}",
        ) from None
    return text.removeprefix("\ufeff")


def _too_large(size: int, limit: int, *, more: bool = False) -> str:
    return f"too large: {'over ' if more else ''}{size:,} bytes (the limit is {_mib(limit)})"


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n:,} bytes"


class BoundedLoader(yaml.SafeLoader):
    """A safe loader that refuses nesting deeper than `MAX_DEPTH` and expansions past `MAX_NODES`.

    PyYAML composes nodes recursively, so a document nested 5,000 deep ends in a
    ``RecursionError``; and aliases let a few hundred bytes expand to a billion values for the
    validator to walk. Both are counted while composing, before anything is built.
    """

    max_depth: int = MAX_DEPTH
    max_nodes: int = MAX_NODES

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """Compose as PyYAML does, counting depth and expanded size on the way."""
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {self.max_depth} levels", mark
                )
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is None or id(node) in self._sizes:  # an alias: its size is already counted
            return node
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._sizes.get(id(child), 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(
                self._sizes.get(id(k), 1) + self._sizes.get(id(v), 1) for k, v in node.value
            )
        if size > self.max_nodes:
            raise yaml.composer.ComposerError(
                None, None, f"expands to more than {self.max_nodes:,} values", node.start_mark
            )
        self._sizes[id(node)] = size
        return node


class UniqueKeyLoader(BoundedLoader):
    """`BoundedLoader` that also rejects a duplicate mapping key instead of keeping the last."""


def _unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if not isinstance(key, str | int | float | bool):
            continue  # construct_mapping reports unhashable keys itself
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def parse_yaml(
    text: str,
    *,
    source: str | None = None,
    loader: type[BoundedLoader] = UniqueKeyLoader,
    error: ErrorFactory = FileError,
) -> Any:
    """One YAML document through a bounded safe loader; problems name their line."""
    try:
        return yaml.load(text, Loader=loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        where = f"line {mark.line + 1}" if mark is not None else None
        raise error(f"not valid YAML: {problem}", source=source, field=where) from None
    except RecursionError:  # a safety net: compose_node's cap should come first
        raise error("not valid YAML: nested too deeply", source=source) from None


def parse_json(text: str, *, source: str | None = None, error: ErrorFactory = FileError) -> Any:
    """One JSON document, refused when it nests deeper than `MAX_DEPTH`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"not valid JSON: {exc.msg}", source=source, field=f"line {exc.lineno}"
        ) from None
    except RecursionError:
        raise error(
            f"not valid JSON: nested deeper than {MAX_DEPTH} levels", source=source
        ) from None
    if nested_deeper(data):
        raise error(f"not valid JSON: nested deeper than {MAX_DEPTH} levels", source=source)
    return data


def nested_deeper(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when lists and dicts nest in `value` more than `limit` deep (walked without
    recursion, so a hostile document cannot overflow the stack)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def load_data(
    path: str | os.PathLike[str],
    *,
    source: str | None = None,
    what: str = "file",
    limit: int = MAX_FILE_BYTES,
    loader: type[BoundedLoader] = UniqueKeyLoader,
    error: ErrorFactory = FileError,
) -> Any:
    """Read `path` with `read_text` and parse it: ``.json`` as JSON, anything else as YAML."""
    source = source if source is not None else os.fspath(path)
    text = read_text(path, source=source, what=what, limit=limit, error=error)
    if os.fspath(path).endswith(".json"):
        return parse_json(text, source=source, error=error)
    return parse_yaml(text, source=source, loader=loader, error=error)
