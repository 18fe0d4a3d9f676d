"""``donegate exec``: an agent CLI run headless with the gate installed for that run only; the
exit code comes from the harness (0 done, 3 escalated, 4 failed, 2 usage), never from the agent.

The agent is `fake_agent.py` installed as ``claude`` (or ``gemini``) on PATH: it reads the hooks
the way the real CLI does and plays a Stop-hook loop from a script of turns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookkit import write_task

import donegate
from donegate.harness.certificate import verify_certificate

SRC = Path(donegate.__file__).resolve().parents[1]
FAKE = Path(__file__).resolve().parent / "fake_agent.py"

HALF = {"write": {"a.txt": "a"}, "say": "Progress: a.txt written, b.txt next."}
REST = {"write": {"b.txt": "b"}, "say": "Both files written."}
TALK = {"say": "b.txt needs a template that is not here."}


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A PATH folder holding the fake agent as ``claude`` and ``gemini`` (and an unknown name)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("claude", "codex", "gemini", "my-agent"):
        script = folder / name
        script.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
        script.chmod(0o755)
    return folder


@pytest.fixture
def ab_task(tmp_path: Path) -> Path:
    return write_task(
        tmp_path / "ab.yaml",
        id="ab",
        checks=[{"file_exists": "a.txt"}, {"file_exists": "b.txt"}],
        max_continuations=2,
    )


def run_exec(
    args: list[str],
    turns: list[dict[str, Any]],
    *,
    homes: dict[str, Path],
    bin_dir: Path,
    tmp_path: Path,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None, list[dict[str, Any]]]:
    """Run ``donegate exec ARGS`` in the workdir; its process, its JSON, the hook calls made.

    The agent gets its turns in its environment and logs its hook calls on stderr, so it runs
    the same in the sandbox (where no file outside the workdir can be read or written)."""
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(SRC),
        "FAKE_AGENT_TURNS": json.dumps(turns),
        "FAKE_AGENT_LOG": "-",
        "HOME": str(tmp_path / "user-home"),
    }
    (tmp_path / "user-home").mkdir(exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "donegate", "exec", *args],
        cwd=homes["work"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    summary = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    mark = "FAKE-AGENT-LOG "
    calls = [json.loads(line.removeprefix(mark)) for line in proc.stderr.splitlines()
             if line.startswith(mark)]  # fmt: skip
    return proc, summary, calls


def test_a_progress_report_is_continued_to_done_exit_0(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    proc, summary, calls = run_exec(
        ["--task", str(ab_task), "--json", "--", "claude", "-p", "write a and b",
         "--output-format", "json"],
        [HALF, REST], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert summary is not None
    assert (summary["status"], summary["continuations"], summary["reason"]) == (
        "done",
        1,
        "every check passed",
    )
    assert summary["agent"] == {
        "name": "claude",
        "version": "2.1.197 (Claude Code)",
        "exit_code": 0,
        "result": "Both files written.",
        "error": None,
    }
    assert [c["passed"] for c in summary["checks"]] == [True, True]
    assert summary["escalation"] is None
    cert = Path(summary["certificate"])
    assert cert.is_relative_to(homes["data"] / "certificates")
    body = json.loads(cert.read_text())
    assert (body["task_id"], body["continuations"], body["agent"]["name"]) == ("ab", 1, "claude")
    ok, problems = verify_certificate(cert, workdir=homes["work"])
    assert ok, problems
    # the hooks the agent ran: a session start, a blocked stop, a passing stop
    stops = [(c["event"], c["answer"]) for c in calls]
    assert [e for e, _ in stops] == ["SessionStart", "Stop", "Stop"]
    assert stops[1][1]["decision"] == "block" and stops[2][1] is None
    # progress as it went, on stderr
    assert "donegate: Stop: blocked (1 of 2)" in proc.stderr
    assert "turn 1: Both files written." in proc.stderr
    # the gate was installed for this run only: nothing in the workdir or the user's home
    assert list((homes["data"] / "certificates").iterdir()) == [cert]  # exec writes the one
    assert sorted(p.name for p in homes["work"].iterdir()) == ["a.txt", "b.txt"]
    assert list((tmp_path / "user-home").iterdir()) == []


def test_a_stuck_agent_escalates_after_max_continuations_exit_3(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    proc, summary, calls = run_exec(
        ["--task", str(ab_task), "--json", "--max-continuations", "3", "--", "claude", "-p", "x"],
        [HALF, TALK], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert summary is not None
    assert (summary["status"], summary["continuations"]) == ("escalated", 3)
    assert summary["reason"].startswith("escalated by the hook: not done after 3 continuation")
    assert summary["certificate"] is None
    escalation = summary["escalation"]
    assert escalation["failed_checks"] == ["file_exists: b.txt"]
    report = json.loads(Path(escalation["json"]).read_text())
    assert report["max_continuations"] == 3
    assert [r["claim"] for r in report["why_stuck"]] == [HALF["say"]] + [TALK["say"]] * 3
    assert Path(escalation["markdown"]).is_file()
    assert [c["answer"]["decision"] if c["answer"] else None for c in calls[1:]] == [
        "block", "block", "block", None]  # fmt: skip


def test_exec_hands_its_budget_to_the_hooks_through_its_run_record_not_argv(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    """Outside the sandbox the hook command is in the CLI's settings: it carries no
    ``--max-continuations``, and the hooks still keep exec's budget (1, under the task's 2)."""
    proc, summary, calls = run_exec(
        ["--task", str(ab_task), "--json", "--max-continuations", "1", "--isolation", "process",
         "--", "claude", "-p", "x"],
        [HALF, TALK], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert summary is not None and (summary["status"], summary["continuations"]) == ("escalated", 1)
    assert [c["answer"]["decision"] if c["answer"] else None for c in calls[1:]] == ["block", None]
    [run_dir] = (homes["data"] / "exec").iterdir()
    assert json.loads((run_dir / "run.json").read_text())["budget"] == 1
    hooks = json.loads((run_dir / "claude-settings.json").read_text())["hooks"]
    commands = [h["command"] for event in hooks.values() for m in event for h in m["hooks"]]
    assert commands and all(" hook claude --task " in c for c in commands)
    assert not any("--max-continuations" in c for c in commands)


def test_ticked_todos_do_not_make_a_failing_task_done(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    ticked = {**HALF, "todos": [{"content": "write a", "status": "completed"},
                                {"content": "write b", "status": "completed"}]}  # fmt: skip
    proc, summary, _ = run_exec(
        ["--task", str(ab_task), "--json", "--", "claude", "-p", "x"],
        [ticked, TALK], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 3
    assert summary is not None and summary["escalation"]["failed_checks"] == ["file_exists: b.txt"]


def test_the_tasks_checklist_joins_the_agents_todos_and_an_open_item_blocks(
    homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    task = write_task(tmp_path / "cl.yaml", id="cl", checks=[{"file_exists": "a.txt"}],
                      checklist=["Update the changelog"], max_continuations=2)  # fmt: skip
    both = {**HALF, "todos": [{"content": "write a", "status": "completed"}]}
    proc, summary, calls = run_exec(
        ["--task", str(task), "--json", "--", "claude", "-p", "x"],
        [both], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    # the checks pass, but the task's checklist item is in no todo list the agent kept
    assert proc.returncode == 3, proc.stderr
    assert summary is not None and summary["status"] == "escalated"
    assert summary["escalation"]["open_items"] == ["Update the changelog"]
    blocks = [c["answer"] for c in calls if c["event"] == "Stop"]
    assert [a["decision"] if a else None for a in blocks] == ["block", "block", None]
    assert "Update the changelog (not in the agent's todo list)" in blocks[0]["reason"]


def test_a_checklist_item_the_agent_lists_and_completes_lets_exec_end_done(
    homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    task = write_task(tmp_path / "cl.yaml", id="cl", checks=[{"file_exists": "a.txt"}],
                      checklist=["Update the changelog"], max_continuations=2)  # fmt: skip
    listed = {**HALF, "todos": [{"content": "update the  changelog", "status": "in_progress"}]}
    ticked = {"say": "Changelog updated.",
              "todos": [{"content": "Update the changelog", "status": "completed"}]}  # fmt: skip
    proc, summary, _ = run_exec(
        ["--task", str(task), "--json", "--", "claude", "-p", "x"],
        [listed, ticked], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert summary is not None and (summary["status"], summary["continuations"]) == ("done", 1)


def test_an_agent_that_crashes_fails_exit_4(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    proc, summary, _ = run_exec(
        ["--task", str(ab_task), "--json", "--", "claude", "-p", "x"],
        [{"write": {"a.txt": "a"}, "exit": 1, "stderr": "API Error: 529 overloaded"}],
        homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 4
    assert summary is not None
    assert summary["status"] == "failed" and summary["agent"]["exit_code"] == 1
    assert summary["reason"].startswith("Claude Code exited with code 1; failed checks: ")
    assert "API Error: 529 overloaded" in proc.stderr  # the agent's own output, passed through


def test_an_agent_that_stops_following_blocks_with_budget_left_fails_exit_4(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    proc, summary, _ = run_exec(
        ["--task", str(ab_task), "--json", "--", "claude", "-p", "x"],
        [{**HALF, "give_up": True}], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 4
    assert summary is not None
    assert summary["reason"].startswith("Claude Code ended with 1 of 2 continuations spent")
    assert summary["agent"]["exit_code"] == 0  # the agent said it succeeded; the harness did not


def test_a_run_whose_hooks_never_judged_a_stop_fails_exit_4(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    proc, summary, _ = run_exec(
        ["--task", str(ab_task), "--json", "--", "claude", "-p", "x"],
        [{"write": {"a.txt": "a"}, "exit": 0, "stderr": "bye"}],
        homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 4
    assert summary is not None and "the gate's hook never ran" in summary["reason"]


def test_gemini_is_gated_through_a_home_of_its_own(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    user = tmp_path / "user-home" / ".gemini"
    user.mkdir(parents=True)
    settings = '{\n  // the user\'s own\n  "model": {"name": "gemini-2.5-flash"}\n}\n'
    (user / "settings.json").write_text(settings)
    (user / "oauth_creds.json").write_text("{}")
    monkeypatch.delenv("GEMINI_CLI_HOME")
    proc, summary, calls = run_exec(
        ["--task", str(ab_task), "--json", "--", "gemini", "-p", "x", "--yolo"],
        [HALF, REST], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert summary is not None and summary["agent"]["name"] == "gemini"
    assert [c["event"] for c in calls] == ["SessionStart", "AfterAgent", "AfterAgent"]
    assert calls[1]["answer"]["decision"] == "deny"
    assert (user / "settings.json").read_text() == settings  # read, never written
    [run] = (homes["data"] / "exec").iterdir()
    mine = json.loads((run / "gemini-home" / ".gemini" / "settings.json").read_text())
    assert mine["model"] == {"name": "gemini-2.5-flash"}
    assert sorted(mine["hooks"]) == ["AfterAgent", "SessionStart"]
    assert (run / "gemini-home" / ".gemini" / "oauth_creds.json").resolve() == (
        user / "oauth_creds.json"
    )


def test_agent_names_the_cli_when_the_executable_name_does_not(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    args = ["--task", str(ab_task), "--json", "--agent", "claude", "--", "my-agent", "-p", "x"]
    proc, summary, _ = run_exec(args, [HALF, REST], homes=homes, bin_dir=bin_dir,
                                tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert summary is not None and summary["agent"]["name"] == "claude"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "{task}", "--", "my-agent", "-p", "x"], "cannot tell which agent"),
        (["--task", "{task}", "--", "no-such-claude-binary"], "cannot tell which agent"),
        (["--task", "{task}", "--agent", "claude", "--", "no-such-binary"], "command not found"),
        (["--task", "{task}", "--agent", "cursor", "--", "claude"], "Invalid value for '--agent'"),
        (["--task", "{missing}", "--", "claude", "-p", "x"], "cannot read the task file"),
        (["--task", "{task}"], "Missing argument"),
        (["--", "claude"], "Missing option '--task'"),
    ],
)
def test_usage_errors_exit_2(
    *,
    args: list[str],
    message: str,
    ab_task: Path,
    homes: dict[str, Path],
    bin_dir: Path,
    tmp_path: Path,
) -> None:
    filled = [a.format(task=ab_task, missing=tmp_path / "missing.yaml") for a in args]
    proc, summary, calls = run_exec(filled, [HALF], homes=homes, bin_dir=bin_dir,
                                    tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert summary is None and calls == []


def test_an_agent_that_edits_a_protected_test_is_not_done(
    homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    tests = homes["work"] / "tests"
    tests.mkdir()
    (tests / "test_b.py").write_text("def test_b():\n    assert open('b.txt').read() == 'b'\n")
    task = write_task(tmp_path / "p.yaml", checks=[{"file_exists": "b.txt"}],
                      protect=["tests/**"], max_continuations=1)  # fmt: skip
    cheat = {"write": {"b.txt": "wrong", "tests/test_b.py": "def test_b():\n    pass\n"},
             "say": "Done."}  # fmt: skip
    args = ["--task", str(task), "--json", "--", "claude", "-p", "x"]
    proc, summary, _ = run_exec(args, [cheat], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert summary is not None
    assert summary["problems"] == ["protected file changed: tests/test_b.py"]
    assert summary["certificate"] is None


def test_a_stop_while_a_background_subagent_runs_spends_no_continuation(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    running = [{"id": "a1", "type": "subagent", "status": "running", "description": "writes b"}]
    proc, summary, calls = run_exec(
        ["--task", str(ab_task), "--json", "--", "claude", "-p", "x"],
        [{**HALF, "background": running}, REST], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert summary is not None and summary["continuations"] == 0
    assert [c["answer"] for c in calls] == [None, None, None]  # nothing blocked
    assert "donegate: Stop: deferred (0 of 2): background work still running" in proc.stderr


def test_a_gate_that_cannot_be_installed_fails_the_run_exit_4(
    ab_task: Path, homes: dict[str, Path], bin_dir: Path, tmp_path: Path
) -> None:
    proc, summary, calls = run_exec(
        ["--task", str(ab_task), "--json", "--", "codex", "exec", "write a and b"],
        [HALF, REST], homes=homes, bin_dir=bin_dir, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    assert summary is not None and calls == []  # the agent never ran ungated
    assert summary["reason"].startswith("the gate could not be installed for Codex CLI: ")
    assert summary["agent"]["exit_code"] is None
