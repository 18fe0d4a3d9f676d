"""``donegate run`` while a check runs, and its paths in a narrow pipe."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from donegate.harness.scaffold import scaffold

# Each test runs `donegate run` as a process (a pipe, a terminal): the output a user sees.
pytestmark = pytest.mark.slow

STUCK = "turns:\n" + "".join(f"  - text: 'Done, really ({i}).'\n" for i in range(3))


def env(tmp_path: Path, **more: str) -> dict[str, str]:
    return {**os.environ, "DONEGATE_HOME": str(tmp_path / "home"), **more}


def piped_through_cat(task: Path, tmp_path: Path) -> tuple[int, str, str]:
    """``COLUMNS=60 donegate run TASK | cat``, with stderr piped too."""
    run = subprocess.Popen(
        [sys.executable, "-m", "donegate", "run", str(task)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(tmp_path, COLUMNS="60"),
    )  # fmt: skip
    assert run.stdout is not None and run.stderr is not None
    cat = subprocess.run(["cat"], stdin=run.stdout, capture_output=True, text=True, timeout=120)
    err = run.stderr.read().decode()
    return run.wait(timeout=120), cat.stdout, err


def printed_paths(text: str) -> list[str]:
    """Every absolute path printed as a word of its own."""
    return re.findall(r"(?:^|(?<=\s))(/[^\s]+)", text, re.M)


def test_every_path_printed_through_a_narrow_pipe_exists_as_printed(tmp_path: Path) -> None:
    deep = tmp_path / ("a-folder-with-a-long-name-" * 3)
    [done_task, *_] = scaffold(deep / "greeter")
    [stuck_task, *_] = scaffold(deep / "stuck")
    (deep / "stuck/agent.yaml").write_text(STUCK)
    code, out, err = piped_through_cat(done_task, tmp_path)
    assert code == 0, err
    code2, out2, err2 = piped_through_cat(stuck_task, tmp_path)
    assert code2 == 3, err2
    paths = printed_paths(out + err + out2 + err2)
    assert any(p.endswith(".certificate.json") for p in paths)
    assert any(p.endswith(".md") and "/escalations/" in p for p in paths)
    assert all(len(p) > 60 for p in paths)  # each longer than the width, yet whole
    missing = [p for p in paths if not Path(p).exists()]
    assert not missing and len(paths) >= 2, (missing, out + out2)


def test_a_plain_line_names_each_check_as_it_starts_in_a_pipe(tmp_path: Path) -> None:
    [task, *_] = scaffold(tmp_path / "t")
    done = subprocess.run(
        [sys.executable, "-m", "donegate", "run", str(task)],
        capture_output=True, text=True, env=env(tmp_path), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line == "  running check unit tests..."]
    gates = [i for i, line in enumerate(lines) if line.startswith("gate: ")]
    assert len(starts) == len(gates) == 2  # a line before each judgement, and only then
    assert all(s + 1 == g for s, g in zip(starts, gates, strict=True))
    assert "\x1b" not in done.stderr  # no live display (nor colour) in a pipe


def test_a_live_line_with_elapsed_time_on_a_terminal(tmp_path: Path) -> None:
    [task, *_] = scaffold(tmp_path / "t")
    text = task.read_text()
    slow = '  - run: ["python3", "-c", "import time; time.sleep(1.5)"]\n'
    task.write_text(re.sub(r"  - run: .*\n", slow, text))
    main, child = pty.openpty()
    run = subprocess.Popen(
        [sys.executable, "-m", "donegate", "run", str(task)],
        stdin=child, stdout=subprocess.PIPE, stderr=child, env=env(tmp_path, COLUMNS="100"),
    )  # fmt: skip
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert run.wait(timeout=120) == 0
    shown = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", b"".join(chunks)).decode()
    assert "running check unit tests 0:00:01" in shown  # the name and the time it has taken
    assert "running check unit tests..." not in shown  # the live line, not the plain one
    assert shown.rstrip().endswith("gate: accepted (checks 1/1 passed)")  # then the judgement
