"""The hooks judge a stop in the clean room: what the agent planted beside the checks is not
read. A planted ``.pyc`` of a weakened protected test, and a ``pytest.ini`` in the workdir's
parent folder, each made a failing task pass a stop before the room (the hooks neither cleared
bytecode nor looked above the workdir)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hookkit import Hook, payload, write_task
from tests.sandbox.attacks import calc, plant_parent_ini, plant_pyc

PY = sys.executable

pytestmark = pytest.mark.usefixtures("plain_check_pytest")


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_planted_pyc_of_a_protected_test_does_not_pass_a_stop(
    agent: str, hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    calc(work)
    task = write_task(
        tmp_path / "calc.yaml",
        checks=[{"run": [PY, "-m", "unittest", "-q", "test_calc"]}],
        protect=["test_calc.py"],
    )
    hook(agent, payload(agent, work, hook_event_name="SessionStart"), task=str(task))
    plant_pyc(work)
    out = hook(agent, payload(agent, work), task=str(task))
    assert out.action == "block", out.problems
    assert any("failed checks" in p for p in out.problems), out.problems


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_pytest_ini_in_the_parent_folder_does_not_pass_a_stop(
    agent: str, hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    calc(work)
    plant_parent_ini(work)
    task = write_task(
        tmp_path / "calc.yaml",
        checks=[{"run": [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"]}],
    )
    out = hook(agent, payload(agent, work), task=str(task))
    assert out.action == "block", out.problems
    assert any("failed checks" in p for p in out.problems), out.problems


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_lost_hook_state_judges_against_the_start_snapshot_again(
    agent: str, hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    (work / "acme_checks.py").write_text("def ready(root):\n    return False\n")
    (work / "task.yaml").write_text(
        "id: ship\nprompt: p\nmax_continuations: 2\nchecks:\n  - python: acme_checks:ready\n"
    )
    task = str(work / "task.yaml")
    hook(agent, payload(agent, work, hook_event_name="SessionStart"), task=task)
    (work / "acme_checks.py").write_text("def ready(root):\n    return True\n")  # rewritten
    for record in (homes["data"] / "hooks").rglob("*.json"):
        record.unlink()  # the hook's state lost
    out = hook(agent, payload(agent, work), task=task)  # a known session's state gone: tampering
    assert out.action == "block" and "treated as tampering" in str(out.output), out
    out = hook(agent, payload(agent, work), task=task)  # judged against the start, not re-taken
    assert out.action == "block", out.problems
    assert "protected file changed: acme_checks.py" in out.problems
    assert any("returned False" in p for p in out.problems), out.problems
