"""Which backend this machine can give: bwrap is probed once per process, for real.

A ``bwrap`` on ``PATH`` proves nothing on its own: containers and hardened kernels refuse user
or PID namespaces, and bwrap then fails at start. So the probe starts ``bwrap --unshare-all ...
true`` and keeps the answer (per bwrap path, so a changed ``PATH`` probes again).

A probe that worked is also kept in the data directory (``probes/bwrap.json``), keyed by the
binary's identity (path, device, inode, size, times), the boot and the user: every agent-CLI
stop is a new process, and two ``bwrap`` starts were a tenth of its time. Only a success is
kept, so the file can never choose the weaker ``process`` backend; a kernel that stopped
allowing namespaces since fails the jail at start, and a check that cannot start fails closed.
It is written when the first jail starts (`keep_probe`), not at the probe: a command refused
for bad input (the probe runs as its options are read) writes nothing.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from donegate.config import ISOLATION_ENV, data_path, isolation_mode
from donegate.errors import UserError

__all__ = ["MODES", "Backend", "Isolation", "bwrap_path", "keep_probe", "resolve"]

Backend = Literal["sandbox", "process"]
"""``sandbox``: bubblewrap namespaces; ``process``: plain child processes."""
Mode = Literal["auto", "sandbox", "process"]
MODES: tuple[str, ...] = get_args(Mode)
"""What ``--isolation`` and ``DONEGATE_ISOLATION`` accept."""

_PROBE_TIMEOUT_S = 10.0
_TRIAL: tuple[str, ...] = ("--unshare-all", "--die-with-parent", "--new-session")
_TRIAL += ("--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true")


@dataclass(frozen=True, kw_only=True, slots=True)
class Isolation:
    """The backend that runs a task's programs, as certificates record it."""

    backend: Backend
    """``sandbox`` (bubblewrap) or ``process`` (child processes, no namespaces)."""
    version: str
    """The sandbox program and its version (``bubblewrap 0.8.0``); empty for ``process``."""
    bwrap: str = ""
    """The bwrap executable's path under ``sandbox`` (not recorded: it says nothing proven)."""

    def as_data(self) -> dict[str, str]:
        """What a certificate records: ``{"backend": ..., "version": ...}``."""
        return {"backend": self.backend, "version": self.version}


PROCESS = Isolation(backend="process", version="")


def bwrap_path() -> str | None:
    """The ``bwrap`` found on ``PATH``, or None."""
    return shutil.which("bwrap")


@functools.cache
def _probe(path: str) -> tuple[str, str]:
    """``(version, "")`` when `path` really starts a namespace, else ``("", why)``.

    A success kept in the data directory for this very binary, boot and user is taken as is.
    """
    key = _identity(path)
    kept = _kept(key) if key else None
    if kept:
        return kept, ""
    version, why = _start(path)
    if version and key:
        _unkept[path] = (key, version)
    return version, why


_unkept: dict[str, tuple[str, str]] = {}
"""Probes of this process that worked and are not in the data directory yet, by bwrap path."""


def keep_probe(path: str) -> None:
    """Keep this process's probe of `path` in the data directory (once), a jail being started."""
    found = _unkept.pop(path, None)
    if found is not None:
        _keep(*found)


def _start(path: str) -> tuple[str, str]:
    """Probe `path` for real: its version, then a namespace it starts."""
    try:
        version = subprocess.run(
            [path, "--version"], capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False
        )
        trial = subprocess.run(
            [path, *_TRIAL],
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return "", f"{path} cannot be started ({exc})"
    if trial.returncode != 0:
        said = trial.stderr.decode("utf-8", "replace").strip().splitlines()
        return "", f"{path} cannot start a namespace here ({said[-1] if said else 'no reason'})"
    text = version.stdout.decode("utf-8", "replace").strip()
    return (text.splitlines()[0] if text else "bubblewrap"), ""


def _identity(path: str) -> str:
    """What a kept probe of `path` is valid for (empty: nothing to key it by, probe again)."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            boot = handle.read().strip()
    except OSError:
        return ""
    return json.dumps([real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                       st.st_mode, st.st_uid, boot, os.geteuid()])  # fmt: skip


def _kept_file() -> Path:
    return data_path("probes") / "bwrap.json"


def _kept(key: str) -> str:
    """The version a kept probe found for `key`, or empty (none, another binary, unreadable)."""
    with contextlib.suppress(OSError, ValueError):
        with open(_kept_file(), "rb") as handle:
            found = json.loads(handle.read(4096))
        if isinstance(found, dict) and found.get("key") == key:
            version = found.get("version")
            if isinstance(version, str) and 0 < len(version) <= 200 and version.isprintable():
                return version
    return ""


def _keep(key: str, version: str) -> None:
    """Keep a probe that worked, atomically; a data directory that cannot be written is left."""
    target = _kept_file()
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        part = target.with_name(f".{target.name}.{os.getpid()}")
        with open(part, "w", encoding="utf-8", opener=_private) as handle:
            handle.write(json.dumps({"key": key, "version": version}))
        os.replace(part, target)


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def resolve(mode: str | None = None) -> Isolation:
    """The backend for `mode` (``auto|sandbox|process``; None reads ``DONEGATE_ISOLATION``).

    ``auto`` takes the sandbox when bwrap works here and falls back to ``process``; ``sandbox``
    when it does not work raises `UserError` with one line saying why.
    """
    chosen = isolation_mode() if mode is None else mode
    if chosen not in MODES:
        where = "--isolation" if mode is not None else ISOLATION_ENV
        raise UserError(f"{where}: unknown isolation {chosen!r} (use one of {', '.join(MODES)})")
    if chosen == "process":
        return PROCESS
    path = bwrap_path()
    version, why = _probe(path) if path else ("", "bwrap (Debian package bubblewrap) not found")
    if version and path:
        return Isolation(backend="sandbox", version=version, bwrap=path)
    if chosen == "sandbox":
        raise UserError(f"isolation sandbox is not available: {why}")
    return PROCESS
