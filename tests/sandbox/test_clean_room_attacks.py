"""Attacks the clean room closes: each plants what the checks would read in the agent's world.

The workdir holds a bug (``calc.add`` subtracts) and a protected test that catches it, plus a
test that passes. Each attack makes a check pass anyway on today's code: a ``pytest.ini`` in the
workdir's parent folder deselecting the test; a planted ``.pyc`` of a weakened protected test
(unchecked-hash bytecode: Python never compares it with the source); a daemon that re-plants that
bytecode every millisecond; a daemon that weakens the test only while a check runs; a
``usercustomize.py`` in the user site ending a system-Python check with exit 0. Each is run
through the paths that run checks: `run_checks` (the point every path shares), ``run`` (the
loop's gate), and ``verify``. The hooks' cases are in tests/harness/agents; every class of
issue 23 under every path is tests/sandbox/test_attack_matrix.py (the planting code is shared:
tests/sandbox/attacks.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from donegate.harness.certificate import verify_certificate
from donegate.harness.checks import run_checks
from donegate.harness.protect import take_manifest
from donegate.harness.runner import run_task
from donegate.harness.spec import TaskSpec
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script
from tests.sandbox.attacks import (
    BUG,
    FIX,
    MARKED,
    PYTEST,
    UNITTEST,
    USER_SITE,
    calc,
    plant_parent_ini,
    plant_pyc,
    plant_usercustomize,
    weaken_while_checked,
)

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="POSIX bytecode and daemons"),
    pytest.mark.usefixtures("plain_check_pytest"),
]


ATTACKS: dict[str, tuple[dict[str, Any], Callable[..., None]]] = {
    "parent pytest.ini": (PYTEST, lambda work, **_: plant_parent_ini(work)),
    "planted pyc": (UNITTEST, lambda work, **_: plant_pyc(work)),
    "daemon re-planting pyc": (UNITTEST, lambda work, daemon, **_: daemon(lambda: plant_pyc(work))),
    "daemon editing during checks": (
        MARKED, lambda work, daemon, **_: daemon(weaken_while_checked(work))
    ),
    "user site": (USER_SITE, lambda work, home, **_: plant_usercustomize(home)),
}  # fmt: skip


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


def task(check: dict[str, Any]) -> TaskSpec:
    return TaskSpec(
        id="calc", prompt="Fix add.", checks=[check], protect=["test_calc.py"], max_continuations=0
    )


def done_model() -> ScriptedModel:
    return ScriptedModel(parse_script({"prompt": "p", "turns": [{"text": "Fixed."}]}, source="t"))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_checks_fail_on_the_bug_whatever_was_planted(
    attack: str, tmp_path: Path, home: Path, daemon: Any
) -> None:
    check, plant = ATTACKS[attack]
    work = calc(tmp_path / "project" / "work")
    spec = task(check)
    start = take_manifest(work, spec.protect)  # the task's start: its snapshot is kept
    plant(work=work, home=home, daemon=daemon)
    [result] = run_checks(spec.checks, work, snapshot_of=start)
    assert not result.passed, result.output


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_run_does_not_finish_done_on_the_bug(
    attack: str, tmp_path: Path, home: Path, daemon: Any
) -> None:
    check, plant = ATTACKS[attack]
    work = calc(tmp_path / "project" / "work")
    plant(work=work, home=home, daemon=daemon)
    result = run_task(
        task(check), model=done_model(), workdir=work, completion_tool=None,
        output_dir=tmp_path / "out",
    )  # fmt: skip
    assert result.status != "done", result.reason


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_verify_does_not_prove_a_certificate_on_the_bug(
    attack: str, tmp_path: Path, home: Path, daemon: Any
) -> None:
    check, plant = ATTACKS[attack]
    work = calc(tmp_path / "project" / "work", FIX)
    spec = task(check)
    result = run_task(
        spec, model=done_model(), workdir=work, completion_tool=None, output_dir=tmp_path / "out"
    )
    assert result.status == "done" and result.certificate is not None, result.reason
    (work / "calc.py").write_text(BUG)  # the fix undone after certification
    plant(work=work, home=home, daemon=daemon)
    ok, problems = verify_certificate(result.certificate)
    assert not ok and problems, problems


def test_the_checks_pass_on_the_fix_in_the_room(tmp_path: Path, home: Path) -> None:
    work = calc(tmp_path / "project" / "work", FIX)
    results = run_checks([task(c).checks[0] for c, _ in ATTACKS.values()], work)
    assert [r.passed for r in results] == [True] * len(ATTACKS), [r.detail for r in results]
    assert not (work / "started").exists()  # the checks wrote into the room, not the workdir


def test_a_check_module_beside_the_task_file_is_restored_from_the_start_snapshot(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "acme_checks.py").write_text(
        "def ready(root):\n    return (root / 'report.md').is_file()\n"
    )
    (work / "task.yaml").write_text(
        "id: report\nprompt: p\nmax_continuations: 0\nchecks:\n  - python: acme_checks:ready\n"
    )
    from donegate.harness.spec import load_task

    spec = load_task(work / "task.yaml")
    script = {
        "prompt": "p",
        "tools": {},
        "turns": [
            {"tool_call": "write_file", "args": {"path": "acme_checks.py",
                                                 "content": "def ready(root):\n    return True\n"}},
            {"text": "Ready."},
        ],
    }  # fmt: skip
    model = ScriptedModel(parse_script(script, source="t"))
    result = run_task(
        spec.model_copy(update={"tools": ["write_file"]}), model=model, workdir=work,
        completion_tool=None, task_file=work / "task.yaml", output_dir=tmp_path / "out",
    )  # fmt: skip
    assert result.status != "done"
    [check] = [c for c in result.rounds[-1].checks if c.kind == "python"]
    assert (check.passed, check.detail) == (False, "returned False")
