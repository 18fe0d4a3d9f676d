"""The write lock SQLite store processes share: a lock file beside the database, taken with
``flock`` before ``BEGIN IMMEDIATE``.

SQLite serializes writers itself, but a process that finds the write lock taken sleeps in its
busy handler (1, 2, 5, 10 ... 100 ms) and does not hear when it is released: two worker
processes on one file spent a quarter of their time asleep there while the lock sat free. Here
a waiter asks again every 0.1-1 ms, so it takes the lock within a millisecond of its release,
and ``BEGIN IMMEDIATE`` then finds SQLite's lock free.

It only shortens the wait. SQLite's own lock still decides (a writer that does not take this
lock, or a lock file deleted or replaced, costs speed, never correctness), and a lock held past
`WAIT_S` (a stuck or hostile holder) is waited on no longer: the transaction goes on to SQLite's
busy timeout and its error, as without this lock, so nothing hangs on it; and this process stops
using the lock file (one such wait, not one per write).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy handler alone
    fcntl = None  # type: ignore[assignment]

__all__ = ["WAIT_S", "WriteLock"]

WAIT_S = 60.0
"""How long a writer waits for the lock file before it goes on to SQLite's own wait."""

log = logging.getLogger(__name__)
_held = threading.local()  # per thread: the lock files it holds (one thread, two stores)


class WriteLock:
    """The lock file of the SQLite database at `database` (``<database>.lock``)."""

    def __init__(self, database: str) -> None:
        self.path = database + ".lock"
        self._fd: int | None = None
        if fcntl is None:
            return
        # never follow a link, never block opening a FIFO, keep only a regular file: what sits
        # at the path may have been put there by an agent (then there is no lock, only speed lost)
        flags = os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        with contextlib.suppress(OSError):  # a lock file that cannot be made: no lock
            fd = os.open(self.path, flags, 0o644)
            if stat.S_ISREG(os.fstat(fd).st_mode):
                self._fd = fd
            else:
                os.close(fd)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The lock for the body (as far as `WAIT_S` lets: see the module's doc)."""
        fd = self._fd
        held: set[int] = _held.__dict__.setdefault("fds", set())
        if fd is None or fcntl is None or _already(held, fd):
            yield
            return
        if not _take(fd):  # held past WAIT_S: not waited on again by this process
            log.warning("%s stayed locked for %g s; writing without it", self.path, WAIT_S)
            self.close()
            yield
            return
        held.add(fd)
        try:
            yield
        finally:
            held.discard(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the lock file (its lock, if held, goes with it)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _already(held: set[int], fd: int) -> bool:
    """This thread holds the lock through another store on the same file: taking it again
    would wait on itself."""
    if not held:
        return False
    st = os.fstat(fd)
    return any(_same_file(h, st) for h in held)


def _same_file(fd: int, st: os.stat_result) -> bool:
    try:
        other = os.fstat(fd)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _take(fd: int) -> bool:
    """Take the lock, asking every 0.1-1 ms, for up to `WAIT_S`; False when it stayed held."""
    assert fcntl is not None
    deadline: float | None = None
    delay = 0.0001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        except OSError:  # a file system without flock: SQLite's lock alone
            return False
        now = time.monotonic()
        if deadline is None:
            deadline = now + WAIT_S
        elif now >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.001)
