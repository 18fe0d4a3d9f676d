"""A resumed run judges protected files against the manifest its task's first run took.

The agent runs as the same user as its worker: it can kill the worker, and a run resumed on
another one used to take the protected-file manifest again, from the workdir the agent had
already changed. The first manifest is now kept in the store (`baselines`).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from donegate.store import LeaseLost
from donegate.store.sql import SqlStore
from donegate.worker import Worker, submit
from tests.worker.helpers import Killed, StepModel, task, text_turn, tool_turn


def protected_task(store: SqlStore, work: Path) -> None:
    (work / "tests").mkdir()
    (work / "tests" / "test_it.py").write_text("assert compute() == 42\n")
    submit(task("t", work, protect=["tests/**"]), store)


def test_the_first_runs_manifest_is_kept_and_wins(store: SqlStore, effect_log: Path) -> None:
    submit(task("t", effect_log.parent), store)
    lease = store.claim("w1", lease_s=30)
    assert lease is not None
    first = {"patterns": ["tests/**"], "pinned": [], "files": {"tests/a.py": "sha256:aa"}}
    later = {"patterns": ["tests/**"], "pinned": [], "files": {"tests/a.py": "sha256:bb"}}
    assert store.baseline(lease, first) == first
    assert store.baseline(lease, later) == first  # the first one stored stays


def test_a_stale_lease_cannot_store_a_baseline(store: SqlStore, effect_log: Path) -> None:
    submit(task("t", effect_log.parent), store)
    lease = store.claim("w1", lease_s=0.05)
    assert lease is not None
    time.sleep(0.1)
    assert store.claim("w2", lease_s=30) is not None  # the task moved on
    with pytest.raises(LeaseLost):
        store.baseline(lease, {"patterns": [], "pinned": [], "files": {}})


def test_a_protected_file_changed_before_a_resume_still_fails_the_task(
    store: SqlStore, effect_log: Path
) -> None:
    work = effect_log.parent
    protected_task(store, work)
    first = StepModel([tool_turn("send", {"to": "ann"}, "c1"), Killed()])
    with pytest.raises(Killed):
        Worker(store, lease_s=0.1, model_resolver=lambda n, w: first.model).run_one()
    # the agent, before it died, rewrote the test it was told not to touch
    (work / "tests" / "test_it.py").write_text("assert True\n")
    time.sleep(0.15)
    resumed = StepModel([text_turn("Sent; the tests pass.")] * 10, first=2)  # claims it, again
    outcome = Worker(store, model_resolver=lambda n, w: resumed.model).run_one()
    assert outcome is not None and outcome.status != "done", outcome
    assert "tests/test_it.py" in (outcome.reason or ""), outcome.reason


def test_an_untouched_workdir_resumes_to_done(store: SqlStore, effect_log: Path) -> None:
    work = effect_log.parent
    protected_task(store, work)
    first = StepModel([tool_turn("send", {"to": "ann"}, "c1"), Killed()])
    with pytest.raises(Killed):
        Worker(store, lease_s=0.1, model_resolver=lambda n, w: first.model).run_one()
    time.sleep(0.15)
    resumed = StepModel([text_turn("Sent.")], first=2)
    outcome = Worker(store, model_resolver=lambda n, w: resumed.model).run_one()
    assert outcome is not None and outcome.status == "done", outcome
