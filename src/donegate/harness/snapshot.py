"""The start snapshot: the contents behind a task's protected-file digests, kept by the gate.

`donegate.harness.protect` records, once per task, the digest of every protected file and of
the task-side files inside the workdir (the task file, check modules, a verifier script): the
`Manifest`, kept in the store (`baselines`) for the worker, in the hook state for the hooks and
in the certificate. This module keeps the contents those digests name, addressed by digest in
``$DONEGATE_HOME/snapshots/`` (one record of the fact: the manifest; the blobs are only what its
digests point at, and are checked against them when read). At each claim the clean room
(`donegate.harness.room`) writes them over the room's copies, so the checks see the files as
the task began, whatever the agent did to the workdir's copies.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from donegate.config import data_path
from donegate.harness.protect import Manifest, ProtectError

__all__ = ["keep", "restore", "snapshot_dir"]

_CHUNK = 1 << 20


def snapshot_dir() -> Path:
    """Where the start contents are kept (``$DONEGATE_HOME/snapshots``)."""
    return data_path("snapshots")


def _blob(digest: str) -> Path | None:
    if not digest.startswith("sha256:"):
        return None
    hexa = digest.removeprefix("sha256:")
    return snapshot_dir() / hexa[:2] / hexa


def keep(manifest: Manifest) -> None:
    """Keep the contents of every file `manifest` digested (when taken, so as they started).

    A file that no longer has its recorded digest is not kept (its start contents are lost;
    restoring it then fails closed). Blobs already kept are not written again.
    """
    for rel, digest in manifest.files.items():
        blob = _blob(digest)
        if blob is None or blob.exists():
            continue
        blob.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(manifest.root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as src:
            if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
                continue
            h = hashlib.sha256()
            with tempfile.NamedTemporaryFile(dir=blob.parent, delete=False) as out:
                while chunk := src.read(_CHUNK):
                    h.update(chunk)
                    out.write(chunk)
        if "sha256:" + h.hexdigest() == digest:
            os.replace(out.name, blob)
        else:  # changed while it was read: not the start contents
            os.unlink(out.name)


def restore(manifest: Manifest, room: Path) -> list[str]:
    """Write the start contents over `room` (a copy of ``manifest.root``); what could not be.

    Every file the manifest digested gets its start contents (or link) back; a file the rules
    cover that the manifest does not hold (added since) is removed. A file whose contents are
    not kept and whose copy differs from its digest is named in the result: the checks must not
    run on it (fail closed).
    """
    if manifest.empty:
        return []
    problems: list[str] = []
    for rel, digest in manifest.files.items():
        target = room / rel
        if digest.startswith("symlink:"):
            _clear(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(digest.removeprefix("symlink:"), target)
            continue
        blob = _blob(digest)
        if blob is None:
            continue  # special or unreadable at the start: nothing to write back
        if _digest(target) == digest:
            continue
        if not blob.is_file() or _digest(blob) != digest:
            problems.append(f"cannot restore {rel}: its start contents are not kept here")
            continue
        _clear(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(blob, target)
    here = Manifest(root=room, patterns=manifest.patterns, pinned=manifest.pinned)
    try:
        added = [rel for rel in here.current() if rel not in manifest.files]
    except ProtectError as exc:
        return [*problems, str(exc)]
    for rel in added:
        _clear(room / rel)
    return problems


def _clear(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _digest(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        h = hashlib.sha256()
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return "sha256:" + h.hexdigest()
