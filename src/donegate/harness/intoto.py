"""A certificate as an in-toto Statement v1, for ``actions/attest`` (or any in-toto signer).

The statement binds the delivered files to the certificate that says they are done:

- ``subject``: each delivered file, by its path relative to the workdir and its SHA-256;
- ``predicateType``: `PREDICATE_TYPE`;
- ``predicate``: the certificate, exactly as written and signed (its own digest and HMAC
  signature inside, so ``donegate verify`` still proves it after the statement is unwrapped).

Which files are delivered: the ones named (``--subject``, paths or globs under the workdir), or
else every regular file under the workdir, less version-control and cache folders. A file that
leaves the workdir (a symlink out, ``..``) is never a subject.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from donegate.errors import UserError
from donegate.records.certificate import read_certificate

__all__ = ["MAX_SUBJECTS", "PREDICATE_TYPE", "STATEMENT_TYPE", "delivered_files", "statement"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
"""The in-toto Statement v1 ``_type``."""
PREDICATE_TYPE = "https://donegate.dev/certificate/v1"
"""The predicate type of a donegate certificate."""
MAX_SUBJECTS = 1024
"""Files a statement names at most: `actions/attest` takes no more subjects."""
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv",
                           "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                           ".tox", ".nox"})  # fmt: skip


def statement(
    cert: str | Path, *, workdir: str | Path | None = None, subjects: Sequence[str] = ()
) -> dict[str, Any]:
    """The in-toto Statement of the certificate at `cert` over the files delivered in `workdir`
    (default: the certificate's own workdir)."""
    data = read_certificate(cert)
    root = Path(workdir if workdir is not None else str(data.get("workdir") or "."))
    if not root.is_dir():
        raise UserError(f"{cert}: the workdir {root} is not a directory (pass --workdir)")
    files = delivered_files(root, subjects)
    if not files:
        raise UserError(f"{root}: no delivered file to attest (an in-toto subject is required)")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": _sha256(root / name)}} for name in files],
        "predicateType": PREDICATE_TYPE,
        "predicate": data,
    }


def delivered_files(root: Path, patterns: Sequence[str] = ()) -> list[str]:
    """The delivered files under `root`, relative POSIX paths, sorted (`UserError` past
    `MAX_SUBJECTS` or for a pattern leaving the workdir or matching nothing)."""
    base = root.resolve()
    found: set[str] = set()
    if patterns:
        for pattern in patterns:
            if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
                raise UserError(f"--subject {pattern!r}: must be a path inside the workdir")
            matched = [p for p in base.glob(pattern) if _inside(p, base)]
            files = [p for p in matched if p.is_file()]
            for folder in (p for p in matched if p.is_dir()):
                files.extend(_walk(folder, base))
            if not files:
                raise UserError(f"--subject {pattern!r}: matches no file under {base}")
            found.update(p.relative_to(base).as_posix() for p in files)
            _cap(found, base)
    else:
        found.update(p.relative_to(base).as_posix() for p in _walk(base, base))
        _cap(found, base)
    return sorted(found)


def _walk(folder: Path, base: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file() and _inside(path, base):
                out.append(path)
        if len(out) > MAX_SUBJECTS:
            break
    return out


def _cap(found: set[str], base: Path) -> None:
    if len(found) > MAX_SUBJECTS:
        raise UserError(
            f"{base}: more than {MAX_SUBJECTS} files to attest; name the delivered ones "
            "with --subject"
        )


def _inside(path: Path, base: Path) -> bool:
    try:
        path.resolve().relative_to(base)
    except (ValueError, OSError):
        return False
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()
