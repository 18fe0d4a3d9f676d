"""Stop a process tree while the gate copies what it wrote, and let it run again after.

A copy taken while the agent's processes run can catch a file half-written, or a daemon
re-planting bytecode between two reads. ``SIGSTOP`` on every process of the tree (walked again
until no new child appears, so a fork racing the walk is caught too) makes the copy one moment
of the agent's world. ``SIGCONT`` follows in every case, exceptions included.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable, Iterator

import psutil

__all__ = ["frozen"]

_ROUNDS = 8  # walks of the tree; each catches children forked while the last one stopped


@contextlib.contextmanager
def frozen(roots: Iterable[int]) -> Iterator[frozenset[int]]:
    """Stop `roots` and all their descendants for the ``with`` block; yields the stopped pids.

    The caller's own process and its ancestors are never stopped (a tree that holds the gate
    would otherwise freeze it). Processes already gone are skipped.
    """
    spared = {os.getpid()}
    with contextlib.suppress(psutil.Error):
        spared.update(p.pid for p in psutil.Process().parents())
    stopped: dict[int, psutil.Process] = {}
    try:
        wanted = [r for r in roots if r > 0 and r not in spared]
        for _ in range(_ROUNDS):
            fresh = _tree(wanted, spared, stopped)
            if not fresh:
                break
            for proc in fresh:
                with contextlib.suppress(psutil.Error):
                    proc.send_signal(signal.SIGSTOP)
                    stopped[proc.pid] = proc
        yield frozenset(stopped)
    finally:
        for proc in reversed(list(stopped.values())):
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGCONT)


def _tree(
    roots: list[int], spared: set[int], stopped: dict[int, psutil.Process]
) -> list[psutil.Process]:
    """The processes of the trees under `roots` not stopped yet (parents before children)."""
    found: list[psutil.Process] = []
    for pid in roots:
        try:
            top = psutil.Process(pid)
            members = [top, *top.children(recursive=True)]
        except psutil.Error:
            continue
        found += [p for p in members if p.pid not in stopped and p.pid not in spared]
    return found
