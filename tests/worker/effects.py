"""A side-effecting tool for worker tests, with its own effect log outside the store.

`send` behaves like an idempotent external API (a payments or mail service): every call is
appended to ``<log>.calls`` (O_APPEND, one line per execution), and a delivery is appended to
``<log>`` only the first time its idempotency key is seen. The tests count both.
"""

from __future__ import annotations

import fcntl
import os
import time

from donegate.tools import tool

LOG_ENV = "DONEGATE_TEST_EFFECT_LOG"
DELAY_ENV = "DONEGATE_TEST_EFFECT_DELAY"


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@tool(side_effect=True)
def send(to: str, idempotency_key: str | None = None) -> str:
    """Send a message to `to`."""
    log = os.environ[LOG_ENV]
    key = idempotency_key or "-"
    _append(log + ".calls", f"{key}\n")
    delay = float(os.environ.get(DELAY_ENV) or 0)
    if delay:  # widens the window between the ledger's begin and record, for chaos tests
        time.sleep(delay)
    with open(log + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(log, encoding="utf-8") as f:
                seen = {line.split(" ", 1)[0] for line in f}
        except FileNotFoundError:
            seen = set()
        if key in seen:
            return f"already sent to {to}"
        _append(log, f"{key} {to}\n")
    return f"sent to {to}"
