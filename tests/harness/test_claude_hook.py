"""The Claude Code Stop hook: block while the checks fail, bounded per session, then escalate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from donegate.errors import UserError
from donegate.harness.claude_hook import HookInput, claude_stop, parse_hook_input
from donegate.harness.spec import TaskSpec

NUDGE = (
    "Not done yet: failed checks: file_exists: done.txt (done.txt does not exist). "
    "Continue, or state the blocker."
)


def spec(limit: int = 2) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "id": "ship",
            "prompt": "Ship it.",
            "checks": [{"file_exists": "done.txt"}],
            "max_continuations": limit,
        }
    )


def stop(cwd: Path, session: str = "s1", active: bool = False, **extra: Any) -> HookInput:
    return HookInput(session_id=session, cwd=cwd, stop_hook_active=active, **extra)


def test_blocks_while_the_checks_fail_then_lets_the_stop_through(tmp_path: Path) -> None:
    first = claude_stop(spec(), stop(tmp_path))
    assert first.output == {"decision": "block", "reason": NUDGE}
    assert first.blocks == 1
    (tmp_path / "done.txt").write_text("shipped")
    second = claude_stop(spec(), stop(tmp_path, active=True))
    assert second.output is None and not second.block
    assert second.reason == "every check passed"
    assert not (tmp_path / ".donegate" / "escalations").exists()


def test_escalates_once_the_continuations_are_spent(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_text('{"type": "user", "message": "ship it"}\nnot json\n')
    decisions = [
        claude_stop(spec(2), stop(tmp_path, active=i > 0, transcript_path=str(transcript)))
        for i in range(4)
    ]
    assert [d.block for d in decisions] == [True, True, False, False]
    assert [d.blocks for d in decisions] == [1, 2, 2, 2]
    assert decisions[2].report is not None and decisions[3].report is None  # written once
    reports = sorted((tmp_path / ".donegate" / "escalations").iterdir())
    assert [p.suffix for p in reports] == [".json", ".md"]
    report = json.loads(reports[0].read_text())
    assert report["task_id"] == "ship"
    assert report["reason"].startswith("checks still failing after 2 continuation(s)")
    assert report["continuations"] == 2 and report["max_continuations"] == 2
    assert len(report["why_stuck"]) == 2
    assert report["left"]["failed_checks"][0]["name"] == "file_exists: done.txt"
    assert report["state"]["session_id"] == "s1"
    assert report["state"]["transcript"] == [{"type": "user", "message": "ship it"}, "not json"]


def test_blocks_are_counted_per_session(tmp_path: Path) -> None:
    assert claude_stop(spec(1), stop(tmp_path, "a")).block
    assert not claude_stop(spec(1), stop(tmp_path, "a", active=True)).block
    assert claude_stop(spec(1), stop(tmp_path, "b")).block


def test_a_pass_resets_the_count(tmp_path: Path) -> None:
    assert claude_stop(spec(1), stop(tmp_path)).block
    (tmp_path / "done.txt").write_text("x")
    assert not claude_stop(spec(1), stop(tmp_path)).block
    (tmp_path / "done.txt").unlink()  # a later change broke it again: a fresh budget
    assert claude_stop(spec(1), stop(tmp_path)).block


def test_state_lives_under_donegate_home_when_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("DONEGATE_HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    claude_stop(spec(), stop(work))
    [state] = (home / "hooks").iterdir()
    assert json.loads(state.read_text())["blocks"] == 1
    assert not (work / ".donegate").exists()


def test_max_continuations_zero_never_blocks(tmp_path: Path) -> None:
    decision = claude_stop(spec(0), stop(tmp_path))
    assert not decision.block and decision.report is not None


def test_parse_hook_input() -> None:
    hook = parse_hook_input(
        json.dumps(
            {
                "session_id": "abc",
                "transcript_path": "/t.jsonl",
                "stop_hook_active": True,
                "cwd": "/repo",
                "hook_event_name": "Stop",
            }
        )
    )
    assert hook == HookInput(
        session_id="abc", cwd=Path("/repo"), stop_hook_active=True, transcript_path="/t.jsonl"
    )
    for bad in ("nope", "[]", '{"cwd": "/repo"}', '{"session_id": "a", "cwd": 3}'):
        with pytest.raises(UserError):
            parse_hook_input(bad)
