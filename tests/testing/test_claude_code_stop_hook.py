"""Claude Code as a gated agent, for real: ``donegate hook claude-stop`` as the Stop hook of the
real Claude Code binary, run headless against the emulator.

The workdir holds a task whose check counts migrated endpoint files, and a project
``.claude/settings.json`` registering two Stop hooks: donegate's, and a recorder that appends
the hook JSON Claude Code sends on stdin to a log, so the tests can assert that contract too.

What Claude Code 2.1.197 does in ``-p`` mode (found by logging the emulator's requests): it runs
the Stop hooks each time a turn ends with no tool call, with ``cwd`` the project directory and
JSON on stdin (``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name: "Stop"``,
``stop_hook_active``: false on the first stop and true after a block, ``last_assistant_message``
and more). A ``{"decision": "block", "reason": R}`` answer becomes the next request's last user
message, ``"Stop hook feedback:\\nR"``; when no hook blocks, the run ends and the JSON result is
the last turn's text. After 8 blocks in a row with no tool call between them it ignores the ninth.

Skipped only when the ``claude`` binary is missing and ``DONEGATE_REQUIRE_CLAUDE`` is unset.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import donegate
from donegate.harness.checks import run_checks
from donegate.harness.spec import load_task
from donegate.testing import Emulator, assert_results_match_calls, transcript_from

pytestmark = pytest.mark.slow

CLAUDE = Path(__file__).resolve().parent / "claude_code"  # scripts of Claude Code's own behaviour
SRC = Path(donegate.__file__).resolve().parents[1]  # the hook runs this checkout's donegate

ENDPOINTS = ("users", "orders", "items", "carts", "payments", "refunds")
CHECK_NAME = "six endpoints migrated"
CHECK = f"""\
import pathlib, sys
missing = [n for n in {list(ENDPOINTS)!r} if not pathlib.Path("api", n + ".py").is_file()]
line = f"{{6 - len(missing)}}/6 endpoints migrated"
print(line + ("; missing: " + ", ".join(missing) if missing else ""))
sys.exit(1 if missing else 0)
"""
FAILED = (
    f"failed checks: {CHECK_NAME} (exit code 1: 4/6 endpoints migrated; missing: payments, refunds)"
)
NUDGE = f"Not done yet: {FAILED}. Continue, or state the blocker."
# The recorder hook: append the hook's stdin (one JSON object) as a line of the log in argv[1].
RECORD = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read().strip() + '\\n')"


def claude_binary() -> str:
    found = shutil.which("claude")
    if found is None:
        if os.environ.get("DONEGATE_REQUIRE_CLAUDE"):
            pytest.fail("DONEGATE_REQUIRE_CLAUDE is set but the claude binary is not on PATH")
        pytest.skip("Claude Code is not installed (npm install -g @anthropic-ai/claude-code)")
    return found


def gated_workdir(tmp_path: Path, max_continuations: int) -> tuple[Path, Path, Path]:
    """A workdir with the task and the Stop hooks; returns it, the task file and the stdin log."""
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    task = tmp_path / "task.yaml"  # outside the workdir: the agent's files are all it holds
    task.write_text(
        yaml.safe_dump(
            {
                "id": "migrate",
                "prompt": "Migrate the six endpoints to api/.",
                "max_continuations": max_continuations,
                "checks": [{"name": CHECK_NAME, "run": [sys.executable, "-c", CHECK]}],
            }
        )
    )
    stdin_log = tmp_path / "hook-stdin.jsonl"
    hook = [sys.executable, "-m", "donegate", "hook", "claude-stop", "--task", str(task)]
    record = [sys.executable, "-c", RECORD, str(stdin_log)]
    settings = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": shlex.join(hook)},
                        {"type": "command", "command": shlex.join(record)},
                    ]
                }
            ]
        }
    }
    (work / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    return work, task, stdin_log


def run_claude(emu: Emulator, workdir: Path, home: Path) -> tuple[int, dict[str, Any]]:
    """Run ``claude -p`` against the emulator; its exit code and the JSON result it printed."""
    home.mkdir(exist_ok=True)
    env = {
        "DONEGATE_HOME": str(data_dir(workdir)),  # the hook's state: never in the workdir
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),  # no user settings, no login: the emulator is the only API
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": emu.base_url,
        "ANTHROPIC_API_KEY": "test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "PYTHONPATH": str(SRC),  # inherited by the hooks Claude Code runs
    }
    args = [claude_binary(), "-p", "migrate the six endpoints to api/", "--output-format", "json",
            "--permission-mode", "acceptEdits", "--allowedTools", "Write,Bash"]  # fmt: skip
    proc = subprocess.run(
        args, cwd=workdir, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.stdout.strip(), f"claude printed nothing; stderr:\n{proc.stderr[-2000:]}"
    return proc.returncode, json.loads(proc.stdout)


def model_requests(emu: Emulator) -> list[dict[str, Any]]:
    return [r for r in emu.requests if r["kind"] == "model"]


def last_message(entries: list[dict[str, Any]]) -> tuple[str, str]:
    """The role and text of the last message of the last request in `entries`."""
    message = transcript_from(entries)[-1]
    return message.role, message.text


def data_dir(work: Path) -> Path:
    """The hook's data directory (DONEGATE_HOME), beside the workdir."""
    return work.parent / "donegate-home"


def hook_state(work: Path, session_id: str) -> dict[str, Any]:
    record = json.loads((data_dir(work) / "hooks" / "migrate" / f"{session_id}.json").read_text())
    state: dict[str, Any] = record["state"]
    return state


def failed_names(round_: dict[str, Any]) -> list[str]:
    return [c["name"] for c in round_["checks"] if not c["passed"]]


def stdin_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_progress_report_is_continued_until_the_check_passes(tmp_path: Path) -> None:
    work, task, stdin_log = gated_workdir(tmp_path, max_continuations=3)
    with Emulator(CLAUDE / "stop_hook_migration.yaml") as emu:
        code, result = run_claude(emu, work, tmp_path / "home")
        emu.assert_exhausted()
        calls = model_requests(emu)
        transcript = transcript_from(emu)

    # Claude Code's final JSON: a success, answered by the turn after the last stop.
    assert code == 0
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "success", False)
    assert result["result"] == "6 of 6 endpoints migrated."
    assert result["stop_reason"] == "end_turn"
    session = result["session_id"]

    # The world: six endpoint files, and the task's own check passes on them.
    assert sorted(p.name for p in (work / "api").iterdir()) == sorted(f"{e}.py" for e in ENDPOINTS)
    assert (work / "api" / "refunds.py").read_text() == "ROUTE = '/v2/refunds'\n"
    checks = run_checks(load_task(task).checks, work, timeout=30)
    assert [(c.name, c.passed, c.detail) for c in checks] == [(CHECK_NAME, True, "exit code 0")]

    # Four model calls: writes, the progress report (blocked), the last writes, the answer.
    assert len(calls) == 4
    assert last_message(calls[:2])[0] == "tool"  # the results of the first four writes
    assert NUDGE not in json.dumps(calls[1]["body"])
    # The request after the first stop carries the hook's reason as its last user message.
    assert last_message(calls[:3]) == ("user", f"Stop hook feedback:\n{NUDGE}")
    assert NUDGE not in json.dumps(calls[3]["body"]["messages"][-1])  # then the write results
    assert_results_match_calls(transcript)
    progress = [m for m in transcript if m.role == "assistant" and m.text.startswith("4 of 6")]
    assert len(progress) == 1

    # The hook ran at both stops and blocked once; the pass reset the session's count.
    state = hook_state(work, session)
    stops = [r for r in state["rounds"] if r["event"] == "Stop"]
    assert [(r["stop_hook_active"], failed_names(r), r["outcome"]) for r in stops] == [
        (False, [CHECK_NAME], "blocked"),
        (True, [], "passed"),
    ]
    assert state["blocks"] == 0 and state["escalated"] is None
    assert stops[0]["problems"] == [FAILED]
    assert stops[0]["claim"] == progress[0].text
    assert not (data_dir(work) / "escalations").exists()
    assert not (work / ".donegate").exists()

    # What Claude Code sent each hook on stdin.
    inputs = stdin_lines(stdin_log)
    assert [i["stop_hook_active"] for i in inputs] == [False, True]
    assert {(i["session_id"], i["cwd"], i["hook_event_name"]) for i in inputs} == {
        (session, str(work), "Stop")
    }
    assert [i["last_assistant_message"] for i in inputs] == [
        progress[0].text,
        "6 of 6 endpoints migrated.",
    ]
    assert Path(inputs[0]["transcript_path"]).is_file()


def test_a_stuck_agent_is_blocked_max_continuations_times_then_escalated(tmp_path: Path) -> None:
    work, _, stdin_log = gated_workdir(tmp_path, max_continuations=3)
    with Emulator(CLAUDE / "stop_hook_stuck.yaml") as emu:
        code, result = run_claude(emu, work, tmp_path / "home")
        emu.assert_exhausted()
        calls = model_requests(emu)
    stuck = [
        "4 of 6 endpoints migrated (users, orders, items, carts); payments and refunds next.",
        "Payments needs the v2 ledger schema, which is not in this repository.",
        "Refunds depend on payments; both wait for the ledger schema.",
        "Still blocked on the ledger schema; a human has to supply it.",
    ]

    # The fourth stop was let through: Claude Code ends normally with the last turn's text.
    assert code == 0
    assert (result["subtype"], result["is_error"], result["result"]) == ("success", False, stuck[3])
    session = result["session_id"]
    assert len(calls) == 5  # the writes, then four stops: three blocked, one let through
    for n in (2, 3, 4):  # each continuation request ends with the hook's reason
        assert last_message(calls[: n + 1]) == ("user", f"Stop hook feedback:\n{NUDGE}")
    assert len(list((work / "api").iterdir())) == 4  # the world is as the agent left it

    inputs = stdin_lines(stdin_log)
    assert [i["stop_hook_active"] for i in inputs] == [False, True, True, True]
    assert [i["last_assistant_message"] for i in inputs] == stuck

    # Blocked exactly max_continuations times; the state points at the report, written once.
    state = hook_state(work, session)
    assert state["blocks"] == 3
    stops = [r for r in state["rounds"] if r["event"] == "Stop"]
    assert [r["outcome"] for r in stops] == ["blocked"] * 3 + ["escalated"]
    assert [r["claim"] for r in stops] == stuck
    reports = sorted((data_dir(work) / "escalations").iterdir())
    assert [p.suffix for p in reports] == [".json", ".md"]
    assert state["escalated"] == str(reports[0])

    report = json.loads(reports[0].read_text())
    assert (report["kind"], report["task_id"]) == ("donegate.escalation", "migrate")
    assert report["prompt"] == "Migrate the six endpoints to api/."
    assert report["reason"] == f"not done after 3 continuation(s): {FAILED}"
    assert (report["continuations"], report["max_continuations"]) == (3, 3)
    [failed] = report["left"]["failed_checks"]
    assert (failed["name"], failed["exit_code"]) == (CHECK_NAME, 1)
    assert failed["output_tail"] == "4/6 endpoints migrated; missing: payments, refunds\n"
    assert [r["claim"] for r in report["why_stuck"]] == stuck  # the blocked ones, then the last
    assert [r["verdict"] for r in report["why_stuck"]] == ["continue"] * 3 + ["escalate"]
    extra = report["state"]
    assert (extra["session_id"], extra["cwd"]) == (session, str(work))
    assert extra["last_claim"] == stuck[3]
    # The transcript is pointed to (path and digest of what the hook saw), never copied.
    pointer = extra["transcript"]
    assert pointer["path"] == inputs[-1]["transcript_path"] and pointer["read"] is True
    assert len(pointer["sha256"]) == 64
    lines = [json.loads(line) for line in Path(pointer["path"]).read_text().splitlines()]
    said = [
        block.get("text")
        for line in lines
        if isinstance(line, dict) and line.get("type") == "assistant"
        for block in line["message"]["content"]
    ]
    assert [s for s in said if s] == stuck  # the session's transcript, up to the last stop

    markdown = reports[1].read_text()
    assert markdown.startswith("# Escalated: migrate\n")
    assert "Continuations: 3 of 3" in markdown
    assert f"- check failed: `{CHECK_NAME}`: exit code 1: 4/6 endpoints migrated" in markdown
    assert f"claimed {stuck[1]!r}" in markdown


def test_claude_code_stops_following_blocks_after_eight_text_only_continuations(
    tmp_path: Path,
) -> None:
    # The hook would block ten times; Claude Code itself gives up first, so nothing escalates.
    work, _, stdin_log = gated_workdir(tmp_path, max_continuations=10)
    with Emulator(CLAUDE / "stop_hook_talker.yaml") as emu:
        code, result = run_claude(emu, work, tmp_path / "home")
        emu.assert_exhausted()
        calls = model_requests(emu)
    assert len(calls) == 9
    assert (code, result["subtype"], result["is_error"], result["result"]) == (
        0,
        "success",
        False,
        "",
    )
    assert len(stdin_lines(stdin_log)) == 9
    state = hook_state(work, result["session_id"])
    assert state["blocks"] == 9 and state.get("escalated") is None
    assert not (data_dir(work) / "escalations").exists()
