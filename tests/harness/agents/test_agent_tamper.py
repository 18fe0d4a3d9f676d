"""Files that change how checks run, and runner patching, under the hooks and ``exec`` (issue 23).

The same rule as the loop's gate (`donegate.harness.poison.review_changes`): a file the agent
added since the session's start that shadows the runner, configures it or starts with Python
blocks the stop, named; so does a line of the agent's changes that patches the runner (the
hooks have no verifier to weigh it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hookkit import Hook, payload, write_task
from test_agent_exec import FAKE, run_exec


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    """A PATH folder holding the fake agent as ``claude`` (as test_agent_exec's ``bin_dir``)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "claude"
    script.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
    script.chmod(0o755)
    return folder


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
@pytest.mark.parametrize(
    "case",
    [
        (
            "unittest.py",
            "print('OK')\n",
            "unittest.py shadows the standard library module unittest",
        ),
        ("pytest.toml", "[pytest]\n", "pytest.toml configures the test runner"),
        ("sitecustomize.py", "X = 1\n", "sitecustomize.py is a Python startup file"),
    ],
)
def test_a_file_that_changes_how_checks_run_blocks_the_stop(
    hook: Hook, homes: dict[str, Path], agent: str, case: tuple[str, str, str]
) -> None:
    file, content, problem = case
    work = homes["work"]
    (work / "done.txt").write_text("x")
    start = hook(agent, payload(agent, work, hook_event_name="SessionStart"))
    assert start.action == "pass"
    assert hook(agent, payload(agent, work)).action == "pass"
    (work / file).write_text(content)
    out = hook(agent, payload(agent, work))
    assert out.action == "block"
    assert out.problems[0].startswith(problem)
    assert any(c.name == problem and c.kind == "tamper" for c in out.checks)


def test_runner_patching_in_the_code_under_test_blocks_the_stop(
    hook: Hook, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    (work / "done.txt").write_text("x")
    (work / "calc.py").write_text("def double(x):\n    return x\n")
    hook("claude", payload("claude", work, hook_event_name="SessionStart"))
    (work / "calc.py").write_text("import os\n\nos._exit(0)\n")
    out = hook("claude", payload("claude", work))
    assert out.action == "block"
    assert out.problems == (
        "runner tampering flagged: calc.py:3: leaves the process at import (os._exit)",
    )


def test_allow_in_the_task_lets_the_file_through(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    (work / "done.txt").write_text("x")
    task = str(write_task(tmp_path / "allow.yaml", allow=["conftest.py"]))
    hook("claude", payload("claude", work, hook_event_name="SessionStart"), task=task)
    (work / "conftest.py").write_text("X = 1\n")
    assert hook("claude", payload("claude", work), task=task).action == "pass"


def test_exec_fails_a_run_that_planted_a_runner_shadow(
    homes: dict[str, Path], fake_bin: Path, tmp_path: Path
) -> None:
    task = write_task(tmp_path / "t.yaml", id="t", max_continuations=1)
    plant = {"write": {"done.txt": "x", "unittest.py": "print('OK')\n"}, "say": "Done."}
    proc, summary, _ = run_exec(
        ["--task", str(task), "--json", "--", "claude", "-p", "go", "--output-format", "json"],
        [plant, plant], homes=homes, bin_dir=fake_bin, tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode != 0, proc.stderr
    assert summary is not None and summary["status"] in ("escalated", "failed")
    assert "unittest.py shadows the standard library module unittest" in summary["reason"]
    assert summary["certificate"] is None
