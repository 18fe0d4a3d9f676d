"""A hook that cannot decide blocks: every error is a counted block naming it, and once the
budget is spent the stop is let through with an escalation report that records the error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload, reports, write_task

import donegate
from donegate.harness.agents.core import FALLBACK_BUDGET

SRC = Path(donegate.__file__).resolve().parents[1]

MALFORMED: dict[str, str | bytes] = {
    "empty": "",
    "whitespace": "  \n\t ",
    "not json": "Stop hook: please continue",
    "truncated json": '{"session_id": "s1", "cwd": ',
    "a list": "[]",
    "null": "null",
    "a number": "42",
    "a string": '"s1"',
    "no session_id": '{"cwd": "/tmp", "hook_event_name": "Stop"}',
    "session_id a number": '{"session_id": 7, "hook_event_name": "Stop"}',
    "cwd a number": '{"session_id": "s1", "cwd": 5, "hook_event_name": "Stop"}',
    "cwd with NUL": '{"session_id": "s1", "cwd": "/tmp/\\u0000x", "hook_event_name": "Stop"}',
    "stop_hook_active a string": '{"session_id": "s1", "stop_hook_active": "yes"}',
    "unknown event": '{"session_id": "s1", "hook_event_name": "PreToolUse"}',
    "binary": bytes(range(256)),
    "not utf-8": b'{"session_id": "s\xff1"}',
    "nested too deep": "[" * 100_000 + "]" * 100_000,
    "over 4 MiB": '{"session_id": "s1", "pad": "' + "x" * (4 * 1024 * 1024) + '"}',
}


@pytest.mark.parametrize("stdin", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_stdin_blocks_is_counted_and_escalates(
    stdin: str | bytes, hook: Hook, homes: dict[str, Path]
) -> None:
    outs = [hook("claude", stdin) for _ in range(FALLBACK_BUDGET + 2)]
    assert [o.action for o in outs] == ["block"] * FALLBACK_BUDGET + ["escalate"] * 2
    assert [o.blocks for o in outs[:FALLBACK_BUDGET]] == [1, 2, 3]
    for out in outs[:FALLBACK_BUDGET]:
        assert out.output is not None and out.output["decision"] == "block"
        assert out.output["reason"].startswith("The completion gate could not judge this stop: ")
        assert out.error is not None and out.error in out.output["reason"]
    [report] = reports(homes["data"])
    assert report["reason"].startswith(f"the hook failed {FALLBACK_BUDGET} time(s) in a row")
    assert report["state"]["errors"][0] == outs[0].error
    assert len(report["why_stuck"]) == FALLBACK_BUDGET + 1


def test_a_missing_task_file_blocks_with_the_fallback_budget(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "task.yaml"
    stop = payload("codex", homes["work"])
    outs = [hook("codex", stop, task=str(missing)) for _ in range(FALLBACK_BUDGET + 1)]
    assert [o.action for o in outs] == ["block"] * FALLBACK_BUDGET + ["escalate"]
    assert "cannot read the task file" in (outs[0].error or "")
    assert str(missing) in (outs[0].error or "")
    [report] = reports(homes["data"])
    assert report["max_continuations"] == FALLBACK_BUDGET
    assert report["state"]["session_id"] == "s1"
    assert all("cannot read the task file" in e for e in report["state"]["errors"])


def test_a_task_removed_mid_session_blocks_then_escalates(
    hook: Hook, homes: dict[str, Path], task: Path
) -> None:
    stop = payload("gemini", homes["work"])
    assert hook("gemini", stop).output == {
        "decision": "deny",
        "reason": "Not done yet: failed checks: file_exists: done.txt (done.txt does not exist). "
        "Continue, or state the blocker.",
    }
    task.unlink()
    outs = [hook("gemini", stop) for _ in range(FALLBACK_BUDGET + 1)]
    assert [o.action for o in outs] == ["block"] * FALLBACK_BUDGET + ["escalate"]
    assert outs[0].output is not None and outs[0].output["decision"] == "deny"
    assert "cannot load the task" in outs[0].output["reason"]
    assert reports(homes["data"])


def test_an_invalid_task_blocks(hook: Hook, homes: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\nprompt: y\nchecks: [{nosuch: 1}]\n")
    out = hook("claude", payload("claude", homes["work"]), task=str(bad))
    assert out.action == "block" and "checks[0]" in (out.error or "")


def test_a_check_that_cannot_run_is_a_failed_check(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    crashing = write_task(tmp_path / "crash.yaml", checks=[{"python": "no_such_module:check"}])
    out = hook("claude", payload("claude", homes["work"]), task=str(crashing))
    assert out.action == "block"
    [check] = out.checks
    assert (check.passed, check.detail) == (
        False,
        "the check could not run: python: no_such_module:check: no module named 'no_such_module'",
    )


def test_a_cwd_that_is_not_a_directory_blocks(hook: Hook, homes: dict[str, Path]) -> None:
    out = hook("claude", payload("claude", homes["work"] / "gone"))
    assert out.action == "block" and "not a directory" in (out.error or "")


def test_a_bad_donegate_home_blocks_and_counts_elsewhere(
    hook: Hook, homes: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "not-a-dir"
    file.write_text("x")
    monkeypatch.setenv("DONEGATE_HOME", str(file))
    stop = payload("claude", homes["work"])
    outs = [hook("claude", stop) for _ in range(FALLBACK_BUDGET + 1)]
    assert [o.action for o in outs] == ["block"] * FALLBACK_BUDGET + ["escalate"]
    assert "the data directory is unusable" in (outs[0].error or "")
    private = homes["tmp"] / f"donegate-{os.getuid()}"
    assert outs[0].state is not None and outs[0].state.is_relative_to(private)
    assert reports(private)  # the report is written where the count was kept


def test_fail_open_lets_an_error_through(hook: Hook, homes: dict[str, Path]) -> None:
    out = hook("claude", "not json", fail_open=True)
    assert (out.action, out.output) == ("open", None)
    assert "--fail-open" in out.log[-1]


def run(args: list[str], stdin: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DONEGATE_HOME": str(home), "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "donegate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hook", "claude"], "usage: no --task given"),
        (["hook", "claude", "--task"], "usage: Option '--task' requires an argument"),
        (["hook", "codex", "--bogus", "--task", "t.yaml"], "usage: No such option '--bogus'"),
        (["hook", "gemini", "--deadline", "soon"], "usage: Invalid value for '--deadline'"),
        (["hook", "cluade", "--task", "t.yaml"], "usage: no such hook 'cluade'"),
    ],
)
def test_a_usage_error_is_one_line_and_the_same_fail_closed_decision(
    args: list[str], message: str, homes: dict[str, Path]
) -> None:
    out = run(args, json.dumps(payload("claude", homes["work"])), homes["data"])
    assert out.returncode == 0
    [line] = out.stderr.splitlines()  # one line, never usage text
    assert line.startswith(f"donegate hook: {message}")
    assert "Usage:" not in out.stdout + out.stderr
    answer = json.loads(out.stdout)
    assert answer["decision"] == ("deny" if args[1] == "gemini" else "block")  # as documented
    assert message in answer["reason"]


def test_a_repeated_usage_error_is_counted_then_escalates(homes: dict[str, Path]) -> None:
    stdin = json.dumps(payload("claude", homes["work"]))
    outs = [run(["hook", "claude", "--nope"], stdin, homes["data"]) for _ in range(4)]
    assert [bool(o.stdout) for o in outs] == [True] * FALLBACK_BUDGET + [False]
    assert all(len(o.stderr.splitlines()) == 1 for o in outs)
    assert "escalated" in outs[-1].stderr and "escalation report" in outs[-1].stderr
    [report] = reports(homes["data"])
    assert report["state"]["errors"][0] == "usage: No such option '--nope'"


def test_the_cli_blocks_on_bad_stdin_and_says_so_on_stderr(
    homes: dict[str, Path], task: Path
) -> None:
    out = run(["hook", "claude", "--task", str(task)], "not json", homes["data"])
    assert out.returncode == 0
    decision: dict[str, Any] = json.loads(out.stdout)
    assert decision["decision"] == "block" and "hook input is not JSON" in decision["reason"]
    assert out.stderr.startswith("donegate hook: hook input is not JSON")
