"""The workdir's Python files and runner configuration, digested: what the tamper rules diff.

A check's outcome can be changed without touching a protected file: a module that shadows the
runner, a ``conftest.py`` or ``pytest.toml``, a ``.pth``. To tell which of those the agent added
or changed, the gate digests, when the task starts, every file in the workdir that Python or a
test runner could load or read (`relevant`), and digests them again at each claim. The start
record is `donegate.harness.protect.Manifest.tree` (one record per fact: a protected file's
digest stays in ``Manifest.files`` only).

The walk skips version-control folders and ``node_modules`` (nothing a check imports lives
there). A symlink is an entry (``symlink:TARGET``), never followed. ``pyproject.toml`` is
digested by the tables that change how checks run, not by its bytes (`pyproject_digest`), so an
agent may edit its ``[project]`` metadata. Digests are cached by the file's inode, size, mtime
and ctime, and a file changed less than `RACY_S` before it was digested is digested again
(git's "racy" rule): a process cannot set a file's ctime, so an unchanged stat is an unchanged
file.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from donegate.codec import canonical_json
from donegate.harness.protect import MAX_PROTECTED_FILES, ProtectError, _digest

__all__ = [
    "CONFIG_FILES",
    "MODULE_SUFFIXES",
    "SKIPPED_DIRS",
    "pyproject_digest",
    "python_files",
    "relevant",
]

CONFIG_FILES = frozenset(
    {"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg"}
)
"""Files a test runner reads its configuration from (``pyproject.toml`` aside: by table)."""
MODULE_SUFFIXES = (".py", ".pyw", ".pyc", ".pyo", ".so", ".pyd")
"""What Python imports a module from: source, bytecode, extensions."""
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules"})
"""Folders not walked: no check imports from them."""
RACY_S = 2.0
"""A cached digest is trusted only for files last changed this long before it was taken."""
RUNNER_TABLES = ("tool", "build-system")
"""``pyproject.toml`` tables that configure runners and environments (with entry points)."""

_cache: dict[str, tuple[tuple[int, ...], str]] = {}
_lock = threading.Lock()
_CACHE_LIMIT = 200_000


def relevant(name: str) -> bool:
    """Whether a file so named can change how Python or a test runner behaves."""
    return (
        name in CONFIG_FILES
        or name == "pyproject.toml"
        or name.endswith(MODULE_SUFFIXES)
        or name.endswith(".pth")
    )


def python_files(root: Path) -> dict[str, str]:
    """Relative path -> digest of every `relevant` file under `root` (links as entries).

    `ProtectError` past `MAX_PROTECTED_FILES` files.
    """
    found: dict[str, str] = {}
    todo = [(os.fspath(root), "")]
    while todo:
        folder, rel_dir = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable or gone: nothing Python could import from it either
        for entry in entries:
            name = entry.name
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if name not in SKIPPED_DIRS:
                        todo.append((entry.path, rel))
                    continue
                link = entry.is_symlink()
            except OSError:
                continue
            if relevant(name) or (link and name.isidentifier()):  # a linked package too
                found[rel] = _cached(entry, name)
                if len(found) > MAX_PROTECTED_FILES:
                    raise ProtectError(
                        f"more than {MAX_PROTECTED_FILES} Python files in the workdir to digest"
                    )
    return found


def _cached(entry: os.DirEntry[str], name: str) -> str:
    path = entry.path
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    key = (info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    with _lock:
        hit = _cache.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    digest = pyproject_digest(path) if name == "pyproject.toml" else _digest(path)
    if time.time_ns() - info.st_ctime_ns > RACY_S * 1e9:
        with _lock:
            if len(_cache) >= _CACHE_LIMIT:
                _cache.clear()
            _cache[path] = (key, digest)
    return digest


def pyproject_digest(path: str | os.PathLike[str]) -> str:
    """``toml:HEX`` over the tables of `RUNNER_TABLES` and ``[project.entry-points]``.

    Those configure the test runner (``[tool.pytest]``, ``[tool.pytest.ini_options]``,
    ``[tool.coverage]``, ``[tool.tox]``), the environment a check may sync (``[tool.uv]``,
    ``[build-system]``) and the plugins pytest loads by itself (``pytest11`` entry points).
    A file that is not TOML is digested by its bytes.
    """
    raw = _digest(os.fspath(path))
    if not raw.startswith("sha256:"):
        return raw
    import tomllib  # here: only a pyproject.toml among the files needs it

    try:
        with open(path, "rb") as f:
            data: dict[str, Any] = tomllib.loads(f.read(4 << 20).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return raw
    project = data.get("project")
    picked = {key: data.get(key) for key in RUNNER_TABLES}
    picked["entry-points"] = project.get("entry-points") if isinstance(project, dict) else None
    text = canonical_json(picked)
    return "toml:" + hashlib.sha256(text.encode()).hexdigest()
