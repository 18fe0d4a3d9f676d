"""Size caps from STYLE.md: no function in src/ over 100 lines, no module over 500.

Shipped Alembic migrations are frozen snapshots of the schema at a release and are the only
exception: they are never edited, so they are never split.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "donegate"
MIGRATIONS = SRC / "store" / "migrations"
MAX_FUNCTION_LINES = 100
MAX_MODULE_LINES = 500


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if MIGRATIONS not in p.parents)


def _long_functions(path: Path, root: Path = SRC) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_the_walk_sees_the_package() -> None:
    names = {p.name for p in _modules()}
    assert {"loop.py", "messages.py", "results.py"} <= names
    assert not any(MIGRATIONS in p.parents for p in _modules())


def test_no_module_is_over_500_lines() -> None:
    long = [
        f"{p.relative_to(SRC)} ({n} lines)"
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert long == []


def test_no_function_is_over_100_lines() -> None:
    assert [f for p in _modules() for f in _long_functions(p)] == []


def test_the_function_measure_counts_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    sample = tmp_path / "sample.py"
    sample.write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n", encoding="utf-8")
    assert _long_functions(sample, tmp_path) == [
        f"sample.py:1 long ({MAX_FUNCTION_LINES + 1} lines)"
    ]
