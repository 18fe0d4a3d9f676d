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
    "events": 0,
    "tools": 1,
    "models": 1,
    "finish": 1,
    "loop": 2,
    "run": 2,
    "actions": 2,
    "harness": 3,
    "store": 4,
    "telemetry": 4,
    "worker": 5,
    "_api": 5,
    "_files": 0,
    "_extras": 0,
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
    """Imports of donegate modules, skipping ``if TYPE_CHECKING:`` blocks."""
    found: list[tuple[int, str]] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.startswith("donegate"):
                    found.append((node.lineno, node.module))
            elif isinstance(node, ast.Import):
                found.extend(
                    (node.lineno, a.name) for a in node.names if a.name.startswith("donegate")
                )
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    visit([child])

    visit(tree.body)
    return found


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
