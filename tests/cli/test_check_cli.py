"""``donegate check`` / ``validate``: every problem of a task file at once, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from donegate.cli import main
from donegate.harness.scaffold import scaffold


def donegate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


BAD = {
    "id": "bad id",
    "prompt": "",
    "model": "script:nope.yaml",
    "verifier": "bogus:thing",
    "workdir": "nowhere",
    "tools": ["read_file", "frobnicate", {"import": "no_such_tool_mod:fn", "side_effect": False}],
    "checks": [
        {"run": "not-a-command-xyz --flag"},
        {"python": "no_such_check_mod:ok"},
        {"file_exists": ""},
        {"whatever": 1},
    ],
    "max_continuations": -1,
}


def test_every_problem_is_reported_at_once_with_file_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.yaml").write_text(yaml.safe_dump(BAD))
    Path("marker").write_text("untouched\n")
    code, out, err = donegate(capsys, "check", "bad.yaml")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[-1] == "bad.yaml: 12 problems"
    fields = [line.split(": ")[1] for line in lines[:-1]]
    assert all(line.startswith("bad.yaml: ") for line in lines)
    assert sorted(fields) == sorted([
        "id", "prompt", "checks[2].file_exists", "checks[3]", "max_continuations", "tools[1]",
        "workdir", "model", "verifier", "checks[0].run", "checks[1].python", "tools[2].import",
    ])  # fmt: skip
    assert f"model: no such script file: {tmp_path / 'nope.yaml'}" in err
    assert "checks[0].run: command not found on PATH: not-a-command-xyz" in err
    assert "no module named 'no_such_check_mod'" in err
    assert "no module named 'no_such_tool_mod'" in err
    assert "unknown model 'bogus:thing'" in err
    assert "bad.yaml: tools[1]: unknown tool 'frobnicate'; built-ins: read_file, write_file," in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "marker"]  # nothing ran


def test_a_good_task_is_ok_and_validate_is_the_same_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    [task, *_] = scaffold(tmp_path / "t")
    for name in ("check", "validate"):
        code, out, err = donegate(capsys, name, str(task))
        assert (code, err) == (0, "")
        assert out.startswith(f"ok: {task}: task t, 1 check, model script:")
    assert "FAILED" not in (tmp_path / "t/work/greet.py").read_text()  # the agent never ran
    assert "NotImplementedError" in (tmp_path / "t/work/greet.py").read_text()


def test_a_python_check_found_in_the_task_folder_is_fine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "mychecks").mkdir()
    (tmp_path / "mychecks/__init__.py").write_text("")
    (tmp_path / "mychecks/calc.py").write_text("raise SystemExit('imported!')\n")
    spec = {"id": "t", "prompt": "p", "checks": [{"python": "mychecks.calc:ok"}]}
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(spec))
    code, out, err = donegate(capsys, "check", str(tmp_path / "task.yaml"))
    assert (code, err) == (0, "") and "no model" in out  # found, and never imported
    spec["checks"] = [{"python": "mychecks.nope:ok"}]
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(spec))
    code, _, err = donegate(capsys, "check", str(tmp_path / "task.yaml"))
    assert code == 2 and "checks[0].python: no module named 'mychecks.nope'" in err


def test_a_script_that_does_not_fit_the_task_and_an_unreadable_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "agent.yaml").write_text("prompt: something else\nturns:\n  - text: hi\n")
    spec = {"id": "t", "prompt": "p", "model": "script:agent.yaml", "closure": "model"}
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(spec))
    code, _, err = donegate(capsys, "check", str(tmp_path / "task.yaml"))
    assert code == 2 and err.startswith(f"{tmp_path / 'task.yaml'}: model: ")
    assert "differs from the task's prompt" in err
    code, _, err = donegate(capsys, "check", str(tmp_path / "missing.yaml"))
    assert code == 2 and err.startswith(f"{tmp_path / 'missing.yaml'}: ") and err.count("\n") == 1
