"""The gate's own files outside its data folder: a SQLite store opened by this process.

SQLite locks its database and WAL index with POSIX record locks, and closing *any* descriptor
of a file drops every such lock the process holds on it. A gate that opened its own store's
files to copy them into a room, or to digest them, would drop its store's locks: another
connection (a reader beside the worker) then takes itself for the first, resets the WAL index
under the worker's mapping, and the worker dies of SIGBUS, or the store is corrupted. So the
store (with its ``-wal``, ``-shm`` and ``-journal`` files, and donegate's ``.lock`` and
``-reserve`` beside it) is registered here when opened, and
the room copy, the protected-file walk and the agent's world leave it out. (The data folder,
which holds the default store, is left out by `donegate.config.data_dir` already.)
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["own", "owned", "owned_identities"]

_SUFFIXES = ("", "-wal", "-shm", "-journal", ".lock", "-reserve")  # the store's own beside it
_lock = threading.Lock()
_owned: set[str] = set()


def own(database: str | os.PathLike[str]) -> None:
    """Register a SQLite database file this process opened (its sibling files with it)."""
    path = os.path.abspath(database)
    with _lock:
        _owned.update(path + suffix for suffix in _SUFFIXES)


def owned() -> tuple[Path, ...]:
    """The registered files, whether or not each exists now."""
    with _lock:
        return tuple(Path(p) for p in sorted(_owned))


def owned_identities() -> frozenset[tuple[int, int]]:
    """The device and inode of each registered file that exists now (to know it by any name)."""
    found = set()
    for path in owned():
        try:
            info = os.stat(path)
        except OSError:
            continue
        found.add((info.st_dev, info.st_ino))
    return frozenset(found)
