"""`_process.run`: bounded capture, stdin and the result pipe, real child processes."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from donegate.harness import _process

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
