"""Protected files for the hooks: the task's manifest taken at the start, compared at each stop.

The rules and the digests are `donegate.harness.protect`'s (the task's ``protect:`` globs, plus
what the task needs protected whatever it lists); the hooks only keep the manifest in their
state as plain data and ask it for changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from donegate.harness import protect
from donegate.harness.snapshot import snapshot_dir
from donegate.harness.spec import TaskSpec

__all__ = ["changes", "manifest", "take"]


def take(
    spec: TaskSpec, root: Path, task_path: str | None, *, session: str | None = None
) -> dict[str, Any]:
    """Digest the protected files of `spec` in `root` now, as plain data.

    `task_path` is the task file: inside the workdir, it and its check modules are protected.
    With `session`, the first digests taken for this task, session and workdir are kept in the
    data folder and returned ever after: a hook whose state was lost (deleted, unreadable) judges
    against the start again, never against digests re-taken from the agent's workdir.
    """
    kept = _start_file(spec.id, root, session) if session is not None else None
    if kept is not None:
        with contextlib.suppress(OSError, ValueError):
            found = json.loads(kept.read_text())
            if isinstance(found, dict) and isinstance(found.get("files"), dict):
                return found
    patterns, pinned = protect.task_patterns(spec, root, task_file=task_path)
    data: dict[str, Any] = protect.take_manifest(
        root, patterns, pinned=pinned, allow=spec.allow
    ).as_data()
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # "x": another hook of the session may have kept it first; the first one wins
        with contextlib.suppress(FileExistsError), open(kept, "x", encoding="utf-8") as f:
            f.write(json.dumps(data))
    return data


def _start_file(task: str, root: Path, session: str) -> Path:
    key = hashlib.sha256(f"{task}\0{Path(root).resolve()}\0{session}".encode()).hexdigest()[:32]
    return snapshot_dir() / "starts" / f"{key}.json"


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
