"""`_process.run`: bounded capture, stdin and the result pipe, who is found and killed; real
child processes."""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from donegate.harness import _process, _proctree
from donegate.harness.spec import TaskSpec

PY = sys.executable


def test_output_is_bounded_but_counted_and_digested_whole(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.buffer.write(b'HEAD' + b'x' * 10_000_000 + b'TAIL')"
    done = _process.run([PY, "-c", code], cwd=tmp_path, timeout=30, keep=1000)
    whole = b"HEAD" + b"x" * 10_000_000 + b"TAIL"
    assert (done.returncode, done.timed_out, done.killed) == (0, False, 0)
    assert done.output.total == len(whole)
    assert done.output.digest == hashlib.sha256(whole).hexdigest()
    assert (len(done.output.head), len(done.output.tail)) == (1000, 1000)
    assert done.output.head.startswith(b"HEAD")
    assert done.output.tail.endswith(b"TAIL")
    assert not done.output.complete


def test_stdin_larger_than_a_pipe_buffer_is_written_while_output_is_read(tmp_path: Path) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: both pipes fill up unless both are served
    done = _process.run(["cat"], cwd=tmp_path, timeout=30, stdin=data, keep=len(data))
    assert done.returncode == 0
    assert done.output.complete
    assert done.output.head == data


def test_the_result_pipe_is_separate_from_the_output(tmp_path: Path) -> None:
    code = "import os, sys; print('noise'); os.write(int(sys.argv[-1]), b'the result')"
    done = _process.run([PY, "-c", code], cwd=tmp_path, timeout=30, result_pipe=True)
    assert done.result == b"the result"
    assert done.output.head == b"noise\n"


def open_fds() -> int:
    return len(list(Path("/proc/self/fd").iterdir()))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_no_descriptor_is_left_open(tmp_path: Path) -> None:
    # Ten rounds: a leak leaves at least 10 descriptors behind, while threads of other tests in
    # the same process may open or close one or two meanwhile.
    before = open_fds()
    for _ in range(10):
        with pytest.raises(FileNotFoundError):
            _process.run(["no-such-program-donegate"], cwd=tmp_path, timeout=5, result_pipe=True)
        _process.run([PY, "-c", "pass"], cwd=tmp_path, timeout=5, stdin=b"x", result_pipe=True)
    _process.run(["sh", "-c", "setsid sleep 30 & exit 0"], cwd=tmp_path, timeout=5)
    assert open_fds() - before < 5


def test_the_signing_key_is_not_passed_to_programs_the_harness_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "k" * 32)
    monkeypatch.setenv("DONEGATE_SOME_OTHER", "kept")
    done = _process.run(
        ["sh", "-c", 'echo "key=${DONEGATE_SIGNING_KEY:-none} other=$DONEGATE_SOME_OTHER"'],
        cwd=tmp_path,
        timeout=10,
    )
    assert b"key=none other=kept" in done.output.head


def test_provider_keys_and_a_task_s_secrets_are_not_passed_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.setenv(name, "sk-provider")
    monkeypatch.setenv("SHOP_DB_PASSWORD", "hunter2")
    monkeypatch.setenv("SHOP_DB_HOST", "db.local")
    TaskSpec.model_validate(
        {"id": "t", "prompt": "p", "checks": [{"file_exists": "x"}], "secret": ["SHOP_DB_PASSWORD"]}
    )
    ends = "('_KEY', '_DB_PASSWORD', '_HOST')"
    script = f"import os; print(sorted(k for k in os.environ if k.endswith({ends})))"
    done = _process.run([PY, "-c", script], cwd=tmp_path, timeout=10)
    assert done.output.head.strip() == b"['SHOP_DB_HOST']"


# -- who is found, and how: the tree walk, the pid span, the sweep of the whole machine ---------

TREE = """
import os, sys, time
def level(n):
    if n == 0:
        return
    if os.fork() == 0:
        os.setsid()  # out of the program's process group: killing the group misses it
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # and off the output pipe
        os.dup2(1, 2)
        open(f"level{n}.pid", "w").write(str(os.getpid()))
        level(n - 1)
        time.sleep(60)
        os._exit(0)
level(3)
time.sleep(60)
"""


def dead(pid: int) -> bool:
    """Whether `pid` is dead (a zombie counts), allowing its reaper a moment."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False


def level_pids(root: Path) -> list[int]:
    return [int((root / f"level{n}.pid").read_text()) for n in (1, 2, 3)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sessions and /proc")
@pytest.mark.parametrize("walk", [True, False], ids=["proc-children", "psutil-fallback"])
def test_a_three_level_tree_is_found_by_the_walk_and_killed_at_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walk: bool
) -> None:
    if walk and not _proctree.WALK:
        pytest.skip("a kernel without CONFIG_PROC_CHILDREN")
    monkeypatch.setattr(_proctree, "WALK", walk)
    monkeypatch.setattr(_process, "carrying", lambda *_: [])  # no token sweep: the walk alone
    monkeypatch.setattr(_process, "holding", lambda *_: [])
    done = _process.run([PY, "-c", TREE], cwd=tmp_path, timeout=3)
    assert done.timed_out
    assert done.killed == 3
    assert all(dead(pid) for pid in level_pids(tmp_path))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sessions and /proc")
def test_ctrl_c_while_a_program_runs_kills_its_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pump = _process._Supervisor._pump

    def interrupted(self: _process._Supervisor, wait: float) -> None:
        pump(self, wait)
        if all((tmp_path / f"level{n}.pid").exists() for n in (1, 2, 3)):
            self._look()  # the tree as the loop sees it, then the user's Ctrl-C
            raise KeyboardInterrupt

    monkeypatch.setattr(_process._Supervisor, "_pump", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _process.run([PY, "-c", TREE], cwd=tmp_path, timeout=30)
    assert all(dead(pid) for pid in level_pids(tmp_path))


ESCAPE = "setsid sleep 30 >/dev/null 2>&1 & echo $! > daemon.pid"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sessions and /proc")
@pytest.mark.parametrize("counter", [True, False], ids=["pid-span", "whole-machine"])
def test_an_escapee_the_walk_never_saw_is_found_by_its_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counter: bool
) -> None:
    sweeps: list[Sequence[int] | None] = []

    def carrying(mark: str, among: Sequence[int] | None, until: float) -> list[psutil.Process]:
        sweeps.append(among)
        return _proctree.carrying(mark, among, until)

    monkeypatch.setattr(_process, "descendants", lambda _: [])  # it left before any look
    monkeypatch.setattr(_process, "carrying", carrying)
    monkeypatch.setattr(_proctree, "_PID_RATE", 1)  # the span holds however slow the machine
    if not counter:
        monkeypatch.setattr(_proctree, "_LAST_PID", str(tmp_path / "absent"))
    done = _process.run(["sh", "-c", ESCAPE], cwd=tmp_path, timeout=10)
    pid = int((tmp_path / "daemon.pid").read_text())
    assert (done.returncode, done.killed) == (0, 1)
    assert dead(pid)
    first = sweeps[0]
    if counter:
        assert first is not None and pid in first  # looked for among the new pids only
    else:
        assert first is None  # every process on the machine was read
