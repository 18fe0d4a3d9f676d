"""What a test session may not leave behind: a file in the repository or in the user's home.

Tests write only into their tmp dirs. `snapshot` records the repository's working tree as git
sees it (every changed or untracked, not ignored, path with its size and mtime), the entries at
the top of ``$HOME`` and everything under ``~/.donegate``; `changes` names what differs between
two snapshots. ``tests/conftest.py`` takes one before and one after each session (each xdist
worker has its own session), so a stray ``calc.py`` fails the run, naming the file.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

Snapshot = dict[str, tuple[int, int]]
"""A path (``repo:...`` or ``home:...``) -> (size, mtime in ns); (-1, -1) for a deleted path."""

_REPO_FALLBACK_SKIP = {".venv", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis",
                       "__pycache__", ".coverage", ".git"}  # fmt: skip


def snapshot(repo: Path, home: Path) -> Snapshot:
    """The repository's changed and untracked files, ``$HOME``'s entries and ``~/.donegate``."""
    marks: Snapshot = {}
    for rel in _repo_paths(repo):
        marks[f"repo:{rel}"] = _mark(repo / rel)
    if home.is_dir():
        for entry in home.iterdir():
            marks[f"home:{entry.name}"] = (0, 0)  # new entries count; their contents are theirs
        own = home / ".donegate"
        for path in _walk(own):
            marks[f"home:{path.relative_to(home)}"] = _mark(path)
    return marks


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths that appeared, disappeared or changed between `before` and `after`, sorted."""
    keys = before.keys() | after.keys()
    return sorted(k for k in keys if before.get(k) != after.get(k))


def _repo_paths(repo: Path) -> list[str]:
    """Paths git reports as modified, added, deleted or untracked (not ignored)."""
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=no"],
            cwd=repo, capture_output=True, timeout=60, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):  # no git, or not a checkout: the top level
        return [p.name for p in repo.iterdir() if p.name not in _REPO_FALLBACK_SKIP]
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    paths: list[str] = []
    it = iter(fields)
    for field in it:
        if len(field) < 4:
            continue
        paths.append(field[3:])
        if field[0] in "RC":  # a rename or copy: its source path follows
            next(it, None)
    return paths


def _walk(root: Path) -> Iterator[Path]:
    if not root.exists():
        return
    yield root
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            yield Path(top, name)


def _mark(path: Path) -> tuple[int, int]:
    try:
        st = path.lstat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)
