"""Side-effecting tools for worker tests, with their own effect logs outside the store.

Every execution is appended to ``<log>.calls`` (O_APPEND, one line per execution, its key
first) and every delivery to ``<log>``; the tests count both. Three kinds of external API:

- `send` honours its idempotency key (a payments or mail service that dedups by key): a
  delivery happens only the first time a key is seen; ``idempotent=True``.
- `send_blind` ignores it: every execution delivers; not idempotent, no reconcile. A call whose
  run died inside it must never run again (the task escalates, "outcome unknown").
- `send_checked` ignores it too, but its `reconcile` can look a key up in the delivery log.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

from donegate.tools import Tool, tool

LOG_ENV = "DONEGATE_TEST_EFFECT_LOG"
DELAY_ENV = "DONEGATE_TEST_EFFECT_DELAY"
INSIDE_SUFFIX = ".inside"
"""``<log>.inside/<pid>-<thread>`` exists while an execution waits out its delay: a chaos
harness reads the pids there to kill a process inside an effect, not near one."""


def inside_folder(log: Path) -> Path:
    """Where executions of tools logging to `log` mark themselves while they wait."""
    return log.with_name(log.name + INSIDE_SUFFIX)


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _executing(key: str) -> str:
    """Log the execution, then wait the configured delay (the window a chaos kill lands in)."""
    log = os.environ[LOG_ENV]
    _append(log + ".calls", f"{key}\n")
    delay = float(os.environ.get(DELAY_ENV) or 0)
    if delay:  # widens the window between the ledger's begin and record, for chaos tests
        inside = Path(log + INSIDE_SUFFIX)
        inside.mkdir(exist_ok=True)
        mark = inside / f"{os.getpid()}-{threading.get_ident()}"
        mark.touch()
        try:
            time.sleep(delay)
        finally:
            mark.unlink(missing_ok=True)
    return log


def _delivered(log: str) -> set[str]:
    try:
        with open(log, encoding="utf-8") as f:
            return {line.split(" ", 1)[0] for line in f}
    except FileNotFoundError:
        return set()


@tool(side_effect=True, idempotent=True)
def send(to: str, idempotency_key: str | None = None) -> str:
    """Send a message to `to`."""
    key = idempotency_key or "-"
    log = _executing(key)
    with open(log + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if key in _delivered(log):
            return f"already sent to {to}"
        _append(log, f"{key} {to}\n")
    return f"sent to {to}"


@tool(side_effect=True)
def send_blind(to: str, idempotency_key: str | None = None) -> str:
    """Send a message to `to` (the key is only logged: this API does not honour one)."""
    log = _executing(idempotency_key or "-")
    _append(log, f"{idempotency_key or '-'} {to}\n")
    return f"sent to {to}"


def reconcile_checked(key: str) -> str | None:
    """Did a delivery under `key` happen? The API's own record says."""
    return f"already sent under {key}" if key in _delivered(os.environ[LOG_ENV]) else None


def _send_checked(to: str, idempotency_key: str | None = None) -> str:
    """Send a message to `to` (no dedup by key, but deliveries can be looked up)."""
    log = _executing(idempotency_key or "-")
    _append(log, f"{idempotency_key or '-'} {to}\n")
    return f"sent to {to}"


send_checked = Tool.from_function(
    _send_checked, name="send_checked", side_effect=True, reconcile=reconcile_checked
)
