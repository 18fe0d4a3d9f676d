"""Confinement of a path to a root: the one rule the built-in tools and the file checks share.

Its own module so that a check imports it without the built-in tools (their agent world and
tool model): an agent CLI's stop waits on the checks' imports (issue 29).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["confine"]


def confine(root: Path, path: str) -> Path:
    """Resolve `path` against `root`; `PermissionError` if it lands outside `root`.

    Symlinks are followed before the test, so a link inside the root that points out of it is
    refused. `root` must already be resolved.
    """
    try:
        target = (root / path).resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # a NUL byte, a symlink loop
        raise PermissionError(f"{path!r} is not a usable path: {exc}") from None
    if not target.is_relative_to(root):
        raise PermissionError(f"{path!r} resolves outside the workdir {root}")
    return target
