"""SIGKILL chaos on the async worker: 1,000 tasks, at least 50 kills, 0 lost, 0 duplicates.

Three ``donegate worker --mode async`` processes (each holding up to ``--concurrency`` tasks)
share one SQLite store; the harness of ``tests/worker/test_chaos.py`` (`tests.worker.chaos`)
SIGKILLs a busy one at random and starts another, paced so the kills spread over the batch. The
tasks are the chaos test's: send one message (a side effect logged outside the store), then
claim completion; every tenth escalates on a check that fails. Checked afterwards, as in
``tests/worker/test_chaos_async.py``: every task ended done or escalated (0 lost), no message
delivered twice (0 duplicate side effects), every done task's message delivered once.

    .venv/bin/python bench/chaos_inflight.py                 # 1,000 tasks, >= 50 kills
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.worker.effects import LOG_ENV  # noqa: E402
from tests.worker.test_chaos_async import BusyChaos as Chaos  # noqa: E402
from tests.worker.test_chaos_async import (  # noqa: E402
    async_workers,
    check_invariants,
    submit_batch,
    worker_env,
)

from donegate.store import open_store  # noqa: E402 - after the path set-up above


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--kills", type=int, default=50, help="at least this many")
    parser.add_argument("--concurrency", type=int, default=200, help="per worker process")
    parser.add_argument("--timeout", type=float, default=1200.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="donegate-chaos-") as tmp:
        work = Path(tmp)
        effect_log = work / "effects.log"
        os.environ[LOG_ENV] = str(effect_log)
        db = work / "chaos.db"
        store = open_store(db)
        submit_batch(store, work, args.tasks)
        chaos = Chaos(
            async_workers(db, args.concurrency), worker_env(work, effect_log), work / "logs"
        )
        took = chaos.run(
            store,
            total=args.tasks,
            max_kills=args.kills + 10,
            timeout_s=args.timeout,
            min_kills=args.kills,
        )
        figures = check_invariants(store, effect_log, args.tasks)
        store.close()
    print(
        f"async chaos: {args.tasks} tasks in {took:.0f} s, {chaos.kills} kills, 0 lost, "
        f"0 duplicate side effects; {figures['done']} done, {figures['lost_runs']} runs lost "
        f"to kills, {figures['replayed']} model calls replayed from the journal"
    )
    if chaos.kills < args.kills:
        raise SystemExit(f"only {chaos.kills} kills (wanted >= {args.kills})")


if __name__ == "__main__":
    main()
