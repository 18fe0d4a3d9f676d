"""Protected files for the hooks: the task's manifest taken at the start, compared at each stop.

The rules and the digests are `donegate.harness.protect`'s (the task's ``protect:`` globs, plus
what the task needs protected whatever it lists); the hooks only keep the manifest in their
state as plain data and ask it for changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from donegate.harness import protect
from donegate.harness.spec import TaskSpec

__all__ = ["changes", "manifest", "take"]


def take(spec: TaskSpec, root: Path, task_path: str | None) -> dict[str, Any]:
    """Digest the protected files of `spec` in `root` now, as plain data.

    `task_path` is the task file: inside the workdir, it and its check modules are protected.
    """
    patterns, pinned = protect.task_patterns(spec, root, task_file=task_path)
    data: dict[str, Any] = protect.take_manifest(root, patterns, pinned=pinned).as_data()
    return data


def changes(manifest: dict[str, Any] | None, root: Path) -> list[str]:
    """``protected file changed: PATH`` for each file not as the manifest recorded it."""
    if not manifest:
        return []
    try:
        loaded = protect.Manifest.from_data(manifest, root)
    except ValueError as exc:
        return [f"the protected-file digests are unusable ({exc})"]
    try:
        return [c.text for c in loaded.changes()]
    except protect.ProtectError as exc:
        return [str(exc)]


def manifest(data: dict[str, Any] | None, root: Path) -> protect.Manifest | None:
    """The manifest `data` holds (None when there is none or it is unusable)."""
    if not data:
        return None
    try:
        return protect.Manifest.from_data(data, root)
    except ValueError:
        return None
