"""Where a hook's ``max_continuations`` comes from: one source, read by the hook itself.

An explicit ``--max-continuations`` wins; otherwise a ``donegate exec`` run's budget (its
``run.json``, kept in the data directory), otherwise the task's ``max_continuations``. Exec no
longer writes the budget into the hook's command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload, write_task
from tests._cli import donegate

from donegate.harness.agents.call import exec_dir


def exec_run(run_id: str, record: dict[str, Any]) -> str:
    """A ``donegate exec`` run record, as exec writes it before the agent starts."""
    folder = exec_dir(run_id)
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return run_id


def actions(hook: Hook, work: Path, stops: int, **options: Any) -> list[str]:
    return [hook("claude", payload("claude", work), **options).action for _ in range(stops)]


def test_the_tasks_max_continuations_is_the_budget_without_a_flag(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    one = write_task(tmp_path / "one.yaml", max_continuations=1)
    assert actions(hook, homes["work"], 2, task=str(one)) == ["block", "escalate"]


def test_an_exec_runs_budget_is_read_from_its_record(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    three = write_task(tmp_path / "three.yaml", max_continuations=3)
    run = exec_run("r1", {"task_id": "ship", "budget": 1})
    out = actions(hook, homes["work"], 2, task=str(three), exec_run=run)
    assert out == ["block", "escalate"]


def test_an_explicit_flag_overrides_the_exec_record_and_the_task(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    three = write_task(tmp_path / "three.yaml", max_continuations=3)
    run = exec_run("r2", {"budget": 1})
    out = actions(hook, homes["work"], 3, task=str(three), exec_run=run, max_continuations=2)
    assert out == ["block", "block", "escalate"]


@pytest.mark.parametrize("budget", ["1", True, -1, None])
def test_a_record_without_a_usable_budget_falls_back_to_the_task(
    hook: Hook, homes: dict[str, Path], tmp_path: Path, budget: Any
) -> None:
    one = write_task(tmp_path / "one.yaml", max_continuations=1)
    run = exec_run(f"r-{budget}", {"budget": budget})
    assert actions(hook, homes["work"], 2, task=str(one), exec_run=run) == ["block", "escalate"]


def test_donegate_hook_honours_the_task_and_the_exec_record_with_no_flag(
    homes: dict[str, Path], tmp_path: Path
) -> None:
    one = write_task(tmp_path / "one.yaml", max_continuations=1)
    stdin = json.dumps(payload("claude", homes["work"]))
    args = ["hook", "claude", "--task", str(one)]
    first, second = (donegate(*args, input=stdin) for _ in range(2))
    assert json.loads(first.stdout)["decision"] == "block"
    assert second.stdout == "" and "escalated" in second.stderr

    run = exec_run("r3", {"budget": 2})
    stdin = json.dumps(payload("claude", homes["work"], session="s2"))
    args += ["--exec-run", run]
    outs = [donegate(*args, input=stdin) for _ in range(3)]
    assert [bool(o.stdout) for o in outs] == [True, True, False]
    assert all(o.returncode == 0 for o in outs)
