"""The shared gate at an agent CLI's stop: block while not done, bounded per session, escalate;
the agent's own todo/goal state is read as a checklist; background work defers; subagents."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from hookkit import Hook, payload, reports, state_files, write_task

from donegate.harness.agents.core import judge

NUDGE = (
    "Not done yet: failed checks: file_exists: done.txt (done.txt does not exist). "
    "Continue, or state the blocker."
)


def test_blocks_while_the_checks_fail_then_lets_the_stop_through(
    hook: Hook, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    first = hook("claude", payload("claude", work))
    assert (first.action, first.output, first.blocks) == (
        "block",
        {"decision": "block", "reason": NUDGE},
        1,
    )
    (work / "done.txt").write_text("shipped")
    second = hook("claude", payload("claude", work, stop_hook_active=True))
    assert (second.action, second.output, second.blocks) == ("pass", None, 0)
    assert reports(homes["data"]) == []


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_escalates_once_the_continuations_are_spent(
    agent: str, hook: Hook, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    claims = ["4 of 6 done.", "Blocked on the schema.", "Still blocked.", "Giving up."]
    outs = []
    for i, claim in enumerate(claims):
        said = {"prompt_response": "\n".join(claims[: i + 1])} if agent == "gemini" else {
            "last_assistant_message": claim}  # fmt: skip
        outs.append(hook(agent, payload(agent, work, stop_hook_active=i > 0, **said)))
    assert [o.action for o in outs] == ["block", "block", "escalate", "escalate"]
    assert [o.blocks for o in outs] == [1, 2, 2, 2]
    assert outs[2].report is not None and outs[3].report is None  # written once
    [report] = reports(homes["data"])
    assert (report["task_id"], report["continuations"], report["max_continuations"]) == (
        "ship",
        2,
        2,
    )
    assert report["reason"].startswith("not done after 2 continuation(s): failed checks")
    # each round's claim: the newest part of Gemini's accumulating response, too
    assert [r["claim"] for r in report["why_stuck"]] == claims[:3]
    assert [r["failed_checks"] for r in report["why_stuck"]] == [["file_exists: done.txt"]] * 3
    assert report["left"]["failed_checks"][0]["name"] == "file_exists: done.txt"
    assert (report["state"]["agent"], report["state"]["session_id"]) == (agent, "s1")
    assert report["state"]["transcript"]["path"] is None
    assert (homes["data"] / "escalations").glob("*.md")


def test_blocks_are_counted_per_session_and_task(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    assert hook("claude", payload("claude", work, session="a"), max_continuations=1).blocks == 1
    assert hook("claude", payload("claude", work, session="a"), max_continuations=1).action == (
        "escalate"
    )
    assert hook("claude", payload("claude", work, session="b"), max_continuations=1).blocks == 1
    other = write_task(tmp_path / "other.yaml", id="other")
    assert hook("claude", payload("claude", work, session="a"), task=str(other)).blocks == 1


def test_a_pass_resets_the_count(hook: Hook, homes: dict[str, Path]) -> None:
    work = homes["work"]
    assert hook("codex", payload("codex", work)).blocks == 1
    (work / "done.txt").write_text("x")
    assert hook("codex", payload("codex", work)).action == "pass"
    (work / "done.txt").unlink()  # a later change broke it again: a fresh budget
    assert hook("codex", payload("codex", work)).blocks == 1


def test_state_lives_in_the_data_directory_never_under_the_cwd(
    hook: Hook, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    hook("claude", payload("claude", work))
    [state] = state_files(homes["data"])
    assert state == homes["data"] / "hooks" / "ship" / "s1.json"
    record = json.loads(state.read_text())
    assert record["mac"].startswith("hmac-sha256:")
    assert record["state"]["blocks"] == 1
    assert list(work.iterdir()) == []


def test_max_continuations_zero_never_blocks(hook: Hook, homes: dict[str, Path]) -> None:
    out = hook("claude", payload("claude", homes["work"]), max_continuations=0)
    assert out.action == "escalate" and out.report is not None


def test_a_running_background_task_spends_no_continuation(
    hook: Hook, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    running = [{"id": "a1", "type": "subagent", "status": "running", "description": "sub"}]
    for _ in range(5):  # more than the budget: none of them counts
        out = hook("claude", payload("claude", work, background_tasks=running))
        assert (out.action, out.output, out.blocks) == ("defer", None, 0)
        assert "background work still running (subagent: sub)" in out.log[-1]
        assert "without spending a continuation" in out.log[-1]
    ended = [{**running[0], "status": "completed"}]
    out = hook("claude", payload("claude", work, background_tasks=ended))
    assert (out.action, out.blocks) == ("block", 1)  # the stop after the work ends is judged


def write_claude_tasks(homes: dict[str, Path], session: str, *statuses: str) -> None:
    folder = homes["claude"] / "tasks" / session
    folder.mkdir(parents=True)
    for n, status in enumerate(statuses, 1):
        task = {"id": str(n), "subject": f"step {n}", "status": status}
        (folder / f"{n}.json").write_text(json.dumps(task))


def test_claude_tasks_ticked_complete_do_not_pass_a_failing_check(
    hook: Hook, homes: dict[str, Path]
) -> None:
    write_claude_tasks(homes, "s1", "completed", "completed")
    out = hook("claude", payload("claude", homes["work"]))
    assert out.action == "block"
    assert [t.status for t in out.todos] == ["done", "done"]
    assert out.problems == ("failed checks: file_exists: done.txt (done.txt does not exist)",)


def test_an_open_claude_task_blocks_even_when_the_checks_pass(
    hook: Hook, homes: dict[str, Path]
) -> None:
    (homes["work"] / "done.txt").write_text("x")
    write_claude_tasks(homes, "s1", "completed", "in_progress")
    out = hook("claude", payload("claude", homes["work"]))
    assert out.action == "block"
    assert out.problems == ("open todo items: step 2 (in_progress)",)
    assert out.output is not None and "open todo items: step 2" in out.output["reason"]
    (homes["claude"] / "tasks" / "s1" / "2.json").write_text(
        json.dumps({"id": "2", "subject": "step 2", "status": "completed"})
    )
    assert hook("claude", payload("claude", homes["work"])).action == "pass"


def test_an_unreadable_claude_task_file_counts_as_an_open_item(
    hook: Hook, homes: dict[str, Path]
) -> None:
    (homes["work"] / "done.txt").write_text("x")
    write_claude_tasks(homes, "s1", "completed")
    (homes["claude"] / "tasks" / "s1" / "2.json").write_bytes(b"\xff\x00 not json")
    out = hook("claude", payload("claude", homes["work"]))
    assert out.problems == ("open todo items: task file 2.json (unreadable)",)


def transcript(homes: dict[str, Path], name: str, records: list[dict[str, object]]) -> Path:
    path = homes["claude"] / "projects" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_latest_todowrite_list_in_the_transcript_is_the_claude_checklist(
    hook: Hook, homes: dict[str, Path]
) -> None:
    (homes["work"] / "done.txt").write_text("x")
    old = [{"content": "write a", "status": "in_progress", "activeForm": "Writing a"}]
    new = [{"content": "write a", "status": "completed", "activeForm": "Writing a"},
           {"content": "write b", "status": "pending", "activeForm": "Writing b"}]  # fmt: skip
    path = transcript(homes, "t.jsonl", [
        {"type": "user", "toolUseResult": {"oldTodos": [], "newTodos": old}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}]}},
        {"type": "user", "toolUseResult": {"oldTodos": old, "newTodos": new}},
    ])  # fmt: skip
    out = hook("claude", payload("claude", homes["work"], transcript_path=str(path)))
    assert [(t.text, t.status, t.source) for t in out.todos] == [
        ("write a", "done", "TodoWrite"),
        ("write b", "open", "TodoWrite"),
    ]
    assert out.problems == ("open todo items: write b (pending)",)


def goals_db(homes: dict[str, Path], session: str, status: str) -> None:
    db = sqlite3.connect(homes["codex"] / "goals_1.sqlite")
    db.execute(
        "CREATE TABLE thread_goals (thread_id TEXT PRIMARY KEY NOT NULL, goal_id TEXT NOT NULL, "
        "objective TEXT NOT NULL, status TEXT NOT NULL, token_budget INTEGER, "
        "tokens_used INTEGER NOT NULL DEFAULT 0, time_used_seconds INTEGER NOT NULL DEFAULT 0, "
        "created_at_ms INTEGER, updated_at_ms INTEGER)"
    )
    db.execute(
        "INSERT INTO thread_goals (thread_id, goal_id, objective, status) VALUES (?, ?, ?, ?)",
        (session, "g1", "migrate the six endpoints", status),
    )
    db.execute(
        "INSERT INTO thread_goals (thread_id, goal_id, objective, status) VALUES (?, ?, ?, ?)",
        ("another-thread", "g2", "someone else's goal", "active"),
    )
    db.commit()
    db.close()


def test_a_codex_goal_marked_complete_does_not_pass_a_failing_check(
    hook: Hook, homes: dict[str, Path]
) -> None:
    goals_db(homes, "s1", "complete")
    out = hook("codex", payload("codex", homes["work"]))
    assert out.action == "block"
    assert [(t.text, t.status, t.source) for t in out.todos] == [
        ("migrate the six endpoints", "done", "codex goal")
    ]
    assert out.problems == ("failed checks: file_exists: done.txt (done.txt does not exist)",)


def test_an_active_codex_goal_blocks_even_when_the_checks_pass(
    hook: Hook, homes: dict[str, Path]
) -> None:
    (homes["work"] / "done.txt").write_text("x")
    goals_db(homes, "s1", "active")
    out = hook("codex", payload("codex", homes["work"]))
    assert out.problems == ("open todo items: migrate the six endpoints (active)",)


def test_an_unreadable_codex_goal_store_blocks(hook: Hook, homes: dict[str, Path]) -> None:
    (homes["work"] / "done.txt").write_text("x")
    (homes["codex"] / "goals_1.sqlite").write_bytes(b"this is not a database" * 100)
    out = hook("codex", payload("codex", homes["work"]))
    assert out.action == "block"
    assert out.problems[0].startswith("the agent's todo state could not be read")


def gemini_transcript(homes: dict[str, Path], *lists: list[dict[str, str]]) -> Path:
    path = homes["gemini"] / ".gemini" / "tmp" / "project" / "chats" / "session.jsonl"
    path.parent.mkdir(parents=True)
    records: list[dict[str, object]] = [{"sessionId": "s1", "projectHash": "x"}]
    for n, todos in enumerate(lists):
        call = {"id": f"c{n}", "name": "write_todos", "args": {"todos": todos}}
        records += [
            {"id": f"m{n}", "type": "gemini", "content": "", "toolCalls": [call]},
            {"$set": {"lastUpdated": "2026-12-01T08:13:29.723Z"}},
        ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_latest_gemini_write_todos_is_the_checklist(hook: Hook, homes: dict[str, Path]) -> None:
    (homes["work"] / "done.txt").write_text("x")
    path = gemini_transcript(
        homes,
        [{"description": "a", "status": "in_progress"}],
        [{"description": "a", "status": "completed"}, {"description": "b", "status": "cancelled"}],
    )
    assert hook("gemini", payload("gemini", homes["work"], transcript_path=str(path))).action == (
        "pass"
    )
    path = gemini_transcript_again(path, [{"description": "c", "status": "pending"}])
    out = hook("gemini", payload("gemini", homes["work"], transcript_path=str(path)))
    assert (out.action, out.problems) == ("block", ("open todo items: c (pending)",))


def gemini_transcript_again(path: Path, todos: list[dict[str, str]]) -> Path:
    call = {"id": "late", "name": "write_todos", "args": {"todos": todos}}
    with path.open("a") as handle:
        handle.write(json.dumps({"id": "late", "type": "gemini", "toolCalls": [call]}) + "\n")
    return path


def test_a_stated_blocker_escalates_at_once(hook: Hook, homes: dict[str, Path]) -> None:
    path = gemini_transcript(homes, [{"description": "needs the v2 schema", "status": "blocked"}])
    out = hook("gemini", payload("gemini", homes["work"], transcript_path=str(path)))
    assert (out.action, out.blocks) == ("escalate", 0)
    [report] = reports(homes["data"])
    assert report["reason"].startswith("the agent stated a blocker: open todo items")
    assert report["left"]["open_items"] == [
        {"item": "needs the v2 schema", "status": "blocked", "note": "write_todos: blocked"}
    ]


def test_a_subagent_stop_is_judged_by_its_own_task_and_counted_apart(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    sub = write_task(tmp_path / "sub.yaml", id="sub", checks=[{"file_exists": "sub.txt"}])
    stop = payload("claude", homes["work"], hook_event_name="SubagentStop", agent_id="ag1",
                   last_assistant_message="T3")  # fmt: skip
    out = hook("claude", stop, subagent_task=str(sub))
    assert out.problems == ("failed checks: file_exists: sub.txt (sub.txt does not exist)",)
    assert out.state == homes["data"] / "hooks" / "sub" / "s1--ag1.json"
    (homes["work"] / "sub.txt").write_text("x")
    assert hook("claude", stop, subagent_task=str(sub)).action == "pass"
    # without --subagent-task the main task judges the subagent too
    codex_stop = payload("codex", homes["work"], hook_event_name="SubagentStop", agent_id="ag2")
    out = hook("codex", codex_stop)
    assert out.problems == ("failed checks: file_exists: done.txt (done.txt does not exist)",)
    assert out.state == homes["data"] / "hooks" / "ship" / "s1--ag2.json"


def test_a_check_still_running_at_the_deadline_is_a_failed_check_named_so(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    slow = write_task(
        tmp_path / "slow.yaml",
        checks=[{"run": ["sleep", "30"], "name": "slow"}, {"file_exists": "x", "name": "later"}],
    )
    started = time.monotonic()
    out = hook("gemini", payload("gemini", homes["work"]), task=str(slow), deadline=5)
    elapsed = time.monotonic() - started
    assert elapsed < 5 + 1  # within the deadline (the hook keeps a reserve), plus a second
    assert out.action == "block"
    [slow_check, later] = out.checks
    assert (slow_check.name, slow_check.passed) == ("slow", False)
    assert slow_check.detail.startswith("still running at the hook's deadline")
    assert (later.passed, later.detail) == (False, "not run: the hook's deadline (5s) was reached")


def test_judge_reports_every_gate_in_one_look(homes: dict[str, Path], tmp_path: Path) -> None:
    from donegate.harness.agents import AGENTS
    from donegate.harness.spec import load_task

    spec = load_task(write_task(tmp_path / "t.yaml"))
    event = AGENTS["claude"].parse(payload("claude", homes["work"]))
    write_claude_tasks(homes, "s1", "pending")
    found = judge(spec, AGENTS["claude"], event, root=homes["work"], manifest=None,
                  deadline=time.monotonic() + 30)  # fmt: skip
    assert found.problems == (
        "open todo items: step 1 (pending)",
        "failed checks: file_exists: done.txt (done.txt does not exist)",
    )
