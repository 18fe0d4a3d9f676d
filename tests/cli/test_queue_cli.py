"""The queue commands from a user's seat: tasks run where they were submitted, escalations are
reached by task id, ``tasks show`` prints what was stored, and printed paths can be pasted."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from donegate.cli import main
from tests.review.helpers import reviewer_file_at

AGENT = {
    "prompt": "write calc.py",
    "tools": {"write_file": {"returns": "stub"}, "update_checklist": {"returns": "stub"}},
    "turns": [
        {"tool_call": "write_file", "args": {"path": "calc.py", "content": "x = 1\n"}},
        {"tool_call": "update_checklist", "args": {"item": "[bold]write[/] it", "status": "done"}},
        {"text": "Wrote calc.py."},
    ],
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``$DONEGATE_HOME`` in the test folder; the worker's signal handlers are put back after."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DONEGATE_DB", raising=False)
    yield tmp_path / "home"
    for s, handler in saved.items():
        signal.signal(s, handler)


def donegate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task without a workdir runs where it was submitted: never the repository's root (the
    stray calc.py came from here)."""
    monkeypatch.chdir(tmp_path)


def project(root: Path, **task: Any) -> Path:
    """``root/proj`` with a task file (no workdir) and, beside proj, the agent's script."""
    proj = root / "proj"
    proj.mkdir(parents=True)
    (root / "agent.yaml").write_text(yaml.safe_dump(AGENT))
    spec = {"id": "calc", "prompt": "write calc.py", "model": "script:../agent.yaml",
            "tools": ["write_file", "update_checklist"], "checklist": ["[bold]write[/] it"],
            "checks": [{"file_exists": "calc.py"}], **task}  # fmt: skip
    (proj / "task.yaml").write_text(yaml.safe_dump(spec))
    return proj


def test_a_task_runs_where_it_was_submitted_not_where_the_worker_started(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path)
    monkeypatch.chdir(proj)
    assert donegate(capsys, "submit", "task.yaml", "--db", "../q.db")[0] == 0
    monkeypatch.chdir(tmp_path)  # the worker is started in the parent
    code, _, err = donegate(capsys, "worker", "--db", "q.db", "--until-idle")
    assert code == 0 and "1 done" in err, err
    assert (proj / "calc.py").read_text() == "x = 1\n" and not (tmp_path / "calc.py").exists()
    code, out, _ = donegate(capsys, "tasks", "show", "calc", "--db", "q.db", "--json")
    spec = json.loads(out)["task"]["spec"]
    assert spec["workdir"] == str(proj.resolve())
    assert spec["model"] == f"script:{(tmp_path / 'agent.yaml').resolve()}"


def test_a_workdir_gone_by_run_time_fails_the_task_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
) -> None:
    proj = project(tmp_path)
    db = str(tmp_path / "q.db")
    assert donegate(capsys, "submit", str(proj / "task.yaml"), "--db", db)[0] == 0
    shutil.rmtree(proj)
    code, _, err = donegate(capsys, "worker", "--db", db, "--until-idle")
    assert code == 0 and "1 failed" in err
    task = json.loads(donegate(capsys, "tasks", "show", "calc", "--db", db, "--json")[1])["task"]
    assert task["status"] == "failed"
    assert task["reason"] == f"calc: workdir is not a directory: {proj.resolve()}"


def test_submit_model_overrides_and_a_task_without_one_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    spec = yaml.safe_load((proj / "task.yaml").read_text())
    del spec["model"]
    (proj / "task.yaml").write_text(yaml.safe_dump(spec))
    code, out, err = donegate(capsys, "submit", "proj/task.yaml", "--db", "q.db")
    assert (code, out) == (2, "")
    assert err == (
        "donegate: proj/task.yaml: model: no model: set `model` in the task, "
        "or pass one (submit --model M)\n"
    )
    assert not (tmp_path / "q.db").exists()  # refused before the store was opened
    code, out, _ = donegate(capsys, "submit", "proj/task.yaml", "--model", "script:agent.yaml",
                            "--db", "q.db", "--json")  # fmt: skip
    assert (code, json.loads(out)["created"]) == (0, True)
    stored = json.loads(donegate(capsys, "tasks", "show", "calc", "--db", "q.db", "--json")[1])
    assert stored["task"]["spec"]["model"] == f"script:{(tmp_path / 'agent.yaml').resolve()}"
    assert donegate(capsys, "worker", "--db", "q.db", "--until-idle")[0] == 0
    assert (proj / "calc.py").is_file()


def test_tasks_show_prints_ticked_items_and_markup_as_stored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
) -> None:
    proj = project(tmp_path, type="[red]calc[/]")
    db = str(tmp_path / "q.db")
    donegate(capsys, "submit", str(proj / "task.yaml"), "--db", db)
    donegate(capsys, "worker", "--db", db, "--until-idle")
    code, out, _ = donegate(capsys, "tasks", "show", "calc", "--db", db)
    assert code == 0
    assert "  [x] [bold]write[/] it" in out.splitlines()
    assert "type [red]calc[/]" in out


def test_tasks_show_of_a_task_without_a_type_names_no_none_and_its_certificate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
) -> None:
    proj = project(tmp_path)  # no `type:`: it printed `type=None` and no certificate path
    db = str(tmp_path / "q.db")
    donegate(capsys, "submit", str(proj / "task.yaml"), "--db", db)
    donegate(capsys, "worker", "--db", db, "--until-idle")
    code, out, _ = donegate(capsys, "tasks", "show", "calc", "--db", db)
    assert code == 0, out
    assert "None" not in out and "type" not in out.splitlines()[0]
    [cert] = re.findall(r"^certificate: (.+)$", out, re.M)
    assert Path(cert).is_file() and Path(cert).is_relative_to(home)


def test_escalations_are_reached_by_task_id_as_well_as_by_number(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
) -> None:
    db = str(tmp_path / "q.db")
    for task_id in ("stuck", "7"):  # "7" is a task id with no escalation number 7
        proj = project(tmp_path / task_id, id=task_id, checks=[{"file_exists": "never.txt"}],
                       max_continuations=0)  # fmt: skip
        assert donegate(capsys, "submit", str(proj / "task.yaml"), "--db", db)[0] == 0
    donegate(capsys, "worker", "--db", db, "--until-idle")
    by_task = {e["task_id"]: e["id"] for e in json.loads(
        donegate(capsys, "escalations", "list", "--db", db, "--json")[1])}  # fmt: skip
    assert set(by_task) == {"stuck", "7"} and 7 not in by_task.values()
    code, out, _ = donegate(capsys, "escalations", "show", "stuck", "--db", db)
    assert code == 0 and out.startswith(f"escalation {by_task['stuck']} (open) of task stuck\n")
    code, out, _ = donegate(capsys, "escalations", "show", "7", "--db", db)
    assert code == 0 and out.startswith(f"escalation {by_task['7']} (open) of task 7\n")
    ann = str(reviewer_file_at(db, tmp_path))
    code, out, _ = donegate(capsys, "escalations", "resolve", "stuck", "--note", "done", "--db", db,
                            "--token-file", ann)  # fmt: skip
    assert (code, out) == (0, f"escalation {by_task['stuck']}: resolved; task stuck\n")
    code, out, _ = donegate(capsys, "escalations", "show", str(by_task["stuck"]), "--db", db)
    assert code == 0 and "(resolved)" in out.splitlines()[0]
    code, _, err = donegate(capsys, "escalations", "show", "nobody", "--db", db)
    assert (code, err) == (2, "donegate: no escalation nobody\n")


@pytest.mark.slow
def test_printed_paths_survive_a_narrow_pipe(tmp_path: Path) -> None:
    """``run`` piped (rich would wrap at 80 columns) at COLUMNS=60: every path is whole."""
    deep = tmp_path / ("a-folder-with-a-long-name-" * 3) / "project"
    proj = project(deep)
    env = {**os.environ, "COLUMNS": "60", "DONEGATE_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "donegate", "run", str(proj / "task.yaml")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [cert] = re.findall(r"^  certificate (.+)$", done.stdout, re.M)
    assert len(cert) > 60 and Path(cert).is_file()
    [header] = [line for line in done.stderr.splitlines() if line.startswith("calc with ")]
    assert header == "calc with script:agent.yaml"
