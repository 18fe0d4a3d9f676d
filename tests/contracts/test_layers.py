"""The import-layer rule of STYLE.md: no module imports from a layer above its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "donegate"

# Lower numbers are lower layers. `testing` sits just below `cli`: the CLI serves scripts and the
# emulator, and nothing else in src/ may import it.
LAYERS: dict[str, int] = {
    "errors": 0,
    "config": 0,
    "messages": 0,
    "results": 0,
    "codec": 0,
    "events": 0,
    "records": 0,
    "tools": 1,
    "sandbox": 1,
    "models": 1,
    "finish": 1,
    "spend": 1,
    "loop": 2,
    "run": 2,
    "actions": 2,
    "harness": 3,
    "store": 4,
    "telemetry": 4,
    "worker": 5,
    "review": 5,
    "integrations": 5,
    "_api": 5,
    "_files": 0,
    "_extras": 0,
    "_frozen": 0,
    "server": 6,
    "__init__": 6,
    "__main__": 8,
    "testing": 7,
    "cli": 8,
}


def _layer(module: str) -> int:
    head = module.split(".")[1] if module.count(".") else "__init__"
    return LAYERS[head]


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    name = ".".join(parts)
    return name.removesuffix(".__init__") if parts[-1] == "__init__" and len(parts) > 2 else name


def _imports(tree: ast.Module) -> list[tuple[int, str]]:
    """Imports of donegate modules anywhere in the module, ``if TYPE_CHECKING:`` blocks included
    (a type-only import is still an arrow between layers)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("donegate"):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names if a.name.startswith("donegate"))
    return sorted(found)


def _files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_top_level_module_has_a_layer() -> None:
    unknown = {
        p.relative_to(SRC).parts[0].removesuffix(".py")
        for p in _files()
        if p.relative_to(SRC).parts[0].removesuffix(".py") not in LAYERS
    }
    assert not unknown, f"add these to LAYERS: {sorted(unknown)}"


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_upward_import(path: Path) -> None:
    name = _module_name(path)
    own = LAYERS[path.relative_to(SRC).parts[0].removesuffix(".py")]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    upward = [
        f"line {line}: {module}"
        for line, module in _imports(tree)
        if module != "donegate" and _layer(module) > own
    ]
    assert not upward, f"{name} imports from a higher layer: {upward}"


def test_the_rule_catches_an_upward_import() -> None:
    tree = ast.parse("from donegate.cli import main\n")
    assert [_layer(m) for _, m in _imports(tree)] == [8]


def test_the_rule_catches_a_type_only_upward_import() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from donegate.loop import RunResult\n"
        "else:\n"
        "    from donegate.store import TaskStore\n"
    )
    assert [(line, _layer(m)) for line, m in _imports(tree)] == [(3, 2), (5, 4)]


def test_the_rule_reads_imports_inside_functions() -> None:
    tree = ast.parse("def f() -> None:\n    import donegate.worker.service\n")
    assert [_layer(m) for _, m in _imports(tree)] == [5]
