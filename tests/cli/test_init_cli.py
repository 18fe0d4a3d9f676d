"""``donegate init``: the scaffolded task passes ``donegate run`` at once, and init never
overwrites."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests._cli import donegate as in_process


def donegate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"DONEGATE_HOME": str(cwd / "home"), "COLUMNS": "200"}
    return in_process(*args, cwd=cwd, env=env)  # output, files and exit codes: no process needed


def test_init_then_run_exits_0_with_the_gate_at_work(tmp_path: Path) -> None:
    made = donegate(tmp_path, "init", "my-task")
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "my-task/task.yaml").is_file()
    ran = donegate(tmp_path, "run", "my-task/task.yaml")
    assert ran.returncode == 0, ran.stderr + ran.stdout
    assert ran.stdout.startswith("done my-task: every gate passed\n")
    assert "continuations 1" in ran.stdout  # the progress report was judged and continued
    assert "gate: not done (checks 0/1 passed)" in ran.stderr
    [cert] = re.findall(r"^  certificate (.+)$", ran.stdout, re.M)
    assert Path(cert).is_file() and Path(cert).is_relative_to(tmp_path / "home")
    # the agent's fix is in the workdir; the protected test is as init wrote it
    assert 'return f"Hello, {name}!"' in (tmp_path / "my-task/work/greet.py").read_text()
    assert donegate(tmp_path, "verify", cert).returncode == 0


def test_init_defaults_to_my_task_and_names_the_task_after_the_folder(tmp_path: Path) -> None:
    assert donegate(tmp_path, "init").returncode == 0
    assert "id: my-task\n" in (tmp_path / "my-task/task.yaml").read_text()
    assert donegate(tmp_path, "init", "greeter").returncode == 0
    assert "id: greeter\n" in (tmp_path / "greeter/task.yaml").read_text()
    assert donegate(tmp_path, "run", "greeter/task.yaml").returncode == 0


@pytest.mark.parametrize("existing", ["task.yaml", "work/test_greet.py"])
def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path: Path, existing: str) -> None:
    target = tmp_path / "t" / existing
    target.parent.mkdir(parents=True)
    target.write_text("mine\n")
    done = donegate(tmp_path, "init", "t")
    assert done.returncode == 2
    assert (
        done.stderr
        == f"donegate: {Path('t') / existing}: already exists; init writes only new files\n"
    )
    assert target.read_text() == "mine\n"
    assert sorted(p.name for p in (tmp_path / "t").rglob("*") if p.is_file()) == [target.name]
