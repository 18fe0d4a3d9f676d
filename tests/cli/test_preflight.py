"""``run``, ``submit``, ``exec`` and ``hook install`` refuse a task with any problem ``check``
reports, and a run whose results have nowhere to go, before any model call or agent start.

The model is a script player (`ScriptedModel`), which counts its calls; every model the CLI
builds is kept, so "zero model calls" is read from the players themselves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import donegate.cli.run as run_cli
from donegate.cli import main
from donegate.models.base import Model
from donegate.testing.player import ScriptedModel

SCRIPT = {"turns": [{"tool_call": "write_file", "args": {"path": "a.txt", "content": "a"}},
                    {"tool_call": "task_complete", "args": {"summary": "done"}}]}  # fmt: skip


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> list[ScriptedModel]:
    """Every model `donegate run` resolves, as built (a script player counts its calls)."""
    built: list[ScriptedModel] = []
    real = run_cli.resolve_model

    def keep(value: str, what: str = "model", *, task: Any = None) -> Model:
        model = real(value, what, task=task)
        assert isinstance(model, ScriptedModel)
        built.append(model)
        return model

    monkeypatch.setattr(run_cli, "resolve_model", keep)
    return built


def task(root: Path, **fields: Any) -> Path:
    (root / "work").mkdir(exist_ok=True)
    (root / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
    data = {"id": "t", "prompt": "Write a.txt.", "workdir": "work", "model": "script:script.yaml",
            "max_continuations": 2, "tools": ["write_file"], **fields}  # fmt: skip
    path = root / "task.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def donegate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


def calls(models: list[ScriptedModel]) -> int:
    return sum(m.calls for m in models)


def test_a_good_task_runs_and_the_script_counts_its_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    code, _, err = donegate(capsys, "run", str(task(tmp_path, checks=[{"file_exists": "a.txt"}])))
    assert code == 0, err
    assert calls(models) == 2  # the counter this file's refusals read does count


def test_a_typod_python_module_is_refused_with_zero_model_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    (tmp_path / "slug_checks.py").write_text("def ok(workdir):\n    return True\n")
    path = task(tmp_path, checks=[{"python": "slug_chekcs:ok"}])
    code, out, err = donegate(capsys, "run", str(path))
    assert (code, out) == (2, "")
    assert "checks[0].python: no module named 'slug_chekcs'" in err
    assert calls(models) == 0
    assert not (tmp_path / "work" / "a.txt").exists()


def test_a_missing_run_program_is_refused_with_zero_model_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    path = task(tmp_path, checks=[{"run": "no-such-program-xyz --check"}])
    code, _, err = donegate(capsys, "run", str(path))
    assert code == 2
    assert "checks[0].run: command not found on PATH: no-such-program-xyz" in err
    assert calls(models) == 0


def test_no_preflight_skips_only_the_look_at_this_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    path = task(tmp_path, checks=[{"run": "no-such-program-xyz --check"}])
    code, _, err = donegate(capsys, "run", str(path), "--no-preflight", "--max-continuations", "0")
    assert code == 3, err  # ran: the check then fails where the program is missing
    assert calls(models) == 2
    (tmp_path / "slug_checks.py").write_text("def ok(workdir):\n    return True\n")
    path = task(tmp_path, checks=[{"python": "slug_chekcs:ok"}])
    code, _, err = donegate(capsys, "run", str(path), "--no-preflight")
    assert code == 2 and "no module named 'slug_chekcs'" in err
    assert calls(models) == 2  # no more calls: the module is not the machine's to have


@pytest.mark.parametrize("command", ["true && echo ok", "pytest -q | tee log", "cd src; true"])
def test_shell_syntax_in_run_is_refused_with_zero_model_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel], command: str
) -> None:
    path = task(tmp_path, checks=[{"run": command}])
    code, _, err = donegate(capsys, "run", str(path))
    assert code == 2
    assert "checks[0].run: shell syntax" in err and "sh -c" in err
    assert calls(models) == 0
    code, _, err = donegate(capsys, "check", str(path))
    assert code == 2 and "shell syntax" in err  # the one path serves check too


def test_every_problem_is_listed_before_nothing_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    path = task(tmp_path, checks=[{"python": "nope_mod:ok"}, {"run": "no-such-program-xyz"}])
    code, _, err = donegate(capsys, "run", str(path))
    assert code == 2
    assert err.splitlines()[-1] == f"donegate: {path}: 2 problems; nothing was run"
    assert calls(models) == 0


def test_run_max_continuations_overrides_the_task_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    path = task(tmp_path, checks=[{"file_exists": "never.txt"}])  # the task allows 2
    code, out, err = donegate(capsys, "run", str(path), "--max-continuations", "0", "--json")
    assert code == 3, err  # escalated at the first failed claim: no continuation was paid for
    summary = json.loads(out)
    assert (summary["status"], summary["continuations"]) == ("escalated", 0)
    assert calls(models) == 2
    code, _, err = donegate(capsys, "run", str(path), "--max-continuations", "-1")
    assert code == 2 and "--max-continuations" in err and calls(models) == 2


def test_a_misspelt_field_is_named_not_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: list[ScriptedModel]
) -> None:
    path = task(tmp_path, checks=[{"file_exists": "a.txt"}])
    data = yaml.safe_load(path.read_text())
    data["promt"] = data.pop("prompt")  # once: "prompt: field required (and 1 more)"
    path.write_text(yaml.safe_dump(data))
    code, _, err = donegate(capsys, "run", str(path))
    assert code == 2
    assert f"donegate: {path}: promt: extra inputs are not permitted" in err.splitlines()
    assert "more)" not in err
    assert calls(models) == 0


def test_submit_exec_and_hook_install_refuse_what_check_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(task(tmp_path, checks=[{"python": "slug_chekcs:ok"}]))
    for args in (
        ["submit", path, "--db", str(tmp_path / "store.db")],
        ["exec", "--task", path, "--", "claude", "-p", "x"],
        ["hook", "install", "claude", "--task", path, "--dir", str(tmp_path), "--dry-run"],
    ):
        code, out, err = donegate(capsys, *args)
        assert (code, out) == (2, ""), args
        assert "no module named 'slug_chekcs'" in err, args
    assert not (tmp_path / "store.db").exists()


def test_a_bad_data_dir_is_refused_with_zero_model_calls(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    models: list[ScriptedModel],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "home-is-a-file").write_text("")
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home-is-a-file"))
    code, _, err = donegate(capsys, "run", str(task(tmp_path, checks=[{"file_exists": "a.txt"}])))
    assert code == 2
    assert "the data directory (DONEGATE_HOME)" in err and "home-is-a-file" in err
    assert calls(models) == 0
    assert not (tmp_path / "work" / "a.txt").exists()


def test_a_short_signing_key_is_refused_with_zero_model_calls(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    models: list[ScriptedModel],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "short")
    code, _, err = donegate(capsys, "run", str(task(tmp_path, checks=[{"file_exists": "a.txt"}])))
    assert code == 2
    assert "DONEGATE_SIGNING_KEY" in err
    assert calls(models) == 0


def test_exec_refuses_a_verifier_naming_the_field_and_the_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = task(tmp_path, checks=[{"file_exists": "a.txt"}], verifier="script:script.yaml")
    for args, mode in (
        (["exec", "--task", str(path), "--", "claude", "-p", "x"], "exec"),
        (
            ["hook", "install", "claude", "--task", str(path), "--dir", str(tmp_path)],
            "hook install",
        ),
    ):
        code, _, err = donegate(capsys, *args)
        assert code == 2
        assert err.count("\n") == 1
        assert f"{path}: verifier: {mode} cannot honour it" in err
    assert not (tmp_path / ".claude").exists()


def test_the_demo_prints_a_verify_command_that_runs_from_the_readme(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from donegate.cli.demo import command_name

    monkeypatch.setenv("PATH", "/nonexistent")  # the README never activates the venv
    monkeypatch.setattr("sys.argv", [".venv/bin/donegate", "demo"])
    assert command_name() == ".venv/bin/donegate"
