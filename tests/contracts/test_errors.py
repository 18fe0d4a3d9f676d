"""The exception tree: every donegate error lives in errors.py, drawn as it really is."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from donegate import errors

SRC = Path(__file__).resolve().parents[2] / "src" / "donegate"
ERRORS = SRC / "errors.py"


def _drawn_tree(doc: str) -> dict[str, str | None]:
    """Each class name in the docstring's tree, with the class it is drawn under."""
    block = doc.split("```")[1]
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in block.strip("\n").splitlines():
        match = re.match(r"^([│├└─\s]*)(\w+)\s", line + " ")
        assert match, line
        depth = len(match.group(1)) // 4
        name = match.group(2)
        del stack[depth:]
        parents[name] = stack[-1][1] if stack else None
        stack.append((depth, name))
    return parents


def _real_tree() -> dict[str, str | None]:
    """Each exception class errors.py defines, with its donegate base (None for the root)."""
    found: dict[str, str | None] = {}
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert isinstance(cls, type) and issubclass(cls, errors.DonegateError), name
        bases = [b for b in cls.__bases__ if issubclass(b, errors.DonegateError)]
        found[name] = bases[0].__name__ if bases else None
    return found


def test_the_docstring_draws_the_real_tree() -> None:
    assert errors.__doc__ is not None
    assert _drawn_tree(errors.__doc__) == _real_tree()


def test_the_tree_reader_sees_a_misplaced_class() -> None:
    doc = "```\nDonegateError  root\n├── UserError  x\n│   └── ScriptError  y\n```"
    assert _drawn_tree(doc) == {
        "DonegateError": None,
        "UserError": "DonegateError",
        "ScriptError": "UserError",
    }
    flat = doc.replace("│   └── ScriptError", "└── ScriptError")
    assert _drawn_tree(flat)["ScriptError"] == "DonegateError"


def _defined_elsewhere(files: list[Path], root: Path = SRC) -> list[str]:
    """``file: Class`` for every subclass of a donegate error defined outside errors.py."""
    known = set(errors.__all__)
    classes: list[tuple[str, str, list[str]]] = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [b.attr if isinstance(b, ast.Attribute) else ast.unparse(b)
                         for b in node.bases]  # fmt: skip
                classes.append((str(path.relative_to(root)), node.name, bases))
    found: list[str] = []
    grew = True
    while grew:  # a subclass of a subclass counts too
        grew = False
        for where, name, bases in classes:
            if name not in known and known & set(bases):
                known.add(name)
                found.append(f"{where}: {name}")
                grew = True
    return sorted(found)


def test_every_donegate_error_is_defined_in_errors_py() -> None:
    files = [p for p in SRC.rglob("*.py") if p != ERRORS]
    assert _defined_elsewhere(files) == []


def test_the_walk_finds_an_error_defined_elsewhere(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    text = "class A(errors.UserError): ...\nclass B(A): ...\nclass C(Exception): ...\n"
    module.write_text(text, encoding="utf-8")
    assert _defined_elsewhere([module], tmp_path) == ["probe.py: A", "probe.py: B"]


def test_errors_py_imports_nothing_from_donegate() -> None:
    tree = ast.parse(ERRORS.read_text(encoding="utf-8"))
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert [m for m in imported if m and m.startswith("donegate")] == []


def test_one_turn_is_one_turn_not_1_turns() -> None:
    from donegate.errors import ScriptExhausted

    assert str(ScriptExhausted(1, 1)) == "model called 1 time but script has 1 turn"
    assert str(ScriptExhausted(2, 3)) == "model called 2 times but script has 3 turns"
