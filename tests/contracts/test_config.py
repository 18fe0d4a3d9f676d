"""The data directory and donegate's environment variables are named in `donegate.config` only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "donegate"
CONFIG = SRC / "config.py"
ENV_NAME = re.compile(r"DONEGATE_[A-Z0-9_]+=?")


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the string constants that are docstrings (a module's, a class's, a function's)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for st in body:  # a string expression anywhere in a body documents what precedes it
                if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                    found.add(id(st.value))
    return found


def _offences(source: str, name: str) -> list[str]:
    tree = ast.parse(source)
    docs = _docstrings(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        text = node.value
        if id(node) in docs:
            continue
        if ENV_NAME.fullmatch(text) or "~/.donegate" in text or text == ".donegate":
            out.append((node.lineno, f"{name}:{node.lineno}: {text!r}"))
    return [text for _, text in sorted(out)]


def test_environment_names_and_the_data_directory_live_in_config() -> None:
    offences = [
        o
        for p in sorted(SRC.rglob("*.py"))
        if p != CONFIG
        for o in _offences(p.read_text(encoding="utf-8"), str(p.relative_to(SRC.parent)))
    ]
    assert not offences, "name these in donegate.config and import them:\n" + "\n".join(offences)


def test_the_rule_sees_an_environment_name_in_code_not_in_a_docstring() -> None:
    sample = (
        '"""DONEGATE_HOME in a docstring is fine."""\n'
        "import os\n"
        'HOME = os.environ.get("DONEGATE_HOME")\n'
        'KEY = f"DONEGATE_IDEMPOTENCY_KEY={1}"\n'
        'DIR = "~/.donegate"\n'
    )
    assert _offences(sample, "s.py") == [
        "s.py:3: 'DONEGATE_HOME'",
        "s.py:4: 'DONEGATE_IDEMPOTENCY_KEY='",
        "s.py:5: '~/.donegate'",
    ]


def _env_names(text: str) -> set[str]:
    return {m.rstrip("=") for m in ENV_NAME.findall(text)}


def test_every_variable_the_code_reads_or_sets_is_in_docs_config_md() -> None:
    named = set().union(*(_env_names(p.read_text(encoding="utf-8")) for p in SRC.rglob("*.py")))
    page = _env_names((SRC.parents[1] / "docs" / "config.md").read_text(encoding="utf-8"))
    missing = sorted(named - page)
    assert not missing, f"docs/config.md does not list: {', '.join(missing)}"
    assert {"DONEGATE_HOME", "DONEGATE_SERVE_TOKEN", "DONEGATE_PROMPT"} <= named  # it reads src


def test_no_test_only_switch_is_read_by_product_code() -> None:
    found = sorted(n for p in SRC.rglob("*.py") for n in _env_names(p.read_text(encoding="utf-8"))
                   if n.startswith("DONEGATE_TEST_"))  # fmt: skip
    assert not found, f"product code reads test-only variables: {found}"


def _joins_onto_data_dir(source: str) -> list[int]:
    """Lines where a path is joined onto ``data_dir()`` (``data_dir() / "x"``)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and isinstance(node.left, ast.Call)
        and getattr(node.left.func, "id", getattr(node.left.func, "attr", None)) == "data_dir"
    ]


def test_the_data_dir_layout_is_named_in_config_only() -> None:
    """Every module asks `config.data_path` for a place in the data directory; none names a
    file or folder in it by joining onto `data_dir()` itself."""
    offences = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        if path != CONFIG
        for line in _joins_onto_data_dir(path.read_text(encoding="utf-8"))
    ]
    assert offences == []
    assert _joins_onto_data_dir('x = data_dir() / "rooms"\n') == [1]  # the check sees one


def test_each_data_path_lies_in_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from donegate.config import DATA_LAYOUT, data_path

    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path))
    places = {name: data_path(name) for name in DATA_LAYOUT}
    assert all(p.parent == tmp_path for p in places.values())
    assert len(set(places.values())) == len(places)
    assert places["db"].name == "donegate.db" and places["signing_key"].name == "signing.key"
