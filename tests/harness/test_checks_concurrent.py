"""``run:`` checks run at once (bounded), results in declared order, timeouts and tree kill
holding for each; a check of another kind waits for the ``run:`` checks declared before it.

Overlap is shown by the intervals the checks themselves write, never by wall time.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from donegate.harness.checks import run_checks
from donegate.harness.spec import CheckSpec, TaskSpec

STAMP = (
    "import sys, time; name, pause = sys.argv[1], float(sys.argv[2]); "
    "start = time.time(); time.sleep(pause); "
    "open(name + '.span', 'w').write(f'{start} {time.time()}')"
)


def checks(*entries: dict[str, object]) -> list[CheckSpec]:
    return list(TaskSpec.model_validate({"id": "t", "prompt": "p", "checks": entries}).checks)


def stamp(name: str, pause: float) -> dict[str, object]:
    return {"run": [sys.executable, "-c", STAMP, name, str(pause)], "name": name}


def spans(root: Path, names: list[str]) -> list[tuple[float, float]]:
    out = []
    for name in names:
        start, end = (root / f"{name}.span").read_text().split()
        out.append((float(start), float(end)))
    return out


def test_run_checks_overlap_and_keep_their_declared_order(
    tmp_path: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    # the first sleeps longest, so it ends last: declared order is not finishing order
    specs = checks(stamp("a", 1.5), stamp("b", 0.2), stamp("c", 0.2))
    results = run_checks(specs, tmp_path)
    assert [r.name for r in results] == ["a", "b", "c"]
    assert all(r.passed for r in results), [r.detail for r in results]
    (_, a1), (b0, b1), (c0, c1) = spans(room_of(tmp_path), ["a", "b", "c"])
    assert b0 < a1 and c0 < a1  # b and c started while a still ran
    assert b1 < a1 and c1 < a1  # and ended before it


def test_no_more_than_the_bound_run_at_once(
    tmp_path: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    names = [f"n{i}" for i in range(5)]
    results = run_checks(checks(*(stamp(n, 0.4) for n in names)), tmp_path, concurrency=2)
    assert [r.name for r in results] == names and all(r.passed for r in results)
    intervals = spans(room_of(tmp_path), names)
    at_once = max(sum(s <= t < e for s, e in intervals) for t, _ in intervals)
    assert at_once == 2


def test_one_at_a_time_when_the_bound_is_one(
    tmp_path: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    names = ["x", "y", "z"]
    run_checks(checks(*(stamp(n, 0.1) for n in names)), tmp_path, concurrency=1)
    intervals = spans(room_of(tmp_path), names)
    assert all(intervals[i][1] <= intervals[i + 1][0] for i in range(2))


def test_another_kind_of_check_waits_for_the_run_checks_before_it(
    tmp_path: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    specs = checks(stamp("slow", 0.6), {"file_exists": "slow.span"}, stamp("after", 0.0))
    results = run_checks(specs, tmp_path)
    assert [r.passed for r in results] == [True, True, True]
    (_, slow_end), (after_start, _) = spans(room_of(tmp_path), ["slow", "after"])
    assert after_start >= slow_end  # the file check between them was a barrier


SPAWN = (
    "import subprocess, sys, time; "
    "child = subprocess.Popen(['sleep', '60']); "
    "open(sys.argv[1], 'w').write(str(child.pid)); time.sleep(60)"
)


@pytest.mark.skipif(sys.platform == "win32", reason="process groups")
def test_timeouts_and_tree_kill_hold_for_checks_running_at_once(
    tmp_path: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    specs = checks(
        *(
            {"run": [sys.executable, "-c", SPAWN, f"pid{i}"], "name": f"hang{i}", "timeout": 2}
            for i in range(3)
        )
    )
    results = run_checks(specs, tmp_path)
    assert [r.name for r in results] == ["hang0", "hang1", "hang2"]
    assert all(not r.passed and "timed out after 2s" in r.detail for r in results)
    for i in range(3):
        pid = int((room_of(tmp_path) / f"pid{i}").read_text())
        assert not alive(pid), f"the grandchild {pid} of hang{i} outlived its check"


def alive(pid: int) -> bool:
    for _ in range(50):  # the reaper (init) may take a moment
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        if Path(f"/proc/{pid}/stat").is_file():
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                return False
        time.sleep(0.1)
    return True


def test_the_hooks_deadline_runner_overlaps_run_checks_and_keeps_order(
    tmp_path: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    from donegate.harness.agents.deadline import run_checks_by

    specs = checks(stamp("a", 1.0), stamp("b", 0.2), {"file_exists": "b.span"})
    results = run_checks_by(specs, tmp_path, deadline=time.monotonic() + 30)
    assert [(r.name, r.passed) for r in results] == [
        ("a", True),
        ("b", True),
        ("file_exists: b.span", True),
    ]
    (_, a1), (b0, b1) = spans(room_of(tmp_path), ["a", "b"])
    assert b0 < a1 and b1 < a1  # b ran while a still ran


def test_at_the_hooks_deadline_every_running_check_is_named_and_the_rest_not_run(
    tmp_path: Path,
) -> None:
    from donegate.harness.agents.deadline import run_checks_by

    sleep = [sys.executable, "-c", "import time; time.sleep(30)"]
    specs = checks(
        {"run": sleep, "name": "one"}, {"run": sleep, "name": "two"}, {"file_exists": "x"}
    )
    results = run_checks_by(specs, tmp_path, deadline=time.monotonic() + 1.5, label_s=1.5)
    assert [r.passed for r in results] == [False, False, False]
    assert (
        results[0].detail
        == results[1].detail
        == ("still running at the hook's deadline (1.5s); stopped")
    )
    assert results[2].detail == "not run: the hook's deadline (1.5s) was reached"
