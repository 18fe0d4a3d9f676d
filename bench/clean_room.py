"""What the clean room adds to a claim, and what the sandbox adds to starting a program.

One run: ``python bench/clean_room.py``. A repository of 5,000 files and 100 MB (100 folders
of 50 files of 20 KiB, in the machine's temporary folder), a task with one ``run:`` check
(``python -c pass``: a check whose own cost is an interpreter start) and 20 protected files:

- **today's checks** (the like-for-like baseline): the check's program started in the workdir
  through ``donegate.harness._process.run``, as the code before the clean room did;
- **first claim**: `run_checks` with a fresh room (the whole workdir copied, by reflink where
  the filesystem allows), the start snapshot written over it, the check in a fresh sandbox;
- **repeat claim**: the same after 5 files changed (only they are copied again).

Then the sandbox's start-up: ``/bin/true`` started through bubblewrap with a check's jail,
against ``/bin/true`` started alone. p50 of each; ratios and added seconds from the same run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from donegate.harness import _process
from donegate.harness.checks import run_checks
from donegate.harness.protect import take_manifest
from donegate.harness.spec import TaskSpec
from donegate.sandbox import Jail, command, resolve

FOLDERS, FILES, SIZE = 100, 50, 20 * 1024
ROUNDS = 9


def build(root: Path) -> None:
    block = os.urandom(SIZE)
    for d in range(FOLDERS):
        folder = root / f"pkg{d:03d}"
        folder.mkdir(parents=True)
        for f in range(FILES):
            (folder / f"mod{f:02d}.py").write_bytes(block[f:] + block[:f])


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def timed(fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    iso = resolve()
    print(f"isolation: {iso.backend} {iso.version}".rstrip())
    with tempfile.TemporaryDirectory(prefix="donegate-bench-") as tmp:
        base = Path(tmp)
        work = base / "repo"
        build(work)
        total = sum(p.stat().st_size for p in work.rglob("*") if p.is_file())
        print(f"repository: {sum(1 for _ in work.rglob('*.py'))} files, {total / 1e6:.0f} MB")
        spec = TaskSpec(
            id="bench", prompt="p", checks=[{"run": [sys.executable, "-c", "pass"]}],
            protect=[f"pkg000/mod{f:02d}.py" for f in range(20)],
        )  # fmt: skip
        argv = [sys.executable, "-c", "pass"]
        today = [timed(lambda: _process.run(argv, cwd=work, timeout=60)) for _ in range(ROUNDS)]
        first, repeat = [], []
        for i in range(3):
            os.environ["DONEGATE_HOME"] = str(base / f"home{i}")
            start = take_manifest(work, spec.protect)
            first.append(timed(lambda s=start: run_checks(spec.checks, work, snapshot_of=s)))
        for _ in range(ROUNDS):
            for f in range(5):
                (work / f"pkg05{f}" / "mod00.py").write_bytes(os.urandom(SIZE))
            repeat.append(timed(lambda: run_checks(spec.checks, work, snapshot_of=start)))
        t, a, r = p50(today), p50(first), p50(repeat)
        print(f"today's check p50 {t * 1000:.0f} ms")
        print(f"first claim p50 {a * 1000:.0f} ms = {a / t:.1f}x, +{a - t:.2f} s")
        print(f"repeat claim p50 {r * 1000:.0f} ms = {r / t:.1f}x, +{r - t:.2f} s")
        jail = Jail(rooms=((work, work),), cwd=work, network=False)
        boxed = command(["/bin/true"], isolation=iso, jail=jail)
        alone = [timed(lambda: subprocess.run(["/bin/true"], check=True)) for _ in range(50)]
        inbox = [timed(lambda: subprocess.run(boxed, check=True)) for _ in range(50)]
        b, s = p50(alone), p50(inbox)
        print(
            f"start-up p50: /bin/true alone {b * 1000:.1f} ms, in the sandbox {s * 1000:.1f} ms"
            f" = {s / b:.1f}x, +{(s - b) * 1000:.1f} ms"
        )
        print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
