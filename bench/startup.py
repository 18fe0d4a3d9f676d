"""Start-up cost: ``import donegate``, ``donegate --help`` and a command's ``--help``, per process.

One run: ``python bench/startup.py [--rounds N]``. Each round starts every case once, in turn
(interleaved, so a swing in the machine's load hits every case alike), and the figures are the
medians over the rounds of wall time and of CPU time (user + system of the child):

- ``python -c pass``: the interpreter's own start-up, the baseline `import donegate` is
  measured against (the issue's bound is <= 60 ms beyond it);
- ``python -c "import donegate"``: the package root;
- ``python -m donegate --help``: every command listed, none of their modules imported;
- ``python -m donegate worker --help`` and ``run --help``: one command's module, no more.

``--modules`` prints, for each case, which heavy third-party packages the process imported.
``--baseline SRC`` adds every donegate case again with the source tree SRC first on the path
(e.g. ``git archive BASE src | tar -x -C /tmp/base``), interleaved in the same rounds, and prints
this tree's median against it: before and after from one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

CASES: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "import donegate": ["-c", "import donegate"],
    "donegate --help": ["-m", "donegate", "--help"],
    "donegate worker --help": ["-m", "donegate", "worker", "--help"],
    "donegate run --help": ["-m", "donegate", "run", "--help"],
}

HEAVY = ("pydantic", "jsonschema", "sqlalchemy", "httpx", "httpx2", "openai", "anthropic",
         "google.genai", "asyncio", "yaml", "rich", "cryptography", "celery")  # fmt: skip


def once(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one child process running `args`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], stdout=subprocess.DEVNULL, check=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def heavy_modules(args: list[str]) -> list[str]:
    """The heavy packages a process running `args` has imported when it exits."""
    probe = (
        "import atexit, sys\n"
        f"atexit.register(lambda: print(sorted(m for m in {HEAVY!r} if m in sys.modules),"
        " file=sys.stderr))\n"
        "sys.argv = {argv!r}\n"
    )
    if args[0] == "-m":
        code = probe.format(argv=["donegate", *args[2:]]) + "import runpy\n"
        code += "runpy.run_module('donegate', run_name='__main__', alter_sys=True)\n"
    else:
        code = probe.format(argv=["-c"]) + args[1] + "\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)  # fmt: skip
    return [line for line in proc.stderr.splitlines() if line.startswith("[")][-1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--modules", action="store_true")
    parser.add_argument("--baseline", metavar="SRC")
    ns = parser.parse_args()
    os.environ.setdefault("COLUMNS", "80")
    # as installed (pip compiles .pyc files): a source tree run with PYTHONDONTWRITEBYTECODE
    # would compile every module in every process
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    runs: dict[str, tuple[list[str], dict[str, str] | None]] = {
        name: (args, None) for name, args in CASES.items()
    }
    if ns.baseline:
        env = {**os.environ, "PYTHONPATH": ns.baseline}
        runs |= {
            f"{name} (baseline)": (args, env) for name, args in CASES.items() if "donegate" in name
        }
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    for args, env in runs.values():  # warm the file cache and the .pyc files
        once(args, env)
    for _ in range(ns.rounds):
        for name, (args, env) in runs.items():
            wall, cpu = once(args, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    base_wall = statistics.median(walls["python -c pass"])
    base_cpu = statistics.median(cpus["python -c pass"])
    print(f"{ns.rounds} interleaved rounds, load average {os.getloadavg()[0]:.1f}")
    for name in runs:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        p95 = statistics.quantiles(walls[name], n=20, method="inclusive")[18]
        print(f"{name:35} wall p50 {wall * 1000:7.1f} ms (+{(wall - base_wall) * 1000:6.1f})"
              f"  p95 {p95 * 1000:7.1f} ms   CPU p50 {cpu * 1000:7.1f} ms"
              f" (+{(cpu - base_cpu) * 1000:6.1f})")  # fmt: skip
    for name in CASES:
        if f"{name} (baseline)" in runs:
            now, then = statistics.median(cpus[name]), statistics.median(cpus[f"{name} (baseline)"])
            was = statistics.median(walls[f"{name} (baseline)"])
            print(f"{name:35} CPU {now / then:5.2f}x the baseline,"
                  f" wall {statistics.median(walls[name]) / was:5.2f}x")  # fmt: skip
    if ns.modules:
        for name, args in CASES.items():
            print(f"{name:24} imports {' '.join(heavy_modules(args))}")


if __name__ == "__main__":
    main()
