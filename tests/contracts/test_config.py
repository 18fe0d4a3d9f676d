"""The data directory and donegate's environment variables are named in `donegate.config` only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

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
