"""Protected files for the hooks: the task's manifest taken at the start, compared at each stop.

The rules and the digests are `donegate.harness.protect`'s (the task's ``protect:`` globs, plus
what the task needs protected whatever it lists); the hooks only keep the manifest in their
state as plain data and ask it for changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from donegate.harness.spec import TaskSpec

try:  # h/gate-proof's module; until it is merged the hooks protect nothing
    from donegate.harness import protect  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # pragma: no cover - removed when h/gate-proof is merged
    protect = None

__all__ = ["changes", "take"]


def take(spec: TaskSpec, root: Path, task_path: str | None) -> dict[str, Any]:
    """Digest the protected files of `spec` in `root` now, as plain data."""
    if protect is None:
        return {"patterns": [], "pinned": [], "files": {}}
    patterns, pinned = protect.task_patterns(spec, root, task_file=task_path)
    data: dict[str, Any] = protect.take_manifest(root, patterns, pinned=pinned).as_data()
    return data


def changes(manifest: dict[str, Any] | None, root: Path) -> list[str]:
    """``protected file changed: PATH`` for each file not as the manifest recorded it."""
    if not manifest or protect is None:
        return []
    try:
        loaded = protect.Manifest.from_data(manifest, root)
    except ValueError as exc:
        return [f"the protected-file digests are unusable ({exc})"]
    return [c.text for c in loaded.changes()]
