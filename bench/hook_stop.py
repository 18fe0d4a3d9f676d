"""The agent-CLI hook's own time per stop: p50/p95 over 200 stops of a task with 3 checks.

One run: ``python bench/hook_stop.py``. Each stop is a real hook call on a Claude Code payload:
load the task, read and verify the signed state, run the checks (``file_exists``,
``file_contains``, ``run: true``), read the todo state, write the state. One check fails, so
the stops are 50 sessions of 3 blocks and an escalation (its report written) each. Two figures:

- in process: `run_hook` alone (what the hook itself does per stop);
- per process: ``python -m donegate hook claude`` as the CLI runs it (interpreter start and
  imports included: what the CLI waits for, to compare with its hook timeout, 60 s for Gemini
  CLI, 600 s for Claude Code and Codex CLI).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from donegate.harness.agents import AGENTS, HookOptions, run_hook

STOPS = 200
PER_SESSION = 4  # max_continuations 3: three blocks, then the escalation


def setup(root: Path) -> tuple[Path, Path]:
    work = root / "work"
    work.mkdir()
    (work / "a.txt").write_text("a")
    (work / "b.txt").write_text("status: ok\n")
    task = root / "task.yaml"
    task.write_text(
        yaml.safe_dump(
            {
                "id": "bench",
                "prompt": "Write a.txt, b.txt and c.txt.",
                "max_continuations": PER_SESSION - 1,
                "checks": [
                    {"file_exists": "c.txt"},  # fails: every stop is a block
                    {"file_contains": {"path": "b.txt", "text": "ok"}},
                    {"run": ["true"]},
                ],
            }
        )
    )
    return work, task


def percentiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49], cuts[94]


def stop(work: Path, label: str, n: int) -> tuple[str, bool]:
    """The payload of stop `n`, and whether the gate should block it."""
    session, nth = divmod(n, PER_SESSION)
    payload = {"session_id": f"{label}-{session}", "cwd": str(work), "hook_event_name": "Stop",
               "stop_hook_active": nth > 0, "last_assistant_message": f"stop {nth}",
               "background_tasks": []}  # fmt: skip
    return json.dumps(payload), nth < PER_SESSION - 1


def in_process(work: Path, task: Path) -> list[float]:
    agent = AGENTS["claude"]
    times = []
    for n in range(STOPS):
        stdin, blocks = stop(work, "in", n)
        started = time.perf_counter()
        outcome = run_hook(agent, stdin, HookOptions(task=str(task)))
        times.append(time.perf_counter() - started)
        assert outcome.action == ("block" if blocks else "escalate"), outcome
    return times


def per_process(work: Path, task: Path) -> list[float]:
    times = []
    for n in range(STOPS):
        stdin, blocks = stop(work, "proc", n)
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "donegate", "hook", "claude", "--task", str(task)],
            input=stdin, capture_output=True, text=True, check=False,
        )  # fmt: skip
        times.append(time.perf_counter() - started)
        assert bool(proc.stdout) == blocks, proc.stderr
    return times


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["DONEGATE_HOME"] = str(root / "donegate-home")
        work, task = setup(root)
        for label, measure in (("in process", in_process), ("per process", per_process)):
            times = measure(work, task)
            p50, p95 = percentiles(times)
            print(f"{label:12} {STOPS} stops, 3 checks: p50 {p50 * 1000:7.1f} ms   "
                  f"p95 {p95 * 1000:7.1f} ms   max {max(times) * 1000:7.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
