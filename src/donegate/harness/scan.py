"""A scan of the agent's changes for code that tampers with the test runner from inside.

No isolation stops code under test that patches the runner it runs in: the checks import it.
So every Python file the agent added or changed (against the task's start record,
`donegate.harness.tamper.changed_files`) that is not a test file is read with `ast`, and these
are flagged, each at its line:

- importing the runner (``unittest``, ``pytest``, ``_pytest``; by ``import``, ``__import__``
  or ``importlib.import_module``);
- patching it: assigning to or deleting an attribute of the runner (``TestCase._callTestMethod
  = ...``), ``setattr``/``delattr`` on it, ``mock.patch("unittest...")``, ``monkeypatch``;
- replacing builtins (``builtins.print = ...``, ``__builtins__[...]``), replacing modules in
  ``sys.modules``, or adding import hooks (``sys.meta_path``, ``sys.path_hooks``);
- leaving the process at import: ``os._exit``, ``sys.exit``, ``exit``, ``quit``, ``os.abort``,
  ``raise SystemExit`` in code that runs when the module is imported (module and class
  bodies, not functions, not under ``if __name__ == "__main__"``);
- bytecode without its source and native extensions, which cannot be read.

A test file is ``test_*.py``, ``*_test.py``, ``conftest.py``, or any file under a ``tests`` or
``test`` folder. What the scan flags goes to the verifier with the evidence; with no verifier
the claim fails naming ``file:line`` (`donegate.harness.gate`). It is a scan, not a proof:
docs/certificates.md says what it does not see.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

from donegate.harness.protect import Manifest
from donegate.harness.tamper import changed_files

__all__ = ["SCAN_LIMIT", "Flag", "scan_changes", "scan_source"]

SCAN_LIMIT = 1 << 20
"""Bytes of one file the scan reads; a longer file is flagged as too large to read."""
RUNNERS = ("unittest", "pytest", "_pytest")
_EXITS = {"os._exit", "sys.exit", "exit", "quit", "os.abort", "_exit", "posix._exit"}
_IMPORT_HOOKS = ("sys.meta_path", "sys.path_hooks", "sys.path_importer_cache")
_TEST_FILE = re.compile(r"(?:test_.*|.*_test|conftest)\.py\Z")
_TEST_DIRS = frozenset({"tests", "test"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Flag:
    """One line of the agent's changes that may tamper with the runner."""

    path: str
    """The file, relative to the workdir."""
    line: int
    """1-based line (0 for a file that cannot be read)."""
    why: str
    """``patches the test runner (unittest.TestCase._callTestMethod)``..."""

    @property
    def text(self) -> str:
        """``calc.py:4: patches the test runner (...)``."""
        return f"{self.path}:{self.line}: {self.why}"


def is_test_file(rel: str) -> bool:
    """Whether `rel` is a test file (which may import the runner)."""
    parts = rel.split("/")
    return bool(_TEST_FILE.match(parts[-1])) or any(p in _TEST_DIRS for p in parts[:-1])


def scan_changes(manifest: Manifest | None, changed: dict[str, bool] | None = None) -> list[Flag]:
    """Every flag in the non-test files added or changed since the task started (`changed`:
    `changed_files`, when found already)."""
    if manifest is None:
        return []
    changed = changed_files(manifest) if changed is None else changed
    flags: list[Flag] = []
    for rel in sorted(changed or ()):
        if is_test_file(rel):
            continue
        name = rel.rpartition("/")[2]
        if name.endswith((".pyc", ".pyo")) and "__pycache__" not in rel.split("/"):
            flags.append(Flag(path=rel, line=0, why="bytecode without its source (unreadable)"))
        elif name.endswith((".so", ".pyd")):
            flags.append(Flag(path=rel, line=0, why="a native extension (unreadable)"))
        elif name.endswith((".py", ".pyw")):
            try:
                with open(manifest.root / rel, "rb") as f:
                    data = f.read(SCAN_LIMIT + 1)
            except OSError:
                continue  # gone since the walk, or not a file: nothing to import
            if len(data) > SCAN_LIMIT:
                flags.append(Flag(path=rel, line=0, why="too large to scan"))
                continue
            flags += [Flag(path=rel, line=n, why=w) for n, w in _scan_bytes(data)]
    return flags


def scan_source(path: str, source: str | bytes) -> list[Flag]:
    """The flags in one module's source (a file that does not parse has none: it cannot run)."""
    data = source.encode() if isinstance(source, str) else source
    return [Flag(path=path, line=n, why=w) for n, w in _scan_bytes(data)]


@functools.lru_cache(maxsize=4096)
def _scan_bytes(data: bytes) -> tuple[tuple[int, str], ...]:
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return ()
    visitor = _Scan()
    visitor.visit(tree)
    for node in _import_time(tree.body):
        visitor.exit_at_import(node)
    return tuple(sorted(set(visitor.found)))


class _Scan(ast.NodeVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.found: list[tuple[int, str]] = []

    def flag(self, node: ast.AST, why: str) -> None:
        self.found.append((getattr(node, "lineno", 0), why))

    # imports: record aliases, flag the runner
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.partition(".")[0]] = (
                alias.name if alias.asname else alias.name.partition(".")[0]
            )
            if _runner(alias.name):
                self.flag(node, f"imports the test runner ({alias.name})")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        if _runner(node.module):
            self.flag(node, f"imports the test runner ({node.module})")

    def name(self, node: ast.AST) -> str | None:
        """The dotted name an expression stands for (aliases resolved), if it is one."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.name(node.value)
            return f"{base}.{node.attr}" if base is not None else None
        if isinstance(node, ast.Subscript):
            base = self.name(node.value)
            return f"{base}[]" if base is not None else None
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = self.name(node.func)
            if func in ("__import__", "importlib.import_module") and isinstance(
                node.args[0].value, str
            ):
                return node.args[0].value
        return None

    def target(self, node: ast.AST, where: ast.AST) -> None:
        if not isinstance(node, ast.Attribute | ast.Subscript):
            return
        name = self.name(node)
        if name is None:
            return
        why = _touches(name)
        if why is not None:
            self.flag(where, f"{why} ({name.removesuffix('[]')})")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            for part in _unpacked(target):
                self.target(part, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.target(target, node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = self.name(node.func) or ""
        first = node.args[0] if node.args else None
        called = func.rpartition(".")[2]
        if func in ("__import__", "importlib.import_module") and first is not None:
            module = first.value if isinstance(first, ast.Constant) else None
            if isinstance(module, str) and _runner(module):
                self.flag(node, f"imports the test runner ({module})")
        if called in ("setattr", "delattr") and first is not None:
            # setattr(X, ...), monkeypatch.setattr(X or "X.attr", ...)
            self._patched(node, first, func)
        elif called in ("patch", "object", "dict", "multiple") and "patch" in func:
            if first is not None:
                self._patched(node, first, func)
        elif called in ("insert", "append", "extend", "update", "setdefault", "__setitem__"):
            base = func.rpartition(".")[0]
            why = _touches(base + ".*") if base else None
            if why is not None:
                self.flag(node, f"{why} ({base})")
        self.generic_visit(node)

    def _patched(self, node: ast.Call, first: ast.AST, func: str) -> None:
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            name, shown = first.value, first.value
        else:
            of = self.name(first)
            if of is None:
                return
            name, shown = f"{of}.*", of
        why = _touches(name)
        if why is not None:
            self.flag(node, f"{why} ({func} on {shown})")

    def exit_at_import(self, node: ast.AST) -> None:
        for sub in _walk_no_defs(node):
            if isinstance(sub, ast.Call):
                func = self.name(sub.func)
                if func in _EXITS:
                    self.flag(sub, f"leaves the process at import ({func})")
            elif isinstance(sub, ast.Raise) and sub.exc is not None:
                exc = sub.exc.func if isinstance(sub.exc, ast.Call) else sub.exc
                if self.name(exc) in ("SystemExit", "builtins.SystemExit"):
                    self.flag(sub, "leaves the process at import (raise SystemExit)")


def _runner(module: str) -> bool:
    return module.partition(".")[0] in RUNNERS


def _touches(name: str) -> str | None:
    """Why changing `name` (a dotted attribute or ``[]`` item of something) is flagged."""
    root = re.split(r"[.\[]", name, maxsplit=1)[0]
    if root == name:  # a bare name: rebinding it changes nothing outside this module
        return None
    if root in RUNNERS:
        return "patches the test runner"
    if root in ("builtins", "__builtins__"):
        return "replaces a builtin"
    if name.startswith("sys.modules"):
        return "replaces a module in sys.modules"
    if name.startswith(_IMPORT_HOOKS):
        return "changes the import system"
    return None


def _unpacked(target: ast.AST) -> list[ast.AST]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for e in target.elts for t in _unpacked(e)]
    return [target]


def _import_time(body: list[ast.stmt]) -> list[ast.AST]:
    """The statements that run when a module is imported (class bodies included; not function
    bodies, not ``if __name__ == "__main__":``)."""
    out: list[ast.AST] = []
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            out += stmt.decorator_list
            out += [d for d in stmt.args.defaults + stmt.args.kw_defaults if d is not None]
        elif isinstance(stmt, ast.ClassDef):
            out += stmt.decorator_list + stmt.bases
            out += _import_time(stmt.body)
        elif isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
            out += _import_time(stmt.orelse)
        elif isinstance(stmt, ast.If | ast.For | ast.While | ast.AsyncFor):
            out.append(stmt.test if isinstance(stmt, ast.If | ast.While) else stmt.iter)
            out += _import_time(stmt.body) + _import_time(stmt.orelse)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            out += [item.context_expr for item in stmt.items]
            out += _import_time(stmt.body)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            out += _import_time(stmt.body) + _import_time(stmt.orelse)
            out += _import_time(stmt.finalbody)
            for handler in stmt.handlers:
                out += _import_time(handler.body)
        elif isinstance(stmt, ast.Match):
            out.append(stmt.subject)
            for case in stmt.cases:
                out += _import_time(case.body)
        else:
            out.append(stmt)
    return out


def _walk_no_defs(node: ast.AST) -> list[ast.AST]:
    """`node` and what is under it, not entering functions or lambdas (they run later)."""
    out, todo = [], [node]
    while todo:
        current = todo.pop()
        out.append(current)
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                todo.append(child)
    return out


def _is_main_guard(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )
