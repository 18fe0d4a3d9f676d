"""The worker's claims are judged in the clean room too: a ``pytest.ini`` in the workdir's
parent folder and a ``usercustomize.py`` in the user site each made a failing task ``done``
before (the checks ran in the agent's world)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from donegate.store.sql import SqlStore
from donegate.worker import Worker, submit
from tests.sandbox.attacks import BASE_PY, calc, plant_parent_ini, plant_usercustomize
from tests.worker.helpers import StepModel, task, text_turn

PY = sys.executable

pytestmark = pytest.mark.usefixtures("plain_check_pytest")


def judged(store: SqlStore, work: Path, check: dict[str, object]) -> str:
    submit(
        task("calc", work, checks=[check], closure="checks", max_continuations=0,
             protect=["test_calc.py"]),
        store,
    )  # fmt: skip
    claims = StepModel([text_turn("Fixed; the tests pass.")] * 3)
    outcome = Worker(store, model_resolver=lambda n, w: claims.model).run_one()
    assert outcome is not None
    return outcome.status


def test_a_pytest_ini_in_the_parent_folder_does_not_make_the_task_done(
    store: SqlStore, tmp_path: Path
) -> None:
    work = tmp_path / "project" / "work"
    work.mkdir(parents=True)
    calc(work)
    plant_parent_ini(work)
    status = judged(store, work, {"run": [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"]})
    assert status != "done"


def test_a_usercustomize_in_the_user_site_does_not_make_the_task_done(
    store: SqlStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    calc(work)
    home = tmp_path / "userhome"
    plant_usercustomize(home)
    monkeypatch.setenv("HOME", str(home))
    status = judged(store, work, {"run": [BASE_PY, "-m", "unittest", "-q", "test_calc"]})
    assert status != "done"
