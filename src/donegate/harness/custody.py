"""Key custody: what a gate process does so that nothing it starts can read its secrets.

A gate process (``donegate run``, ``exec``, ``worker``, ``serve``, the hooks: every ``donegate``
program, through `donegate.cli.main`) calls `secure_process` first:
- it makes itself non-dumpable (``prctl(PR_SET_DUMPABLE, 0)`` on Linux, nothing elsewhere):
  ``/proc/PID/environ``, ``/proc/PID/mem`` and ptrace then need ``CAP_SYS_PTRACE``, so a
  same-user process (a check, the agent's ``run_command``, the agent CLI) cannot read the key
  from its memory or environment. A process running as root with every capability still can:
  run the gate as an ordinary user, or run the agent in the sandbox, which drops them;
- it reads ``$DONEGATE_SIGNING_KEY`` once and removes it from its own environment.

`child_env` is the one environment every child gets (`donegate.harness._process.run`, exec's
agent CLI): never the gate's own secrets, never a provider API key unless asked for (the agent
CLI needs its own), never a variable the task marks ``secret:``.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
from collections.abc import Iterable, Mapping

from donegate.config import SERVE_TOKEN_ENV, SIGNING_KEY_ENV
from donegate.harness.signing import take_key_from_environment

__all__ = [
    "GATE_SECRET_ENV",
    "child_env",
    "is_dumpable",
    "make_undumpable",
    "secure_process",
    "withhold",
]

GATE_SECRET_ENV = frozenset({SIGNING_KEY_ENV, SERVE_TOKEN_ENV})
"""The gate's own secrets: no child ever gets them."""
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:  # glibc's name first: ctypes.util (tempfile, shutil) costs every donegate program ~5 ms
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        pass
    from ctypes.util import find_library  # another libc (musl): ask for its name

    try:
        return ctypes.CDLL(find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def make_undumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)``; True when done (False off Linux or when it failed)."""
    libc = _libc()
    if libc is None:
        return False
    return int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0


def is_dumpable() -> bool | None:
    """This process's dumpable flag (None off Linux)."""
    libc = _libc()
    if libc is None:
        return None
    return int(libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)) != 0


def secure_process(*, undumpable: bool = True) -> None:
    """Make this gate process non-dumpable and take the signing key out of its environment."""
    if undumpable:
        make_undumpable()
    take_key_from_environment()


_WITHHELD: set[str] = set()
"""Names tasks read by this process mark ``secret:`` (`withhold`)."""
_LOCK = threading.Lock()


def withhold(names: Iterable[str]) -> None:
    """Never pass these variables to a child of this process (a task's ``secret:`` list)."""
    with _LOCK:
        _WITHHELD.update(names)


def child_env(
    base: Mapping[str, str] | None = None,
    *,
    provider_keys: bool = False,
    hide: Iterable[str] = (),
) -> dict[str, str]:
    """`base` (the process environment by default) minus the gate's secrets, the provider API
    keys (unless `provider_keys`), every name a task marked ``secret:`` (`withhold`) and the
    names in `hide`."""
    with _LOCK:
        drop = set(GATE_SECRET_ENV) | set(hide) | _WITHHELD
    if not provider_keys:
        # imported here: every donegate program imports this module before anything else
        from donegate.models.providers import PROVIDER_SECRET_ENV

        drop |= PROVIDER_SECRET_ENV
    return {k: v for k, v in (os.environ if base is None else base).items() if k not in drop}
