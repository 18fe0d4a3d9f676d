"""`Jail` (what a sandboxed program sees) and `command` (the argv that starts it there).

Under ``sandbox`` the program runs in bubblewrap with a root built from nothing: the system
folders read-only, an empty private ``/tmp``, an empty home, its own ``/proc`` (a new PID
namespace, so it cannot see or signal the processes outside) and a minimal ``/dev``, and then
exactly the paths the jail lists. It dies with the process that started it, runs in a new
session (no terminal to inject keystrokes into) and holds no capabilities. donegate's data
folder is always masked. Under ``process`` the argv is returned unchanged.
"""

from __future__ import annotations

import functools
import os
import site
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from donegate.config import data_dir
from donegate.sandbox._probe import Isolation, keep_probe

__all__ = ["Jail", "command", "system_paths"]

_SYSTEM_DIRS = ("/usr", "/etc", "/opt")
_ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclass(frozen=True, kw_only=True, slots=True)
class Jail:
    """What a sandboxed program sees. Everything not listed (or part of the system) is absent."""

    writable: tuple[Path, ...] = ()
    """Bound read-write at the same path."""
    readable: tuple[Path, ...] = ()
    """Bound read-only at the same path (besides the system)."""
    hidden: tuple[Path, ...] = ()
    """Masked (an empty folder, or an empty file) even where they fall under the paths above."""
    network: bool = True
    """False: a network namespace of its own, with only a loopback that leads nowhere."""
    cwd: Path | None = None
    """Where the program starts (default: the caller's folder when the jail shows it)."""
    rooms: tuple[tuple[Path, Path], ...] = ()
    """``(source, inside)`` pairs: `source` bound read-write at the path `inside` (the clean
    room shown at the workdir's own path)."""


@functools.cache
def system_paths() -> tuple[Path, ...]:
    """The interpreter's own folders that must be readable for donegate's children to start.

    The prefix, the base prefix and every absolute folder on ``sys.path`` (an editable install
    puts donegate's source there), but never the user site (``~/.local``): a check must not read
    a ``usercustomize.py`` the agent wrote there. Nor the home folder or a folder holding it
    (``/``): ``python -m donegate`` started there puts it first on ``sys.path``, and the sandbox's
    home must stay empty (a reviewer's token lives there).
    """
    user_site = Path(site.getusersitepackages()) if site.ENABLE_USER_SITE is not False else None
    home = Path(os.path.abspath(os.path.expanduser("~")))
    found: dict[str, Path] = {}
    for raw in (sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path):
        if not raw or not os.path.isabs(raw) or not os.path.isdir(raw):
            continue
        path = Path(raw)
        if user_site is not None and (path == user_site or user_site in path.parents):
            continue
        if Path(os.path.abspath(raw)) in (home, *home.parents):
            continue
        found.setdefault(str(path), path)
    return tuple(found.values())


def command(argv: Sequence[str], *, isolation: Isolation, jail: Jail) -> list[str]:
    """The argv to start instead of `argv`: bwrap's options, ``--`` and `argv` under
    ``sandbox``; `argv` unchanged under ``process``."""
    if isolation.backend == "process":
        return list(argv)
    keep_probe(isolation.bwrap)
    opts: list[str] = [isolation.bwrap or "bwrap", "--unshare-all"]
    if jail.network:
        opts.append("--share-net")
    opts += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for name in _SYSTEM_DIRS:
        opts += ["--ro-bind-try", name, name]
    for name in _ROOT_LINKS:
        if os.path.islink(name):
            opts += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            opts += ["--ro-bind", name, name]
    opts += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    home = Path(os.path.expanduser("~"))
    if home.is_dir() and not _is_system(home):
        opts += ["--tmpfs", str(home)]
    binds = [("--ro-bind", p, p) for p in system_paths()]
    binds += [("--ro-bind", p, p) for p in jail.readable]
    binds += [("--bind", p, p) for p in jail.writable]
    binds += [("--bind", src, inside) for src, inside in jail.rooms]
    shown = [inside for _, _, inside in binds]
    steps: list[tuple[int, list[str]]] = []
    for flag, src, inside in binds:
        if os.path.exists(src):
            where = os.path.abspath(inside)
            steps.append((len(Path(where).parts), [flag, os.path.realpath(src), where]))
    store = data_dir()
    if _under_any(store, shown) and store.exists():
        # at its depth: over the paths that hold it, under the paths listed inside it
        steps.append((len(Path(os.path.abspath(store)).parts), _mask(store)))
    for _, step in sorted(steps, key=lambda s: s[0]):
        opts += step
    empty_home = home if home.is_dir() and not _is_system(home) else None
    masked: list[Path] = []  # a path under a masked folder is hidden already (and cannot be made)
    for hide in sorted(jail.hidden, key=lambda p: len(Path(os.path.abspath(p)).parts)):
        if _inside(hide, masked):
            continue
        if _under_any(hide, shown) and os.path.lexists(hide):
            opts += _mask(hide)
            masked.append(hide)
        elif empty_home is not None and _under_any(hide, [empty_home]):
            opts += _mask_folder(hide)  # in the empty home: made, so it cannot be made writable
            masked.append(hide)
    opts += ["--remount-ro", "/"]  # the root's own folders: nothing may be made there
    if jail.cwd is not None:
        opts += ["--chdir", os.path.abspath(jail.cwd)]
    return [*opts, "--", *argv]


def _mask(path: Path) -> list[str]:
    """Options that cover `path` with an empty folder, or with ``/dev/null`` when a file."""
    where = os.path.abspath(path)
    if os.path.isdir(path) and not os.path.islink(path):
        return ["--tmpfs", where, "--remount-ro", where]
    return ["--ro-bind", "/dev/null", where]


def _mask_folder(path: Path) -> list[str]:
    """Options that put an empty read-only folder at `path` (it need not exist outside)."""
    where = os.path.abspath(path)
    return ["--tmpfs", where, "--remount-ro", where]


def _is_system(path: str | os.PathLike[str]) -> bool:
    text = os.path.abspath(path)
    return text == "/" or any(
        text == d or text.startswith(d + "/") for d in (*_SYSTEM_DIRS, *_ROOT_LINKS)
    )


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether `path` is one of `roots` or lies below one."""
    target = os.path.abspath(path)
    return any(_at_or_below(target, os.path.abspath(root)) for root in roots)


def _under_any(path: Path, roots: Sequence[Path]) -> bool:
    """Whether `path` is one of `roots` or lies below one (or below a system folder)."""
    target = os.path.abspath(path)
    if _is_system(target):
        return True
    return any(_at_or_below(target, os.path.abspath(root)) for root in (*roots, *system_paths()))


def _at_or_below(target: str, base: str) -> bool:
    """Whether the absolute, normalized `target` is `base` or lies below it (`Path` parents,
    compared as text: a command line is built per program started, and holds dozens of these)."""
    return target == base or target.startswith(base if base.endswith("/") else base + "/")
