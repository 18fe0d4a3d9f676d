"""Many agents in flight on one worker process: every model turn takes 2 s, as real ones do.

One ``donegate worker`` process on an embedded SQLite store runs N realistic tasks at once
(``--concurrency N``, N in 100, 1,000, 2,000 by default): the task of
``bench/worker_throughput.py`` (the four built-in tools, one ``run: true`` check, a signed
certificate), whose scripted model (``bench/data/realistic.yaml``) answers each of its 3 turns
after ``--latency`` seconds (a ``latency:`` turn, answered by the script player: no fault, no
retry). With every task in flight at once the ideal is 3 x 2 s of wall time for the lot, so
the ideal throughput is N / 6 s.

Printed per N, one run each (timed from the first task seen running to the last one ended):

* ``wall/ideal``: the ideal wall time over the measured one (= throughput / ideal throughput);
* throughput, tasks/s, against the ideal;
* CPU per task: the worker process's user + system time (the programs it ran included) over
  the same span, per task;
* memory per task: the worker's peak resident set less that of the same worker holding one
  task, per task in flight.

    .venv/bin/python bench/inflight.py                       # 100, 1000, 2000
    .venv/bin/python bench/inflight.py --tasks 1000 --worker-arg=--mode=async

Every task must end done with its certificate written, or the bench exits non-zero.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.worker_throughput import (  # noqa: E402 - after the path set-up above
    REALISTIC,
    _check_done,
    _env,
    _finished,
    _spec,
    _worker,
)

from donegate.store import open_store  # noqa: E402
from donegate.worker import submit  # noqa: E402

TURNS = 3


def slow_script(work: Path, latency: float) -> Path:
    """The realistic script with every turn answered after `latency` seconds."""
    data = yaml.safe_load(REALISTIC.read_text())
    for turn in data["turns"]:
        turn["latency"] = latency
    path = work / "realistic-slow.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


class Run:
    """One worker run's figures."""

    def __init__(self, n: int, span_s: float, cpu_s: float, peak_rss: int) -> None:
        self.n, self.span_s, self.cpu_s, self.peak_rss = n, span_s, cpu_s, peak_rss

    @property
    def per_s(self) -> float:
        return self.n / self.span_s

    @property
    def cpu_ms(self) -> float:
        return self.cpu_s / self.n * 1000


def run(n: int, work: Path, script: Path, worker_args: list[str], timeout: float) -> Run:
    """Submit `n` slow tasks, run one worker holding them all, measure it."""
    tag = f"n{n}-{time.monotonic_ns()}"
    db = str(work / f"{tag}.db")
    home = work / f"home-{tag}"
    store = open_store(db)
    for i in range(n):
        spec = _spec("realistic", f"{tag}-{i}", work / tag)
        spec["model"] = f"script:{script}"
        submit(spec, store)
    args = ["--concurrency", str(n), "--poll", "0.05", "--until-idle", *worker_args]
    proc = subprocess.Popen(
        _worker(db, *args), env=_env(work, DONEGATE_HOME=str(home)), stderr=subprocess.DEVNULL
    )
    watched = psutil.Process(proc.pid)
    done = _finished(store)
    started: float | None = None
    cpu0 = peak = 0
    cpu = 0.0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            count = done()
            try:
                times = watched.cpu_times()
                cpu = times.user + times.system + times.children_user + times.children_system
                peak = max(peak, watched.memory_info().rss)
            except psutil.Error:
                pass
            if started is None and count:
                started, cpu0 = time.monotonic(), cpu
            if count >= n:
                ended = time.monotonic()
                break
            if proc.poll() is not None:
                raise SystemExit(f"the worker exited {proc.returncode} at {count} of {n}")
            time.sleep(0.05)
        else:
            raise SystemExit(f"timed out at {done()} of {n} ended")
    finally:
        if proc.poll() is None:
            proc.wait(120)
    _check_done(store, "realistic", n, home)
    store.close()
    assert started is not None
    return Run(n, ended - started, cpu - cpu0, peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[100, 1000, 2000])
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model turn")
    parser.add_argument(
        "--worker-arg", action="append", default=[], help="passed to `donegate worker`"
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    ideal_s = TURNS * args.latency
    with tempfile.TemporaryDirectory(prefix="donegate-inflight-") as tmp:
        work = Path(tmp)
        script = slow_script(work, args.latency)
        one = run(1, work, script, args.worker_arg, args.timeout)
        print(
            f"worker {' '.join(args.worker_arg) or '(default)'}: {TURNS} turns x "
            f"{args.latency:g} s; one task in flight: peak RSS {one.peak_rss / 2**20:.0f} MiB"
        )
        cpu_at: dict[int, float] = {}
        for n in args.tasks:
            r = run(n, work, script, args.worker_arg, args.timeout)
            ideal_rate = n / ideal_s
            per_task_kib = max(0, r.peak_rss - one.peak_rss) / n / 1024
            cpu_at[n] = r.cpu_ms
            print(
                f"{n:>5} in flight: wall/ideal {r.per_s / ideal_rate:.2f}x, "
                f"{r.per_s:.0f} tasks/s (ideal {ideal_rate:.0f}/s), "
                f"{r.cpu_ms:.1f} ms CPU/task, {per_task_kib:.0f} KiB/task in flight",
                flush=True,
            )
        if 100 in cpu_at:
            for n, ms in cpu_at.items():
                if n != 100:
                    print(f"CPU per task at {n} / at 100: {ms / cpu_at[100]:.2f}x")


if __name__ == "__main__":
    main()
