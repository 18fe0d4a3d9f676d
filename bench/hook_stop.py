"""The agent-CLI hook's own time per stop: p50/p95 over 200 stops of a task with 3 checks.

One run: ``python bench/hook_stop.py``. Each stop is a real hook call on a Claude Code payload:
load the task, read and verify the signed state, run the checks (``file_exists``,
``file_contains``, ``run: true``), read the todo state, write the state. One check fails, so
the stops are 50 sessions of 3 blocks and an escalation (its report written) each. Two figures:

- in process: `run_hook` alone (what the hook itself does per stop);
- per process: ``python -m donegate hook claude`` as the CLI runs it (interpreter start and
  imports included: what the CLI waits for, to compare with its hook timeout, 60 s for Gemini
  CLI, 600 s for Claude Code and Codex CLI);
- per process, checks ``true`` (issue 29's figure: p50 <= 250 ms, p95 <= 500 ms): a task whose
  one check is ``run: true``, so every stop passes and is certified (a signed certificate each).

``--stops N`` changes the 200; ``--only true`` runs the last figure alone. ``--baseline SRC``
adds, to the last figure, the same stops with the source tree SRC first on the path (e.g.
``git archive BASE src | tar -x -C /tmp/base``), interleaved stop by stop, and prints the CPU time
(user + system of the hook process and its children) beside the wall time: before and after
from one run, the ratio from the same run.

Every per-process figure runs the hook cold (``DONEGATE_HOOK_RESIDENT=0``: one process does the
whole stop). ``--resident`` adds, to the last figure, the same stops answered by the resident
gate (`donegate.cli._resident`), interleaved: its first stop finds no server, answers cold and
starts one (printed apart, with the time until the server answers); every later stop's CPU is
the client's plus what the server and its forked child spent (``/proc/PID/stat``: the server's
user and system time and its reaped children's).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
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


def _server_cpu() -> float:
    """CPU seconds the resident gate and its reaped children spent so far (0 with none)."""
    from donegate.cli._resident import socket_path

    try:
        pid = int(Path(socket_path() + ".lock").read_text())
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (OSError, ValueError):
        return 0.0
    ticks = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _wait_for_server() -> float:
    """Seconds until the resident gate a cold stop started answers."""
    import socket

    from donegate.cli._resident import socket_path

    started = time.perf_counter()
    while time.perf_counter() - started < 300:
        with socket.socket(socket.AF_UNIX) as conn:
            try:
                conn.connect(socket_path())
                return time.perf_counter() - started
            except OSError:
                time.sleep(0.01)
    raise RuntimeError("the resident gate did not start in 300 s")


def per_process_true(
    work: Path, task: Path, baseline: str | None = None, *, resident: bool = False
) -> dict[str, tuple[list[float], list[float]]]:
    """Every stop of a task whose one check is ``run: true``: each passes (no output).

    Wall and CPU seconds per stop, for this tree and (with `baseline`) the tree at that path,
    and (with `resident`) this tree through the resident gate, one stop of each in turn."""
    task_true = task.with_name("task-true.yaml")
    task_true.write_text(yaml.safe_dump({"id": "bench-true", "prompt": "Say done.",
                                         "checks": [{"run": ["true"]}]}))  # fmt: skip
    trees: dict[str, dict[str, str]] = {"this tree": dict(os.environ)}
    if baseline is not None:
        path = os.pathsep.join(filter(None, [baseline, os.environ.get("PYTHONPATH")]))
        trees["baseline"] = {**os.environ, "PYTHONPATH": path}
    if resident:
        trees["resident"] = {**os.environ, "DONEGATE_HOOK_RESIDENT": "1"}
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in trees}
    for n in range(STOPS + (1 if resident else 0)):
        for name, env in trees.items():
            if name != "resident" and n == STOPS:
                continue
            payload = json.dumps({
                "session_id": f"true-{name}-{n}", "cwd": str(work), "hook_event_name": "Stop",
                "stop_hook_active": False, "last_assistant_message": "done",
                "background_tasks": [],
            })  # fmt: skip
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            server_before = _server_cpu() if name == "resident" else 0.0
            started = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "donegate", "hook", "claude", "--task", str(task_true)],
                input=payload, capture_output=True, text=True, check=False, env=env,
            )  # fmt: skip
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            assert proc.returncode == 0 and not proc.stdout, proc.stdout + proc.stderr
            assert "certificate" in proc.stderr, proc.stderr  # passed, and certified
            if name == "resident" and n == 0:
                ready = _wait_for_server()
                print(f"resident: first stop (cold, no server yet) wall {wall * 1000:.1f} ms, "
                      f"CPU {cpu * 1000:.1f} ms; the server it started answered "
                      f"{ready * 1000:.0f} ms later")  # fmt: skip
                continue
            if name == "resident":
                cpu += _server_cpu() - server_before
            times[name][0].append(wall)
            times[name][1].append(cpu)
    return times


def main() -> None:
    global STOPS  # noqa: PLW0603 (the one knob, set once from the command line)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=STOPS)
    parser.add_argument("--only", choices=["true"])
    parser.add_argument("--baseline", metavar="SRC")
    parser.add_argument("--resident", action="store_true",
                        help="add the same stops answered by the resident gate")  # fmt: skip
    ns = parser.parse_args()
    STOPS = ns.stops
    cases = [("in process", in_process), ("per process", per_process)]
    if ns.only:
        cases = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["DONEGATE_HOME"] = str(root / "donegate-home")
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # .pyc files kept, as when installed
        os.environ["DONEGATE_HOOK_RESIDENT"] = "0"  # cold unless --resident asks for the gate
        work, task = setup(root)
        print(f"load average {os.getloadavg()[0]:.1f}")
        for label, measure in cases:
            times = measure(work, task)
            p50, p95 = percentiles(times)
            print(f"{label:17} {STOPS} stops, 3 checks: p50 {p50 * 1000:7.1f} ms   "
                  f"p95 {p95 * 1000:7.1f} ms   max {max(times) * 1000:7.1f} ms")  # fmt: skip
        trees = per_process_true(work, task, ns.baseline, resident=ns.resident)
        for name, (walls, cpus) in trees.items():
            p50, p95 = percentiles(walls)
            c50, c95 = percentiles(cpus)
            print(f"true, per process ({name}) {STOPS} stops, 1 check: wall p50 "
                  f"{p50 * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms   CPU p50 {c50 * 1000:7.1f} "
                  f"ms  p95 {c95 * 1000:7.1f} ms")  # fmt: skip
        if "baseline" in trees:
            (walls, cpus), (bwalls, bcpus) = trees["this tree"], trees["baseline"]
            print(f"this tree / baseline: wall p50 "
                  f"{statistics.median(walls) / statistics.median(bwalls):.2f}x, CPU p50 "
                  f"{statistics.median(cpus) / statistics.median(bcpus):.2f}x "
                  f"(load average now {os.getloadavg()[0]:.1f})")  # fmt: skip
        if "resident" in trees:
            (walls, cpus), (rwalls, rcpus) = trees["this tree"], trees["resident"]
            print(f"resident / this tree cold: wall p50 "
                  f"{statistics.median(rwalls) / statistics.median(walls):.2f}x, CPU p50 "
                  f"{statistics.median(rcpus) / statistics.median(cpus):.2f}x "
                  f"(load average now {os.getloadavg()[0]:.1f})")  # fmt: skip
        _end_resident()


def _end_resident() -> None:
    """End the resident gate this run started (its data directory is about to go)."""
    import signal

    from donegate.cli._resident import socket_path

    with contextlib.suppress(OSError, ValueError):
        os.kill(int(Path(socket_path() + ".lock").read_text()), signal.SIGTERM)


if __name__ == "__main__":
    main()
