"""The test suite's cost per folder and tier: wall and CPU time of one serial pytest per folder.

One run: ``python bench/suite_tiers.py [--tier fast|all] [--baseline SRC] [FOLDER ...]``. Each
folder's tests run in one ``pytest -p no:xdist`` process (never in parallel: the machine is
shared), for the fast tier with ``./scripts/check``'s marker expression. The figures are the
wall time and the CPU time (user + system of pytest and every process it started): on a loaded
machine the wall clock measures the other sessions, the CPU time the tests, and on 2 idle cores
``-n 2`` takes about the CPU time over two plus each worker's collection. ``--baseline SRC``
runs the same folders again from the tree SRC (``git archive BASE | tar -x -C SRC``), folder by
folder in turn with this tree, and prints this tree's CPU time against it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST_TIER = "not slow and not e2e"  # scripts/check's FAST_TIER
FOLDERS = ("tests/cli", "tests/contracts", "tests/harness", "tests/integrations", "tests/loop",
           "tests/models", "tests/review", "tests/sandbox", "tests/server", "tests/store",
           "tests/telemetry", "tests/testing", "tests/worker", "tests/agents_e2e")  # fmt: skip


def children_cpu() -> float:
    """User + system seconds of every waited-for child so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(tree: Path, folder: str, tier: str) -> tuple[float, float, int]:
    """(wall s, CPU s, pytest's exit code) of one folder's tests in one serial pytest."""
    marks = ["-m", FAST_TIER] if tier == "fast" else []
    profile = "dev" if tier == "fast" else "ci"  # the profile scripts/check picks per tier
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "HYPOTHESIS_PROFILE": profile}
    argv = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-qq",
            "-o", "addopts=--strict-markers -p no:langsmith_plugin", *marks, folder]  # fmt: skip
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=tree, env=env, stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, children_cpu() - cpu, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", default=list(FOLDERS))
    parser.add_argument("--tier", choices=("fast", "all"), default="fast")
    parser.add_argument("--baseline", type=Path, help="a tree to run the same folders from")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"tier {args.tier}, load average {load:.1f} on {os.cpu_count()} cores")
    total = base_total = 0.0
    for folder in args.folders:
        wall, cpu, code = measure(ROOT, folder, args.tier)
        total += cpu
        line = f"{folder:24} wall {wall:7.1f} s  CPU {cpu:7.1f} s  exit {code}"
        if args.baseline is not None:
            _, base_cpu, base_code = measure(args.baseline, folder, args.tier)
            base_total += base_cpu
            ratio = cpu / base_cpu if base_cpu else float("nan")
            line += f"  baseline CPU {base_cpu:7.1f} s (exit {base_code})  {ratio:.2f}x"
        print(line, flush=True)
    estimate = total / 2 / 60
    print(f"CPU {total:.0f} s: about {estimate:.1f} min of pytest wall on 2 idle cores (-n 2)")
    if args.baseline is not None and base_total:
        print(f"baseline CPU {base_total:.0f} s: {total / base_total:.2f}x")


if __name__ == "__main__":
    main()
