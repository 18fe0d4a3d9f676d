"""What the system says about a supervised program's processes, at a cost that follows the program.

`donegate.harness._process` looks at the program it supervises many times per run, and a worker
runs programs all day on a machine that may run thousands of processes, so every look here costs
in proportion to the program's own processes, not to the machine's:

* `descendants` walks the tree down from the program through
  ``/proc/PID/task/TID/children`` (one directory listing and one small read per process in the
  tree). Where that file is missing (not Linux, or a kernel built without
  ``CONFIG_PROC_CHILDREN``) it asks psutil, which reads every process's ``stat`` instead.
* `PidSpan` follows the kernel's pid counter (``ns_last_pid``) while the program runs. Linux
  hands out pids cyclically, so every process the program started has a pid in the span from
  the program's own pid to the counter; `carrying` reads the environment of those pids only,
  not every ``/proc/*/environ``. When the span cannot be trusted to hold every such pid (the
  counter may have gone once around the pid space, or cannot be read) the sweep reads every
  process, as it always did.
* `holding` (the rare last resort, when something still holds the output pipe after the kill)
  reads every process's descriptors: a pipe can be handed to a process that is not a descendant.

A subreaper (``PR_SET_CHILD_SUBREAPER``) would keep orphans in the walk, but it is an attribute
of the whole process: every orphan of every library in the worker would become the worker's to
reap, and reaping one whose pid a ``subprocess.Popen`` elsewhere waits for steals its exit status
(Popen then reports 0, a passing check). So the token sweep stays.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Collection, Sequence
from pathlib import Path

import psutil

__all__ = ["WALK", "PidSpan", "carrying", "descendants", "holding"]

WALK = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
"""Whether the kernel lists each thread's children (``CONFIG_PROC_CHILDREN``)."""

_LAST_PID = "/proc/sys/kernel/ns_last_pid"
_PID_RATE = 1_000_000  # pids per second no machine allocates faster than (one global lock each)
_PROBE_MAX = 64  # up to this many pids in the span are probed one by one, more: list /proc


def descendants(root: int) -> list[int]:
    """The pids of the live descendants of `root`, which must be alive or an unreaped zombie.

    A process whose parent exits while the walk reads it may be missed (it is reparented out
    of the tree): the caller looks again and keeps what it saw.
    """
    if not WALK:
        with contextlib.suppress(psutil.Error):
            return [p.pid for p in psutil.Process(root).children(recursive=True)]
        return []
    found: list[int] = []
    known = {root}
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:  # it is gone
            continue
        for tid in threads:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as listing:
                    kids = [int(k) for k in listing.read().split()]
            except (OSError, ValueError):  # the thread ended meanwhile
                continue
            for kid in kids:
                if kid not in known:  # a pid reused mid-walk cannot make it loop
                    known.add(kid)
                    found.append(kid)
                    frontier.append(kid)
    return found


def _read_int(path: str) -> int | None:
    try:
        with open(path, "rb") as file:
            return int(file.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _threads() -> int | None:
    """Tasks (threads) on the system now: ``/proc/loadavg``'s fourth field, "running/total"."""
    try:
        with open("/proc/loadavg", "rb") as file:
            return int(file.read().split()[3].partition(b"/")[2])
    except (OSError, ValueError, IndexError):
        return None


_PID_MAX = _read_int("/proc/sys/kernel/pid_max")


class PidSpan:
    """The pids the kernel allocated since one program was started: ``(first, last]``, cyclic.

    The counter moves past every pid it allocates and every pid in use it skips, and at most
    once around the pid space between two samples if, in that gap, the allocations (at most
    `_PID_RATE` per second) and the pids in use (at most three per task: its pid, process group
    and session, counted when the span began plus every pid allocated since) stay under the pid
    space. `note` checks that at every sample; once it fails, or the counter cannot be read,
    the span is unknown and `pids` answers None.
    """

    def __init__(self, first: int, since: float) -> None:
        """`first`: the program's pid; `since`: `time.monotonic()` before it was forked."""
        self.first = self.last = first
        self.at = since
        self.moved = 0
        threads = _threads()
        self.in_use = 3 * threads if threads is not None else 0
        self.exact = _PID_MAX is not None and threads is not None

    def note(self) -> None:
        """Sample the counter; call it often (the shorter the gaps, the longer the span holds)."""
        if not self.exact or _PID_MAX is None:
            return
        now = time.monotonic()
        last = _read_int(_LAST_PID)
        if last is None or not 0 < last < _PID_MAX:  # unreadable, or pid_max was raised
            self.exact = False
            return
        bound = 2 * (now - self.at) * _PID_RATE + self.in_use + self.moved
        self.moved += (last - self.last) % _PID_MAX
        self.exact = bound < _PID_MAX and self.moved < _PID_MAX - 1
        self.last, self.at = last, now

    def pids(self, seen: Collection[int] = ()) -> Sequence[int] | None:
        """Every pid that may name a process the program started (sampled now), or None.

        `seen`: descendants the walk found; one outside the span means the counter is not the
        one ``/proc`` numbers processes by (another pid namespace), so the span is unknown.
        """
        self.note()
        if not self.exact or _PID_MAX is None:
            return None
        size, first = _PID_MAX, self.first
        if any(not 0 < (pid - first) % size <= self.moved for pid in seen):
            self.exact = False
            return None
        if self.moved <= _PROBE_MAX:
            return [pid for i in range(1, self.moved + 1) if (pid := (first + i) % size)]
        return [pid for pid in _pids() if 0 < (pid - first) % size <= self.moved]


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def carrying(mark: str, among: Sequence[int] | None, until: float) -> list[psutil.Process]:
    """Live processes whose environment holds the entry `mark` (``NAME=value``).

    Linux reads ``/proc/PID/environ`` raw for the pids `among` (every process when None), and
    reads again, after a moment, those that showed none (a process in the middle of an exec,
    as a ``setsid`` becoming its program is); other systems ask psutil about every process.
    The sweep stops at `until`, so cleanup stays within its budget.
    """
    own = os.getpid()
    found = []
    if not Path("/proc/self/environ").exists():  # pragma: no cover - not Linux
        name, _, value = mark.partition("=")
        for p in psutil.process_iter():
            with contextlib.suppress(psutil.Error, OSError):
                if p.pid != own and p.environ().get(name) == value:
                    found.append(p)
        return found
    entry = mark.encode()
    pending = [pid for pid in (_pids() if among is None else among) if pid != own]
    for pause in _SETTLE_S:
        if pause:  # (a sleep of 0 would still give the GIL away)
            time.sleep(max(0.0, min(pause, until - time.monotonic())))
        blank = []
        for pid in pending:
            if time.monotonic() >= until:
                return found
            env = _read(f"/proc/{pid}/environ")
            if env == b"" and _may_exec(pid):
                blank.append(pid)
            elif env and entry in env.split(b"\0") and _leads(pid):
                with contextlib.suppress(psutil.Error):
                    found.append(psutil.Process(pid))
        if not blank:
            break
        pending = blank
    return found


_SETTLE_S = (0.0, 0.001, 0.003, 0.01)  # a process in the middle of an exec reads as empty


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:  # gone, or not ours to read
        return None


def _may_exec(pid: int) -> bool:
    """Whether `pid`, whose environment read empty, may be a process in the middle of an exec
    (the kernel shows no environment until the new program's is set up), not a zombie or a
    kernel thread (which show none for good)."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return False
    fields = stat.rpartition(b")")[2].split()
    try:
        return fields[0] != b"Z" and not int(fields[6]) & _PF_KTHREAD
    except (IndexError, ValueError):
        return False


_PF_KTHREAD = 0x00200000


def _leads(pid: int) -> bool:
    """Whether `pid` names a process, not one of its other threads (``/proc/TID`` exists too)."""
    with open(f"/proc/{pid}/status", "rb") as status:
        for line in status:
            if line.startswith(b"Tgid:"):
                return int(line.split()[1]) == pid
    return False


def holding(inode: int, until: float) -> list[psutil.Process]:
    """Live processes (Linux) holding the pipe with `inode` open, looked for until `until`."""
    if not Path("/proc/self/fd").is_dir():  # pragma: no cover - not Linux
        return []
    target = f"pipe:[{inode}]"
    own = os.getpid()
    found = []
    for pid in _pids():
        if time.monotonic() >= until:
            break
        if pid == own:
            continue
        with contextlib.suppress(OSError, psutil.Error):
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(_link(f"/proc/{pid}/fd/{fd}") == target for fd in fds):
                found.append(psutil.Process(pid))
    return found


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:  # closed while we looked
        return ""
