#!/usr/bin/env python3
"""Count, with `ast`, that each fact has one type in `donegate.records` (issue 26, "Done when").

Four counts, each printed; the script exits 1 when any is off (CI runs it from scripts/check):
1. one class per fact: each fact's class is defined once in src/, and in records/;
2. one enum per status: each status vocabulary (its set of values) is declared once, as a
   `StrEnum` in records/status.py; a `Literal[...]` or an enum with the same values anywhere
   else is a copy, and a `Literal` of its strings in place of the enum is not an enum;
3. no module outside records/ defines a class whose fields are a records class's fields (the
   same set, or all of them and more): it would re-declare a record instead of embedding it;
4. store -> harness imports: 0 (`TYPE_CHECKING` blocks and imports inside functions included).

Usage: scripts/records_audit.py [SRC]   (SRC defaults to this checkout's src/donegate)
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

FACTS: dict[str, str] = {
    "check result": "CheckResult",
    "checklist item": "ChecklistItem",
    "checklist update": "ChecklistUpdate",
    "answered tool call": "ToolCallRecord",
    "answered tool call with its digests": "EvidenceRecord",
    "gate judgement": "Judgement",
    "certificate": "Certificate",
    "escalation report": "EscalationReport",
}
"""Each fact of issue 26's item 1 and the one class that carries it."""

STATUSES: dict[str, frozenset[str]] = {
    "task": frozenset(
        {"pending", "running", "done", "awaiting_review", "escalated", "failed", "cancelled"}
    ),
    "run": frozenset(
        {
            "complete",
            "truncated",
            "filtered",
            "refused",
            "empty",
            "context_exceeded",
            "malformed_tool_call",
            "provider_error",
            "max_steps",
            "budget_exceeded",
            "gated",
        }
    ),
    "item": frozenset({"open", "done", "blocked"}),
    "escalation": frozenset({"open", "resolved", "requeued", "approved"}),
    "outbox": frozenset({"pending", "delivered", "failed"}),
    "effect": frozenset({"begun", "done"}),
    "attempt": frozenset(
        {
            "running",
            "done",
            "awaiting_review",
            "escalated",
            "failed",
            "cancelled",
            "lost",
            "error",
        }
    ),
}
"""Each status vocabulary of item 1, by its values (and the run rows' own: a claim's status)."""

KNOWN_COPIES: dict[tuple[str, str], str] = {
    ("Manifest", "ProtectedSection"): "the live manifest (compiled globs, its root); the "
    "certificate's section is its JSON form. Not merged yet (issue 26, item 1).",
    ("TodoRecord", "TodoItem"): "the hooks' signed state keeps todos as a strict pydantic "
    "model; not yet an embedded TodoItem (issue 26, item 1).",
}
"""Copies still to remove, each printed as known on every run; a new copy fails the audit."""

MIN_FIELDS = 3
"""A class shares a record's field set only when that set has at least this many fields."""


def _files(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*.py") if "__pycache__" not in p.parts)


def _in_records(src: Path, path: Path) -> bool:
    return path.relative_to(src).parts[0] == "records"


def _strings(node: ast.expr) -> frozenset[str] | None:
    """The values of ``Literal["a", "b"]`` (None when `node` is no such literal)."""
    if not isinstance(node, ast.Subscript):
        return None
    head = node.value
    name = head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", None)
    if name != "Literal":
        return None
    elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    values = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return frozenset(values) if len(values) == len(elts) else None


def _enum_values(cls: ast.ClassDef) -> frozenset[str] | None:
    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases}
    if not bases & {"StrEnum", "Enum"}:
        return None
    values = [
        s.value.value
        for s in cls.body
        if isinstance(s, ast.Assign)
        and isinstance(s.value, ast.Constant)
        and isinstance(s.value.value, str)
    ]
    return frozenset(values)


def _fields(cls: ast.ClassDef) -> frozenset[str]:
    """The names a class body annotates (dataclass, pydantic model, TypedDict fields)."""
    return frozenset(
        s.target.id
        for s in cls.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        if not s.target.id.isupper() and s.target.id != "model_config"
    )


def _status_types(tree: ast.Module) -> Iterator[tuple[int, frozenset[str], bool]]:
    """Each enum or string `Literal` in `tree`: its line, its values, and whether an enum."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and (values := _enum_values(node)) is not None:
            yield node.lineno, values, True
        elif isinstance(node, ast.Subscript) and (values := _strings(node)) is not None:
            yield node.lineno, values, False


def _imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)


def audit(src: Path) -> list[str]:
    """Every violation, one line each (empty when the four counts hold)."""
    problems: list[str] = []
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in _files(src)}
    where = lambda p, line: f"{p.relative_to(src.parent)}:{line}"  # noqa: E731

    classes: dict[str, list[tuple[Path, ast.ClassDef]]] = {}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append((path, node))

    # 1. one class per fact, in records/ (ToolCallRecord is the loop's, in results.py: layer 0)
    for fact, name in FACTS.items():
        found = classes.get(name, [])
        print(f"fact {fact!r}: {len(found)} class {name}")
        if len(found) != 1:
            problems.append(f"{fact}: {len(found)} classes named {name} (want 1)")
        elif name != "ToolCallRecord" and not _in_records(src, found[0][0]):
            problems.append(f"{fact}: {name} is defined in {found[0][0].name}, not in records/")

    # 2. one enum per status
    for status, values in STATUSES.items():
        found_at = [
            (path, line, is_enum)
            for path, tree in trees.items()
            for line, seen, is_enum in _status_types(tree)
            if seen == values
        ]
        enums = sum(1 for *_, is_enum in found_at if is_enum)
        print(f"status {status!r}: {len(found_at)} declaration(s), {enums} enum")
        if len(found_at) != 1:
            problems.append(
                f"status {status}: declared {len(found_at)} times: "
                + ", ".join(where(p, line) for p, line, _ in found_at)
            )
            continue
        path, line, is_enum = found_at[0]
        if path.relative_to(src).as_posix() != "records/status.py":
            problems.append(f"status {status}: declared at {where(path, line)}, not records/")
        if not is_enum:
            problems.append(f"status {status}: {where(path, line)} is a Literal, not an enum")

    # 3. no field set of records/ declared again outside it
    record_sets = [
        (path, node, _fields(node))
        for name, defs in classes.items()
        for path, node in defs
        if _in_records(src, path)
    ]
    copies = 0
    for name, defs in classes.items():
        for path, node in defs:
            if _in_records(src, path):
                continue
            mine = _fields(node)
            for rpath, rnode, theirs in record_sets:
                if len(theirs) >= MIN_FIELDS and theirs <= mine:
                    if (name, rnode.name) in KNOWN_COPIES:
                        print(
                            f"known copy: {name} of {rnode.name}: {KNOWN_COPIES[name, rnode.name]}"
                        )
                        continue
                    copies += 1
                    problems.append(
                        f"{where(path, node.lineno)}: {name} re-declares the fields of "
                        f"{rnode.name} ({where(rpath, rnode.lineno)}): {sorted(theirs)}"
                    )
    print(f"field sets of records/ declared outside it: {copies}")

    # 4. store -> harness imports
    upward = [
        f"{where(path, line)}: {module}"
        for path, tree in trees.items()
        if path.relative_to(src).parts[0] == "store"
        for line, module in _imports(tree)
        if module == "donegate.harness" or module.startswith("donegate.harness.")
    ]
    print(f"store -> harness imports: {len(upward)}")
    problems.extend(f"store imports the harness: {u}" for u in upward)
    return problems


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "src/donegate"
    problems = audit(src)
    for problem in problems:
        print(f"records_audit: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
