"""Copy a workdir into a room, only what changed since the last copy, by reflink when it can.

The room is kept between the claims of one task, with an index of what each entry was (the
source's mtime, size, inode and change time, and the copy's own after it was written). An
entry is copied again when its source or its copy no longer is what the index says (so a check
that wrote into the room last time is undone too); entries gone from the source go from the
room. File contents are cloned (``FICLONE``: a reflink on btrfs, XFS, bcachefs) where the
filesystem allows, else copied in the kernel (``copy_file_range``/``sendfile``).

What is never copied: bytecode (``__pycache__`` folders, ``*.pyc``/``*.pyo`` files), so no
cached code the agent planted can stand in for a source; and special files (FIFOs, sockets,
devices), which could hang or leak; the folders named in ``skip`` (the gate's own data
folder, which holds the room, its key and its store, when it sits inside the workdir); and the
files `donegate.sandbox.own` registered (a store opened by this process: never opened here, as
closing a copy's descriptor would drop the store's locks). Symbolic
links are copied as links, never followed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from donegate.sandbox._own import owned_identities

__all__ = ["Synced", "is_bytecode", "sync"]

_FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)
_INDEX_VERSION = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class Synced:
    """What one `sync` did."""

    entries: int
    """Entries the source holds (bytecode and special files left out)."""
    copied: int
    """Files and links written into the room this time."""
    removed: int
    """Room entries removed because the source no longer has them."""
    bytes_copied: int
    """Bytes of the files written."""


def is_bytecode(name: str) -> bool:
    """Whether an entry named `name` is cached bytecode (never copied into a room)."""
    return name == "__pycache__" or name.endswith((".pyc", ".pyo"))


def sync(src: Path, dst: Path, *, index: Path, skip: Iterable[Path] = ()) -> Synced:
    """Make `dst` hold what `src` holds (no bytecode, no special files, nothing under `skip` or
    `dst`); `index` remembers it."""
    dst.mkdir(parents=True, exist_ok=True, mode=0o700)
    skipped = {_identity(path) for path in (dst, *skip)} - {None}
    owned = owned_identities()
    old = _load(index)
    new: dict[str, list[int]] = {}
    copied = size = 0
    wanted: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(src):
        rel_dir = os.path.relpath(dirpath, src)
        rel_dir = "" if rel_dir == "." else rel_dir
        keep = []
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if is_bytecode(name):
                continue
            if os.path.islink(full):
                filenames.append(name)
                continue
            if _identity(Path(full)) in skipped:
                continue
            rel = os.path.join(rel_dir, name)
            wanted.add(rel)
            target = os.path.join(dst, rel)
            if not os.path.isdir(target) or os.path.islink(target):
                _remove(target)
                os.mkdir(target, 0o700)
            keep.append(name)
        dirnames[:] = keep
        for name in filenames:
            if is_bytecode(name):
                continue
            rel = os.path.join(rel_dir, name)
            full = os.path.join(dirpath, name)
            try:
                info = os.lstat(full)
            except FileNotFoundError:
                continue
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                continue
            if (info.st_dev, info.st_ino) in owned:
                continue
            wanted.add(rel)
            target = os.path.join(dst, rel)
            mark = [info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns, info.st_mode]
            before = old.get(rel)
            if before is not None and before[:5] == mark and _same(target, before[5:]):
                new[rel] = before
                continue
            written = _copy(full, target, info)
            if written is None:
                continue
            copied += 1
            size += written
            new[rel] = mark + _mark(target)
    removed = _prune(dst, wanted)
    _save(index, new)
    return Synced(entries=len(wanted), copied=copied, removed=removed, bytes_copied=size)


def _identity(path: Path) -> tuple[int, int] | None:
    """A folder's device and inode (None when it is not there), to know it under any name."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _mark(path: str) -> list[int]:
    info = os.lstat(path)
    return [info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns]


def _same(target: str, mark: list[int]) -> bool:
    """Whether the room's copy is still the one the index recorded (no check rewrote it)."""
    try:
        return _mark(target) == mark
    except OSError:
        return False


def _copy(src: str, dst: str, info: os.stat_result) -> int | None:
    """Write `src` at `dst` (a link as a link); bytes written, None when `src` went away."""
    _remove(dst)
    if stat.S_ISLNK(info.st_mode):
        try:
            os.symlink(os.readlink(src), dst)
        except FileNotFoundError:
            return None
        return 0
    try:
        fd_in = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd_in, "rb") as fin:
        if not stat.S_ISREG(os.fstat(fin.fileno()).st_mode):
            return None
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        try:
            with os.fdopen(os.open(dst, flags, 0o600), "wb") as fout:
                try:
                    fcntl.ioctl(fout.fileno(), _FICLONE, fin.fileno())
                except OSError:  # no reflink here (ext4, tmpfs, another filesystem)
                    shutil.copyfileobj(fin, fout)  # sendfile/copy_file_range under the hood
                written = os.fstat(fout.fileno()).st_size
        except OSError as exc:  # a full disk, say: name the room's file, as open() would
            if exc.filename is not None:
                raise
            raise OSError(exc.errno, exc.strerror, dst) from exc
    os.chmod(dst, stat.S_IMODE(info.st_mode) | stat.S_IRUSR | stat.S_IWUSR)
    os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))
    return written


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _prune(dst: Path, wanted: set[str]) -> int:
    """Remove what the room holds beyond `wanted` (left by checks, or gone from the source)."""
    removed = 0
    for dirpath, dirnames, filenames in os.walk(dst, topdown=True):
        rel_dir = os.path.relpath(dirpath, dst)
        rel_dir = "" if rel_dir == "." else rel_dir
        for name in list(dirnames):
            rel = os.path.join(rel_dir, name)
            if rel not in wanted or os.path.islink(os.path.join(dirpath, name)):
                if rel not in wanted:
                    _remove(os.path.join(dirpath, name))
                    removed += 1
                dirnames.remove(name)
        for name in filenames:
            if os.path.join(rel_dir, name) not in wanted:
                _remove(os.path.join(dirpath, name))
                removed += 1
    return removed


def _load(index: Path) -> dict[str, list[int]]:
    try:
        data = json.loads(index.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _INDEX_VERSION:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def _save(index: Path, entries: dict[str, list[int]]) -> None:
    tmp = index.with_name(index.name + ".tmp")
    tmp.write_text(json.dumps({"version": _INDEX_VERSION, "entries": entries}))
    os.replace(tmp, index)
