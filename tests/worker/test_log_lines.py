"""The worker logs one line per task event at INFO: claimed, resumed from step N, each gate
judgement with its check results, and the outcome with its duration."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from donegate.cli._store import resolve_model
from donegate.models.base import Model
from donegate.store.sql import SqlStore
from donegate.worker import ModelResolver, Worker, submit
from tests.worker.effects import LOG_ENV
from tests.worker.helpers import Killed, StepModel, task, text_turn, tool_turn

ROOT = Path(__file__).parents[2]
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO donegate\.worker: "


def fixed(model: Model) -> ModelResolver:
    return lambda name, what: model


def lines(caplog: pytest.LogCaptureFixture, task_id: str) -> list[str]:
    prefix = f"task {task_id}: "
    return [
        r.getMessage().removeprefix(prefix)
        for r in caplog.records
        if r.name == "donegate.worker" and r.levelno == logging.INFO
        and r.getMessage().startswith(prefix)
    ]  # fmt: skip


def test_two_tasks_log_their_events_one_line_each(
    store: SqlStore, effect_log: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="donegate.worker")
    submit(task("good", effect_log.parent), store)
    submit(task("stuck", effect_log.parent, escalate=True), store)
    stats = Worker(store, model_resolver=resolve_model).run(until_idle=True)
    assert stats.finished == {"done": 1, "escalated": 1}
    good, stuck = lines(caplog, "good"), lines(caplog, "stuck")
    assert good[:2] == ["claimed (attempt 1)", "claim 1 at step 2: checks 0/0 passed; gate: accept"]
    assert re.fullmatch(r"done in \d+\.\d s: every gate passed \(closure: model; .*\)", good[2])
    assert len(good) == 3
    assert stuck[:2] == [
        "claimed (attempt 1)",
        "claim 1 at step 2: checks 0/1 passed, failed: file_exists: never-there.txt; gate: stop",
    ]
    assert re.fullmatch(r"escalated in \d+\.\d s: not done after 0 continuation\(s\): .+", stuck[2])
    assert len(stuck) == 3


def test_a_resumed_task_says_from_which_step(
    store: SqlStore, effect_log: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="donegate.worker")
    submit(task("t", effect_log.parent), store)
    first = StepModel(
        [tool_turn("send", {"to": "ann"}, "c1"), tool_turn("send", {"to": "cy"}, "c2"), Killed()]
    )
    with pytest.raises(Killed):
        Worker(store, lease_s=0.1, model_resolver=fixed(first.model)).run_one()
    time.sleep(0.15)
    caplog.clear()
    resumed = StepModel([text_turn("Sent both.")], first=3)
    outcome = Worker(store, model_resolver=fixed(resumed.model)).run_one()
    assert outcome is not None and outcome.status == "done"
    logged = lines(caplog, "t")
    assert logged[:3] == [
        "claimed (attempt 2)",
        "resumed from step 3 (2 journaled turns replayed)",
        "claim 1 at step 3: checks 0/0 passed; gate: accept",
    ]
    assert logged[3].startswith("done in ")


@pytest.mark.slow
def test_the_worker_command_prints_them_by_default_without_alembic(
    tmp_path: Path, effect_log: Path
) -> None:
    env = {**os.environ, LOG_ENV: str(effect_log), "DONEGATE_HOME": str(tmp_path / "home")}
    db = str(tmp_path / "q.db")
    for spec in (task("one", tmp_path), task("two", tmp_path, escalate=True)):
        path = tmp_path / f"{spec['id']}.yaml"
        path.write_text(__import__("json").dumps(spec))
        cmd = [sys.executable, "-m", "donegate", "submit", str(path), "--db", db]
        subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, timeout=60)
    done = subprocess.run(
        [sys.executable, "-m", "donegate", "worker", "--db", db, "--until-idle"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    err = done.stderr.splitlines()
    assert not [line for line in err if "alembic" in line.lower()]
    logged = [re.sub(STAMP, "", line) for line in err if re.match(STAMP, line)]
    assert len(logged) == 6 == len(err) - 2  # the banner, six events, the summary
    assert [re.sub(r" in \d+\.\d s:.*", "", line) for line in logged] == [
        "task one: claimed (attempt 1)",
        "task one: claim 1 at step 2: checks 0/0 passed; gate: accept",
        "task one: done",
        "task two: claimed (attempt 1)",
        "task two: claim 1 at step 2: checks 0/1 passed, failed: file_exists: never-there.txt; "
        "gate: stop",
        "task two: escalated",
    ]
    assert err[-1].endswith(": 2 claimed; 1 done, 1 escalated")
