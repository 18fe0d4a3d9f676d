"""Which optional dependencies are installed, asked of donegate's own package metadata.

A command that needs extras checks them all before it prints or does anything, so a missing
dependency is one line naming every package and every extra at once (and it comes last, after
pip's output, rather than after half a run). The extras are read from the installed
distribution's metadata, so pyproject.toml stays the one list of what each extra holds.
"""

from __future__ import annotations

import functools
import re

from donegate.errors import MissingExtra

__all__ = ["missing", "require"]

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


@functools.cache  # the installed metadata does not change under a running process
def _requirements(extra: str) -> tuple[str, ...]:
    """The distribution names `extra` lists (nested ``donegate[...]`` extras expanded)."""
    from importlib import metadata  # here, not at the top: ~5 ms every import of donegate paid

    try:
        lines = metadata.requires("donegate") or []
    except metadata.PackageNotFoundError:  # run from a source tree, never installed
        return ()
    names: list[str] = []
    for line in lines:
        requirement, _, marker = line.partition(";")
        found = _EXTRA.search(marker)
        name = _NAME.match(requirement)
        if found is None or found.group(1) != extra or name is None:
            continue
        if name.group(1) == "donegate":
            nested = re.search(r"\[([^\]]*)\]", requirement)
            for sub in nested.group(1).split(",") if nested else []:
                names.extend(_requirements(sub.strip()))
        else:
            names.append(name.group(1))
    return tuple(dict.fromkeys(names))


def missing(*extras: str) -> list[tuple[str, str]]:
    """``(package, extra)`` for every package of `extras` that is not installed."""
    from importlib import metadata

    gaps: list[tuple[str, str]] = []
    for extra in extras:
        for name in _requirements(extra):
            try:
                metadata.distribution(name)
            except metadata.PackageNotFoundError:
                gaps.append((name, extra))
    return gaps


def require(*extras: str) -> None:
    """Raise one `MissingExtra` naming every missing package of `extras`, or return."""
    gaps = missing(*extras)
    if gaps:
        packages = list(dict.fromkeys(p for p, _ in gaps))
        raise MissingExtra(packages, [e for _, e in gaps])
