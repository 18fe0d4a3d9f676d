"""The chaos harness: worker processes SIGKILLed at random points while a batch of tasks runs.

Most kills pick a process that holds a lease right now (its pid is part of its worker id), so
they land mid-task: between a model call and the journal write, between an effect's begin and
its record, or inside the effect itself. A few hit whichever process the dice choose, busy,
idle or still starting.

The storm is paced by progress, not by the clock: `min_kills` kills are due by the time 60% of
the batch has ended (one more each time another slice ends), and while one is owed the harness
looks often and kills a busy worker as soon as there is one. A faster worker then cannot finish
the batch before the storm has happened.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from donegate.records.status import TASK_TERMINAL
from donegate.store.sql import SqlStore
from tests.worker.effects import DELAY_ENV, LOG_ENV

ROOT = Path(__file__).resolve().parents[2]


def worker_env(tmp_path: Path, effect_log: Path, **extra: str) -> dict[str, str]:
    """The environment worker processes run in (the effects tool importable, logs in tmp)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {
        **os.environ,
        "PYTHONPATH": path,
        LOG_ENV: str(effect_log),
        DELAY_ENV: "0.01",
        "DONEGATE_HOME": str(tmp_path / "home"),
        **extra,
    }


@dataclass
class Chaos:
    """Runs `command` as `size` processes, killing and replacing them until the batch ends."""

    command: Sequence[str]
    env: dict[str, str]
    logs: Path
    size: int = 3
    seed: int = 2002
    kills: int = 0
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    worked: set[int] = field(default_factory=set)
    """Pids seen holding a lease: started, so an idle kill of one lands somewhere real."""
    inside: Path | None = None
    """Set to an effect log's ``.inside`` folder: owed kills wait for a process inside an
    effect (between the ledger's begin and its record) and kill it there."""

    def spawn(self) -> subprocess.Popen[bytes]:
        n = len(list(self.logs.glob("worker-*.log")))
        out = open(self.logs / f"worker-{n}.log", "wb")  # noqa: SIM115 - lives with the process
        return subprocess.Popen(
            list(self.command), env=self.env, stdout=out, stderr=out, start_new_session=True
        )

    def run(
        self,
        store: SqlStore,
        *,
        total: int,
        max_kills: int,
        timeout_s: float,
        min_kills: int = 8,
    ) -> float:
        """Kill until every task ended (or `timeout_s`); returns the seconds it took."""
        rng = random.Random(self.seed)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.procs = [self.spawn() for _ in range(self.size)]
        started = time.monotonic()
        try:
            while time.monotonic() - started < timeout_s:
                counts = store.counts()
                ended = sum(n for s, n in counts.items() if s in TASK_TERMINAL)
                if ended >= total:
                    break
                owed = self.kills < _due(min_kills, ended, total)
                time.sleep(rng.uniform(0.005, 0.02) if owed else rng.uniform(0.03, 0.25))
                if self.kills >= max_kills:
                    continue
                victim = self._victim(store, rng, owed=owed)
                if victim is not None:
                    self._kill(victim)
                    self.procs[victim] = self.spawn()
                    self.kills += 1
            return time.monotonic() - started
        finally:
            self.stop()

    def _victim(self, store: SqlStore, rng: random.Random, *, owed: bool) -> int | None:
        """Which process to kill now, if any; a busy one whenever a kill is `owed` (one mid-run,
        past its first journal write, when there is one)."""
        alive = [i for i, p in enumerate(self.procs) if p.poll() is None]
        if not alive:
            return None
        running = store.list_tasks(status="running", limit=50)
        groups = {_group(_pid(t.lease_owner)) for t in running if t.lease_owner}
        busy = [i for i in alive if self.procs[i].pid in groups]
        self.worked.update(self.procs[i].pid for i in busy)
        # Kills go to first attempts: killing a resumed run again and again (the first tasks
        # of a batch, while the storm is young) spends it on one task until its workers are
        # "lost", and no resume finishes to show its replay.
        resumed = {_group(_pid(t.lease_owner)) for t in running if t.lease_owner and t.attempts > 1}
        # mid-run where one is: a run with a journaled turn (its resume replays it)
        journaled = {
            _group(_pid(t.lease_owner))
            for t in running
            if t.lease_owner and store.turns(t.id, t.generation)
        }
        mid = [i for i in busy if self.procs[i].pid in journaled - resumed]
        if owed and self.inside is not None:
            effecting = {_group(int(m.name.split("-")[0])) for m in _marks(self.inside)}
            inside = [i for i in alive if self.procs[i].pid in effecting - resumed]
            return rng.choice(inside) if inside else None
        if owed:
            return rng.choice(mid or busy) if busy else None
        # Unowed kills hit runs past their first journal write: a worker's first task spends
        # about a second importing on a loaded machine, and kills aimed at any busy worker all
        # landed there, before any turn, so none tested a resume. Owed kills (above) still hit
        # runs wherever they are.
        if mid and rng.random() < 0.6:
            return rng.choice(mid)
        # An idle kill only of a process that has started working: one still starting Python
        # (seconds on a loaded machine) holds nothing, and killing it proves nothing.
        idle = [i for i in alive if self.procs[i].pid in self.worked]
        return rng.choice(idle) if idle and rng.random() < 0.05 else None

    def _kill(self, i: int) -> None:
        proc = self.procs[i]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def stop(self) -> None:
        """SIGTERM every process (they finish what they hold), SIGKILL stragglers."""
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _due(min_kills: int, ended: int, total: int) -> int:
    """Kills owed once `ended` of `total` tasks ended: `min_kills` by 60% of the batch."""
    return min(min_kills, math.ceil(min_kills * ended / (0.6 * total)))


def _marks(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except FileNotFoundError:
        return []


def _group(pid: int | None) -> int | None:
    """The process group of `pid` (a pool child's group is its worker's), None if gone."""
    if pid is None:
        return None
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _pid(owner: str) -> int | None:
    """The pid in a ``host:pid:random`` worker id."""
    parts = owner.split(":")
    return int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else None


def python_worker(*args: str) -> list[str]:
    """``python -m donegate worker ARGS``."""
    return [sys.executable, "-m", "donegate", "worker", *args]


HOLD_DELIVERY = (
    "import sys, donegate.worker.outbox as outbox\n"
    "outbox.Courier.once = lambda self: False  # the seam: this courier delivers nothing\n"
    "from donegate.cli import main\n"
    "main(['worker', *sys.argv[1:]])\n"
)


def held_worker(*args: str) -> list[str]:
    """A worker whose courier delivers nothing (a window in which a test kills it after an
    outcome is recorded and before its notice is sent): `python_worker` with the outbox's
    `Courier.once` replaced in that process, so product code carries no test switch."""
    return [sys.executable, "-c", HOLD_DELIVERY, *args]
