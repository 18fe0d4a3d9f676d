"""Protected files in the hooks: digested at the session's start (or by exec before the agent
runs), kept in the hook's state, and any change, addition or deletion blocks the stop."""

from __future__ import annotations

import json
from pathlib import Path

from hookkit import Hook, payload, write_task


def protected_task(tmp_path: Path, work: Path) -> Path:
    (work / "tests").mkdir()
    (work / "tests" / "test_calc.py").write_text("def test_add():\n    assert 1 + 1 == 2\n")
    (work / "done.txt").write_text("x")
    return write_task(tmp_path / "protected.yaml", protect=["tests/**"])


def test_a_changed_protected_file_blocks_even_when_the_checks_pass(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    task = str(protected_task(tmp_path, work))
    start = hook("claude", payload("claude", work, hook_event_name="SessionStart"), task=task)
    assert (start.action, start.output) == ("pass", None)
    assert hook("claude", payload("claude", work), task=task).action == "pass"
    (work / "tests" / "test_calc.py").write_text("def test_add():\n    assert True\n")
    (work / "tests" / "conftest.py").write_text("collect_ignore = ['test_calc.py']\n")
    out = hook("claude", payload("claude", work), task=task)
    assert out.action == "block"
    assert out.problems == (
        "protected file added: tests/conftest.py",
        "protected file changed: tests/test_calc.py",
    )
    assert (
        out.output is not None
        and "protected file changed: tests/test_calc.py" in (out.output["reason"])
    )
    record = json.loads((homes["data"] / "hooks" / "ship" / "s1.json").read_text())
    digests = record["state"]["protected"]["files"]
    assert list(digests) == ["tests/test_calc.py"]  # the digests live in the hook's state


def test_without_a_session_start_the_first_stop_takes_the_digests(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    task = str(protected_task(tmp_path, work))
    assert hook("codex", payload("codex", work), task=task).action == "pass"
    (work / "tests" / "test_calc.py").unlink()
    out = hook("codex", payload("codex", work), task=task)
    assert out.problems == ("protected file deleted: tests/test_calc.py",)


def test_a_task_kept_in_the_workdir_is_protected_automatically(
    hook: Hook, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    (work / "done.txt").write_text("x")
    task = write_task(work / "task.yaml")
    hook("gemini", payload("gemini", work, hook_event_name="SessionStart"), task=str(task))
    task.write_text(task.read_text().replace("done.txt", "README.md").replace("ship", "ship"))
    (work / "README.md").write_text("x")
    out = hook("gemini", payload("gemini", work), task=str(task))
    assert out.action == "block"  # pinned at the session's first event: a change is tampering
    assert "task.yaml changed since the session's first event" in str(out.output), out
