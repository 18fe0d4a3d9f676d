"""What a task id may be: it names files, keys and rows, so it is short and needs no quoting."""

from __future__ import annotations

import re

__all__ = ["TASK_ID", "task_id_problem"]

TASK_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""What a task id may be: it names files and keys, so it is short and needs no quoting."""


def task_id_problem(value: str) -> str | None:
    """Why `value` is not a task id (a one-line reason), or None when it is one."""
    if TASK_ID.fullmatch(value):
        return None
    if not value:
        return "a task id is empty"
    if len(value) > 128:
        return f"a task id has at most 128 characters, got {len(value):,}"
    bad = next(c for c in value if not TASK_ID.fullmatch(c))
    return f"a task id is letters, digits, '.', '_' and '-', got {bad!r} in {value!r}"
