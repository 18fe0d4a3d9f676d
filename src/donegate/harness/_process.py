"""Child processes whose timeouts hold, whatever the children do.

Every program a check or ``run_command`` starts goes through `run`, because the agent decides
what those programs do: ``setsid sleep 40 &`` leaves the process group, a double-forked daemon
leaves the process tree, and either can hold the output pipe open so that reading to EOF waits
for it. `run` therefore

1. starts the program in its own session (``start_new_session``), with a random token in its
   environment that its descendants inherit;
2. reads the output itself (non-blocking, bounded: the head, the tail, the size and a SHA-256 of
   everything) while noting the program's descendants as they appear (`_proctree.descendants`:
   a walk down the tree whose cost follows the tree, not the machine);
3. stops at the deadline, or shortly after the program exits even if something still holds the
   output open; then kills the process group, every descendant it noted, every process carrying
   its token (looked for among the pids allocated since the program started, when that span is
   known: `_proctree.PidSpan`) and (Linux) every process still holding its output pipe, and
   closes the pipes.

So a call returns within ``timeout`` plus about half a second, and nothing it started is left
running, with one gap: a process that clears its environment, detaches before it is seen and
closes the output escapes (catching it would take a cgroup or a subreaper, see `_proctree`).
Killing is ``SIGKILL``: a check or command that timed out gets no chance to clean up.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import selectors
import signal
import subprocess
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from donegate.config import PROCESS_TOKEN_ENV
from donegate.harness._proctree import PidSpan, carrying, descendants, holding
from donegate.harness.custody import child_env

__all__ = ["RESULT_LIMIT", "Finished", "Output", "run"]

RESULT_LIMIT = 64 * 1024
"""Bytes read from a child's result pipe; anything beyond is dropped."""

_TOKEN = PROCESS_TOKEN_ENV
_GRACE_S = 0.4  # after the program exits, how long its leftovers may keep the output open
_TICK_S = 0.05  # the longest the loop sleeps between looks at the program
_REAP_S = 0.5  # the time cleanup may take after the loop stops
_EXITED = "exited"  # the selector's mark for the pidfd that turns readable when the program ends


@dataclass(frozen=True, kw_only=True, slots=True)
class Output:
    """Captured stdout and stderr: the first and last bytes, and the size and digest of all."""

    head: bytes
    """The first bytes (all of them when `complete`)."""
    tail: bytes
    """The last bytes."""
    total: int
    """Bytes the program wrote in all."""
    digest: str
    """SHA-256 hex of everything it wrote."""

    @property
    def complete(self) -> bool:
        """Whether `head` holds the whole output."""
        return len(self.head) == self.total


@dataclass(frozen=True, kw_only=True, slots=True)
class Finished:
    """How a program ended."""

    returncode: int | None
    """Its exit status (negative: the signal that ended it); None when it was killed."""
    timed_out: bool
    """True when it was still running at the deadline."""
    output: Output
    """What it wrote to stdout and stderr, bounded."""
    result: bytes = b""
    """What it wrote to its result pipe (``result_pipe=True``), at most `RESULT_LIMIT` bytes."""
    killed: int = 0
    """Processes it left running that were killed when it returned (itself not counted)."""


class _Capture:
    """A bounded sink for a byte stream: head, tail, size and running digest."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.hash = hashlib.sha256()

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self.hash.update(data)
        if len(self.head) < self.keep:
            self.head += data[: self.keep - len(self.head)]
        self.tail += data
        if len(self.tail) > self.keep:
            del self.tail[: len(self.tail) - self.keep]

    def output(self) -> Output:
        return Output(
            head=bytes(self.head),
            tail=bytes(self.tail),
            total=self.total,
            digest=self.hash.hexdigest(),
        )


def run(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    stdin: bytes | None = None,
    result_pipe: bool = False,
    keep: int = 64 * 1024,
    env: Mapping[str, str] | None = None,
    drop: Collection[str] = (),
) -> Finished:
    """Run `argv` in `cwd` for at most `timeout` seconds; stdout and stderr are one stream.

    `stdin` is written to the program, then closed (it reads ``/dev/null`` when None). With
    `result_pipe` a second pipe is opened and its write end's descriptor number is appended to
    `argv`, for a child that reports on a channel its own output cannot reach. `keep` bounds the
    head and the tail kept of the output. `env` adds to (or replaces) the inherited variables;
    the names in `drop` are not inherited (what an agent's program must not hold). `OSError`
    when the program cannot be started.
    """
    token = secrets.token_hex(16)
    since = time.monotonic()  # before the fork: the pid span's first gap starts here
    args = list(argv)
    result_fds: tuple[int, int] | None = os.pipe() if result_pipe else None
    if result_fds is not None:
        args.append(str(result_fds[1]))
    try:
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env={**_child_env(drop), **(env or {}), _TOKEN: token},
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=result_fds[1:] if result_fds is not None else (),
        )
    except BaseException:
        if result_fds is not None:
            os.close(result_fds[0])
        raise
    finally:
        if result_fds is not None:
            os.close(result_fds[1])  # the child holds its own copy
    supervisor = _Supervisor(proc, token, result_fds[0] if result_fds else None, keep, since)
    return supervisor.wait(timeout, stdin)


class _Supervisor:
    """One running program: its pipes, the descendants seen so far, and the cleanup."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        token: str,
        result_fd: int | None,
        keep: int,
        since: float,
    ):
        self.proc = proc
        self.token = token
        self.span = PidSpan(proc.pid, since)
        self.output = _Capture(keep)
        self.result = _Capture(RESULT_LIMIT)
        self.selector = selectors.DefaultSelector()
        self.pending = memoryview(b"")
        self.seen: dict[int, psutil.Process] = {}
        assert proc.stdout is not None
        self.out_fd = proc.stdout.fileno()
        self.out_inode = os.fstat(self.out_fd).st_ino
        self.result_fd = result_fd
        self.in_fd = -1
        self._watch(self.out_fd, selectors.EVENT_READ, self.output)
        if result_fd is not None:
            self._watch(result_fd, selectors.EVENT_READ, self.result)
        self.exit_fd = _pidfd(proc.pid)
        if self.exit_fd >= 0:  # wake at the exit, not at the next tick, once the output closed
            self.selector.register(self.exit_fd, selectors.EVENT_READ, _EXITED)

    def _watch(self, fd: int, events: int, sink: _Capture | None) -> None:
        os.set_blocking(fd, False)
        self.selector.register(fd, events, sink)

    def wait(self, timeout: float, stdin: bytes | None) -> Finished:
        started = time.monotonic()
        deadline = started + timeout
        if stdin is not None and self.proc.stdin is not None:
            self.pending = memoryview(stdin)
            self.in_fd = self.proc.stdin.fileno()
            self._watch(self.in_fd, selectors.EVENT_WRITE, None)
        exited_at: float | None = None
        next_look, interval = started, 0.01
        reaped = False
        try:
            while True:
                now = time.monotonic()
                if now >= next_look:
                    self._look()
                    interval = min(interval * 1.5, 1.0)  # forks cluster near the start
                    next_look = now + interval
                if self.proc.poll() is not None:
                    exited_at = exited_at if exited_at is not None else now
                    if not self._reading() or now - exited_at >= _GRACE_S:
                        break
                if now >= deadline:
                    break
                self._pump(min(_TICK_S, deadline - now, max(0.0, next_look - now)))
            timed_out = self.proc.poll() is None
            killed, reaped = self._reap(), True
        finally:
            if not reaped:  # Ctrl-C (or any error) while it runs: its tree dies with the wait
                with contextlib.suppress(Exception):
                    self._reap()
            self._close()
        return Finished(
            returncode=None if timed_out else self.proc.returncode,
            timed_out=timed_out,
            output=self.output.output(),
            result=bytes(self.result.head),
            killed=killed,
        )

    def _reading(self) -> bool:
        return any(isinstance(key.data, _Capture) for key in self.selector.get_map().values())

    def _pump(self, wait: float) -> None:
        """Move data between the pipes for at most `wait` seconds."""
        if not self.selector.get_map():
            time.sleep(wait)
            return
        for key, _ in self.selector.select(wait):
            fd = key.fd
            if key.data is _EXITED:  # readable from now on: the loop polls the program next
                self.selector.unregister(fd)
                continue
            if key.data is None:  # the program's stdin
                try:
                    self.pending = self.pending[os.write(fd, self.pending[:65536]) :]
                except BlockingIOError:
                    continue
                except OSError:  # it closed its stdin: it does not want the rest
                    self.pending = memoryview(b"")
                if not self.pending:
                    self._forget(fd)
                continue
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                key.data.add(data)
            else:
                self._forget(fd)

    def _forget(self, fd: int) -> None:
        self.selector.unregister(fd)
        if fd == self.in_fd and self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def _look(self) -> None:
        """Note the program's descendants now, before a setsid or a double fork hides them."""
        if self.proc.returncode is not None:  # reaped: its pid may name someone else's process
            return
        self.span.note()
        for pid in descendants(self.proc.pid):
            if pid not in self.seen:
                with contextlib.suppress(psutil.Error):
                    self.seen[pid] = psutil.Process(pid)

    def _reap(self) -> int:
        """Kill the program's group and whatever it left; the number of leftovers killed."""
        budget = time.monotonic() + _REAP_S
        self._look()
        if self.proc.poll() is None:  # once it is reaped, its group id may name someone else's
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        killed: set[int] = set()
        gone: set[int] = set()
        for _ in range(3):  # a leftover may fork while it is being killed
            victims = [p for p in self.seen.values() if p.pid not in killed | gone]
            victims += [p for p in self._carrying(budget) if p.pid not in killed | gone]
            victims = [p for p in victims if p.pid != self.proc.pid]
            if not victims:
                break
            for p in victims:
                with contextlib.suppress(psutil.Error):
                    if p.status() == psutil.STATUS_ZOMBIE:  # already dead (a sandbox's init
                        gone.add(p.pid)  # whose parent exited first): nothing left running
                        continue
                    p.kill()
                    killed.add(p.pid)
            if time.monotonic() >= budget:
                break
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=max(0.05, min(0.2, budget - time.monotonic())))
        self._drain(min(budget, time.monotonic() + 0.1))  # the dead close their ends at once
        if self._reading():  # still open: a holder that scrubbed its environment
            for p in holding(self.out_inode, budget):
                with contextlib.suppress(psutil.Error):
                    p.kill()
                    killed.add(p.pid)
            self._drain(max(budget, time.monotonic()) + 0.1)
        return len(killed)

    def _carrying(self, until: float) -> list[psutil.Process]:
        """The processes carrying the token, among the pids allocated since the program began."""
        return carrying(f"{_TOKEN}={self.token}", self.span.pids(self.seen.keys()), until)

    def _drain(self, until: float) -> None:
        """Read what the dead left in the pipes, until EOF or `until`."""
        while self._reading():
            wait = until - time.monotonic()
            if wait <= 0:
                return
            self._pump(min(wait, _TICK_S))

    def _close(self) -> None:
        self.selector.close()
        for fd in (self.result_fd, self.exit_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.proc.returncode is None:  # unkillable (D state): leave it to the OS, unwaited
            with contextlib.suppress(OSError):
                self.proc.kill()


def _pidfd(pid: int) -> int:
    """A descriptor that turns readable when `pid` (not yet reaped) exits, or -1 (Linux 5.3+)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, or an older kernel
        return -1


def _child_env(drop: Collection[str] = ()) -> dict[str, str]:
    """The harness's environment minus its secrets, provider keys and the names in `drop`
    (`donegate.harness.custody.child_env`)."""
    return child_env(hide=drop)
