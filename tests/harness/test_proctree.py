"""`_proctree`: the /proc tree walk (against psutil's machine-wide answer), the pid span."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from donegate.harness import _proctree

PY = sys.executable

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# Three levels below the root, each in a session of its own, plus a child started from a second
# thread of the root (listed only in that thread's /proc/PID/task/TID/children).
TREE = """
import os, subprocess, sys, threading, time
out = sys.argv[1]
def level(n):
    if n == 0:
        return
    if os.fork() == 0:
        os.setsid()
        open(os.path.join(out, f"level{n}.pid"), "w").write(str(os.getpid()))
        level(n - 1)
        time.sleep(60)
        os._exit(0)
level(3)
def from_thread():
    child = subprocess.Popen(["sleep", "60"])
    open(os.path.join(out, "thread.pid"), "w").write(str(child.pid))
    time.sleep(60)
threading.Thread(target=from_thread, daemon=True).start()
time.sleep(60)
"""
NAMES = ["level3", "level2", "level1", "thread"]


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[tuple[int, list[int]]]:
    """A running tree: the root's pid and its four descendants' pids (killed afterwards)."""
    root = subprocess.Popen([PY, "-c", TREE, str(tmp_path)], start_new_session=True)
    files = [tmp_path / f"{name}.pid" for name in NAMES]
    deadline = time.monotonic() + 20
    while not all(f.is_file() and f.read_text() for f in files) and time.monotonic() < deadline:
        time.sleep(0.02)
    pids = [int(f.read_text()) for f in files]
    try:
        yield root.pid, pids
    finally:
        for pid in [root.pid, *pids]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        root.wait()


@pytest.mark.skipif(not _proctree.WALK, reason="a kernel without CONFIG_PROC_CHILDREN")
def test_the_walk_finds_every_level_and_a_thread_s_child(tree: tuple[int, list[int]]) -> None:
    root, pids = tree
    found = _proctree.descendants(root)
    assert sorted(found) == sorted(pids)
    assert sorted(found) == sorted(p.pid for p in psutil.Process(root).children(recursive=True))


def test_the_psutil_fallback_finds_the_same_tree(
    tree: tuple[int, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_proctree, "WALK", False)
    root, pids = tree
    assert sorted(_proctree.descendants(root)) == sorted(pids)


def test_a_process_without_children_and_a_gone_one_have_no_descendants(tmp_path: Path) -> None:
    done = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True)
    gone = int(done.stdout)
    assert _proctree.descendants(gone) == []
    with subprocess.Popen(["sleep", "30"]) as lone:
        try:
            assert _proctree.descendants(lone.pid) == []
        finally:
            lone.kill()


# -- the pid span ------------------------------------------------------------------------------


@pytest.fixture
def counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for ``ns_last_pid`` on a pid space of 1000 the test moves by hand."""
    path = tmp_path / "ns_last_pid"
    monkeypatch.setattr(_proctree, "_LAST_PID", str(path))
    monkeypatch.setattr(_proctree, "_PID_MAX", 1000)
    monkeypatch.setattr(_proctree, "_threads", lambda: 10)
    monkeypatch.setattr(_proctree, "_PROBE_MAX", 10_000)  # the span listed pid by pid
    monkeypatch.setattr(_proctree, "_PID_RATE", 1)  # a pid a second: the test's pace
    return path


def test_the_span_holds_the_pids_allocated_since_the_program_started(counter: Path) -> None:
    counter.write_text("990\n")
    span = _proctree.PidSpan(990, time.monotonic())
    assert span.pids() == []
    counter.write_text("995\n")
    assert span.pids() == [991, 992, 993, 994, 995]
    counter.write_text("3\n")  # the counter wrapped around the pid space
    assert span.pids() == [*range(991, 1000), 1, 2, 3]


def test_the_span_is_unknown_when_the_counter_may_have_gone_round(counter: Path) -> None:
    counter.write_text("500\n")
    long_ago = _proctree.PidSpan(500, time.monotonic() - 1000)  # 1000 s at a pid a second
    assert long_ago.pids() is None
    span = _proctree.PidSpan(500, time.monotonic())
    counter.write_text("499\n")  # 999 pids on: the whole space, less our own
    assert span.pids() is None
    counter.write_text("501\n")
    assert span.pids() is None  # once unknown, it stays unknown


@pytest.mark.parametrize("value", ["", "garbage\n", "1000\n", "4000\n"])
def test_the_span_is_unknown_when_the_counter_cannot_be_trusted(counter: Path, value: str) -> None:
    counter.write_text(value)  # unreadable, or beyond pid_max (which was raised meanwhile)
    assert _proctree.PidSpan(500, time.monotonic()).pids() is None


def test_the_span_is_unknown_without_the_counter(
    counter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_proctree, "_LAST_PID", str(counter.parent / "absent"))
    assert _proctree.PidSpan(500, time.monotonic()).pids() is None


def test_a_long_span_is_filtered_from_the_listing_of_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    mine = os.getpid()
    monkeypatch.setattr(_proctree, "_PROBE_MAX", 0)
    span = _proctree.PidSpan(mine - 1, time.monotonic())
    span.exact, span.moved = True, 1  # the counter moved just past this process
    monkeypatch.setattr(span, "note", lambda: None)
    assert span.pids() == [mine]


def test_the_real_counter_moves_with_a_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_proctree, "_PID_RATE", 1)  # however slowly this machine forks today
    counter = _proctree._read_int(_proctree._LAST_PID)
    if counter is None:
        pytest.skip("no ns_last_pid")
    span = _proctree.PidSpan(counter, time.monotonic())
    with subprocess.Popen(["true"]) as child:
        pass
    pids = span.pids()
    assert pids is not None and child.pid in pids


# -- the token sweep ---------------------------------------------------------------------------


@pytest.fixture
def marked() -> Iterator[subprocess.Popen[bytes]]:
    """A live process whose environment carries ``DONEGATE_TEST_MARK=m1``."""
    with subprocess.Popen(["sleep", "30"], env={**os.environ, "DONEGATE_TEST_MARK": "m1"}) as p:
        try:
            yield p
        finally:
            p.kill()


def test_the_sweep_finds_the_carrier_among_the_pids_given_and_only_there(
    marked: subprocess.Popen[bytes],
) -> None:
    until = time.monotonic() + 5
    assert [p.pid for p in _proctree.carrying("DONEGATE_TEST_MARK=m1", [marked.pid], until)] == [
        marked.pid
    ]
    assert _proctree.carrying("DONEGATE_TEST_MARK=m1", [os.getpid()], until) == []
    assert _proctree.carrying("DONEGATE_TEST_MARK=m2", [marked.pid], until) == []
    whole = _proctree.carrying("DONEGATE_TEST_MARK=m1", None, until)
    assert [p.pid for p in whole] == [marked.pid]


def test_a_carrier_caught_in_the_middle_of_an_exec_is_read_again(
    marked: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    real, reads = _proctree._read, []

    def read(path: str) -> bytes | None:
        reads.append(path)
        if path.endswith("/environ") and len(reads) == 1:
            return b""  # what the kernel shows between the old program and the new one's setup
        return real(path)

    monkeypatch.setattr(_proctree, "_read", read)
    found = _proctree.carrying("DONEGATE_TEST_MARK=m1", [marked.pid], time.monotonic() + 5)
    assert [p.pid for p in found] == [marked.pid]
    assert reads.count(f"/proc/{marked.pid}/environ") == 2


def test_zombies_and_kernel_threads_are_not_read_again(marked: subprocess.Popen[bytes]) -> None:
    assert _proctree._may_exec(marked.pid)
    with subprocess.Popen(["true"]) as zombie:
        deadline = time.monotonic() + 5
        while psutil.Process(zombie.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not _proctree._may_exec(zombie.pid)
    kthreadd = _proctree._read("/proc/2/stat")
    if kthreadd is not None and b"(kthreadd)" in kthreadd:
        assert not _proctree._may_exec(2)


def test_a_descendant_outside_the_span_makes_it_unknown(counter: Path) -> None:
    counter.write_text("510\n")
    span = _proctree.PidSpan(500, time.monotonic())
    assert span.pids(seen=[501, 510]) == list(range(501, 511))
    assert span.pids(seen=[501, 42]) is None  # the walk and the counter disagree
    assert span.pids() is None
