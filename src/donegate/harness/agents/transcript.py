"""Agent transcripts: pointed to by path and digest, read only where the CLI keeps its own data.

A hook payload names a transcript path, and the payload is the CLI's, but the path is only a
string: a misconfigured or hostile setup can point it at ``/etc/shadow`` or a 50 MB file. So a
transcript is never copied into a report; reports carry a `TranscriptRef` (path, SHA-256, size).
The file is opened only when it resolves (symlinks followed) to a regular file under the CLI's
data folder or the session's cwd, and only its last `READ_CAP` bytes are parsed.
"""

from __future__ import annotations

import hashlib
import json
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from donegate.records.judgement import TranscriptRef

__all__ = ["DIGEST_CAP", "READ_CAP", "jsonl_records", "locate"]

READ_CAP = 16 * 1024 * 1024
"""Bytes of a transcript parsed for todo state (the tail: the newest records)."""
DIGEST_CAP = 512 * 1024 * 1024
"""A transcript larger than this is pointed to without a digest."""


def locate(path: str | None, allowed: Sequence[Path]) -> TranscriptRef:
    """A pointer to `path`: digested only when it lies under one of `allowed`."""
    if not path:
        return TranscriptRef(path=None, note="the CLI named no transcript")
    try:
        real = Path(path).expanduser().resolve(strict=True)
    except (OSError, RuntimeError, ValueError) as exc:
        return TranscriptRef(path=path, note=f"not found: {type(exc).__name__}")
    roots = [r for r in (_resolved(a) for a in allowed) if r is not None]
    if not any(real.is_relative_to(r) for r in roots):
        return TranscriptRef(
            path=path,
            note="outside the CLI's data folder and the session's cwd: not read",
        )
    try:
        info = real.stat()
    except OSError as exc:
        return TranscriptRef(path=path, note=f"cannot stat: {exc.strerror or exc}")
    if not stat.S_ISREG(info.st_mode):
        return TranscriptRef(path=path, note="not a regular file: not read")
    digest = _digest(real, info.st_size)
    return TranscriptRef(
        path=path,
        readable=True,
        resolved=str(real),
        sha256=digest,
        size=info.st_size,
        note="" if digest else "too large to digest",
    )


def jsonl_records(ref: TranscriptRef, cap: int = READ_CAP) -> Iterator[dict[str, Any]]:
    """The JSON objects of an allowed transcript's last `cap` bytes, oldest first.

    Lines that are not JSON objects (binary junk, a cut first line) are skipped: a transcript
    is evidence of what the agent said, never a reason for the gate to fail.
    """
    if not ref.readable or ref.resolved is None:
        return
    try:
        with open(ref.resolved, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - cap))
            raw = handle.read(cap)
    except OSError:
        return
    lines = raw.split(b"\n")
    if len(raw) >= cap:
        lines = lines[1:]  # the first line was cut by the cap
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            yield record


def _resolved(root: Path) -> Path | None:
    try:
        return root.expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return None


def _digest(path: Path, size: int) -> str | None:
    if size > DIGEST_CAP:
        return None
    sha = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1024 * 1024):
                sha.update(chunk)
    except OSError:
        return None
    return sha.hexdigest()
