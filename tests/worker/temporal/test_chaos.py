"""Chaos on Temporal: 3 workers SIGKILLed mid-task, the dev server restarted once mid-run.

The issue's full size: 200 tasks, 3 worker processes, >= 30 SIGKILLs (paced by progress, each
on a worker holding a lease, inside a side effect where one is), the dev server SIGKILLed and
started again once at about 40% of the batch. Every task ends done or escalated (none lost),
every message is delivered exactly once and no effect executes more often than the ledger
re-issued it (from the tool's own log), and every certificate verifies. Bounds are generous
(the storm takes minutes on a loaded 2-core machine; nothing asserts on time).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from donegate.store.sql import open_store
from tests.worker.temporal.chaos import check, storm
from tests.worker.temporal.server import DevServer

TASKS = 200
MIN_KILLS = 30


@pytest.mark.slow
def test_workers_killed_and_server_restarted(
    tmp_path: Path, effect_log: Path, own_server: DevServer
) -> None:
    store = open_store(tmp_path / "chaos.db")
    try:
        result = storm(
            store, own_server, tmp_path, effect_log,
            total=TASKS, min_kills=MIN_KILLS, max_kills=MIN_KILLS + 10, timeout_s=1500,
        )  # fmt: skip
        figures = check(store, effect_log, result, TASKS)
        assert result.chaos.kills >= MIN_KILLS and figures["lost_runs"] >= 3, figures
        assert figures["replayed"] >= 1, figures  # a resume answered a model call from the journal
        print(f"\ntemporal chaos: {figures}")
    finally:
        store.close()
