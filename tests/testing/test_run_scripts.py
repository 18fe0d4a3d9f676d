"""``donegate run TASK --model script:FILE``: the script is the model, the task's real tools run.

A script for a run needs no stubs and no prompt; a stub named like a task tool is ignored with
a warning, a call to a tool the task lacks is served (and answered "unknown tool") with a
warning, and a prompt that differs from the task's is a usage error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests._cli import donegate


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def task(root: Path) -> Path:
    return write(
        root / "task.yaml",
        {
            "id": "hello",
            "prompt": "Write hello.txt saying hello.",
            "workdir": ".",
            "tools": ["write_file"],
            "checks": [{"file_contains": {"path": "hello.txt", "text": "hello"}}],
        },
    )


WRITES: list[dict[str, Any]] = [
    {"tool_call": "write_file", "args": {"path": "hello.txt", "content": "hello\n"}},
    {"text": "hello.txt is written."},
]


def test_a_script_with_no_stubs_and_no_prompt_drives_the_real_write_file(tmp_path: Path) -> None:
    script = write(tmp_path / "agent.yaml", {"turns": WRITES})
    out = donegate("run", str(task(tmp_path)), "--model", f"script:{script}", "--json",
                   cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["status"], summary["model_calls"]) == ("done", 2)
    assert (tmp_path / "hello.txt").read_text() == "hello\n"
    assert "warning" not in out.stderr


def test_a_stub_named_like_a_task_tool_is_ignored_with_a_warning(tmp_path: Path) -> None:
    data = {"prompt": "Write hello.txt saying hello.", "tools": {"write_file": {"returns": "x"}},
            "turns": WRITES}  # fmt: skip
    script = write(tmp_path / "agent.yaml", data)
    out = donegate("run", str(task(tmp_path)), "--model", f"script:{script}", "--json",
                   cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "hello.txt").read_text() == "hello\n"  # the real tool ran, not the stub
    assert (
        f"donegate: warning: {script}: tools.write_file: stub ignored: the task's own "
        "'write_file' tool runs\n"
    ) in out.stderr


def test_a_call_to_a_tool_the_task_lacks_is_served_with_a_warning(tmp_path: Path) -> None:
    turns = [{"tool_call": "Bash", "args": {"command": "rm -rf /"}}, *WRITES]
    script = write(tmp_path / "agent.yaml", {"turns": turns})
    out = donegate("run", str(task(tmp_path)), "--model", f"script:{script}", "--json",
                   cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["model_calls"] == 3
    warnings = [line for line in out.stderr.splitlines() if "warning" in line]
    assert warnings == [
        f"donegate: warning: {script}: turns[0]: calls 'Bash', a tool the request did not "
        "offer (offered: task_complete, write_file); served as scripted"
    ]


def test_a_prompt_that_differs_from_the_tasks_is_a_usage_error(tmp_path: Path) -> None:
    script = write(tmp_path / "agent.yaml", {"prompt": "Something else.", "turns": WRITES})
    out = donegate("run", str(task(tmp_path)), "--model", f"script:{script}", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr == (
        f"donegate: {script}: prompt: 'Something else.' differs from the task's prompt "
        "'Write hello.txt saying hello.'; leave it out (the task's is used) or make them match\n"
    )
    assert not (tmp_path / "hello.txt").exists()
