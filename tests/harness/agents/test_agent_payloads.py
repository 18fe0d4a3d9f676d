"""Every payload captured from the real CLIs parses to the event the gate decides on, and each CLI
gets the answer it documents (the reasons the CLIs relayed to the model are ours, verbatim)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import EXAMPLES, Hook, payload, write_task

from donegate.harness.agents import AGENTS
from donegate.harness.agents.base import HookInputError, parse_payload

STDIN = sorted(EXAMPLES.glob("*-stdin.json"))


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text())
    return data


def test_every_captured_payload_is_covered() -> None:
    assert [p.name for p in STDIN] == [
        "claude-2.1.197-stop-stdin.json",
        "claude-2.1.332-stop-stdin.json",
        "claude-2.1.332-subagentstop-stdin.json",
        "codex-0.171.0-stop-stdin.json",
        "gemini-0.61.0-afteragent-stdin.json",
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "claude-2.1.197-stop-stdin.json",
            {"kind": "stop", "event_name": "Stop", "subagent_id": None, "running": (),
             "session_id": "34d943a8-498e-49ed-8d78-c0e608078f5d",
             "transcript_path": "/home/dev/.claude/projects/-home-dev-project/"
             "34d943a8-498e-49ed-8d78-c0e608078f5d.jsonl"},
        ),
        (
            "claude-2.1.332-stop-stdin.json",
            {"kind": "stop", "event_name": "Stop", "subagent_id": None, "running": (),
             "session_id": "872ce7dd-f038-46a5-8001-3360b8425b27"},
        ),
        (
            "claude-2.1.332-subagentstop-stdin.json",
            {"kind": "subagent_stop", "event_name": "SubagentStop",
             "subagent_id": "a8678e88d6687929e", "claim": "T3", "running": (),
             "transcript_path": "/home/dev/.claude/projects/-home-dev-project/"
             "0e1d6d27-c6bc-434f-a4cf-2aa134b9b0f0/subagents/agent-a8678e88d6687929e.jsonl"},
        ),
        (
            "codex-0.171.0-stop-stdin.json",
            {"kind": "stop", "event_name": "Stop", "subagent_id": None,
             "session_id": "01a230a7-8fc9-7bc1-bee7-308b37aeb959",
             "transcript_path": "/home/dev/.codex/sessions/2026/12/01/rollout-2026-12-01T08-10-"
             "17-01a230a7-8fc9-7bc1-bee7-308b37aeb959.jsonl"},
        ),
        (
            "gemini-0.61.0-afteragent-stdin.json",
            {"kind": "stop", "event_name": "AfterAgent", "subagent_id": None,
             "session_id": "c4ab4843-c207-44ac-a3be-04e78d361f4a"},
        ),
    ],
)  # fmt: skip
def test_each_captured_payload_parses(name: str, expected: dict[str, Any]) -> None:
    agent = AGENTS[name.split("-", maxsplit=1)[0]]
    event = agent.parse(parse_payload((EXAMPLES / name).read_bytes()))
    assert event.agent == agent.name
    assert event.cwd == Path("/home/dev/project")
    assert event.stop_hook_active is False
    expected.setdefault("claim", "Progress: a.txt written, b.txt next.")
    for field, value in expected.items():
        assert getattr(event, field) == value, field


def test_a_running_background_subagent_is_seen_at_a_main_stop_only() -> None:
    data = load("claude-2.1.332-subagentstop-stdin.json")
    claude = AGENTS["claude"]
    assert claude.parse(data).running == ()  # a subagent's own stop is judged, not deferred
    main = {**data, "hook_event_name": "Stop"}
    assert claude.parse(main).running == ("subagent: sub task",)
    finished = {**main, "background_tasks": [{**data["background_tasks"][0], "status": "done"}]}
    assert claude.parse(finished).running == ()


def test_gemini_judges_the_newest_part_of_its_accumulating_response() -> None:
    gemini = AGENTS["gemini"]
    first = "Progress: a.txt written, b.txt next."
    later = first + "\nb.txt written. All done."
    assert gemini.newest_claim(first, None) == first
    assert gemini.newest_claim(later, first) == "b.txt written. All done."
    assert gemini.newest_claim("a new prompt's answer", first) == "a new prompt's answer"
    assert AGENTS["claude"].newest_claim(later, first) == later  # Claude's claim is the turn


@pytest.mark.parametrize(
    ("agent", "decision"), [("claude", "block"), ("codex", "block"), ("gemini", "deny")]
)
def test_each_cli_gets_the_answer_it_documents(
    agent: str, decision: str, hook: Hook, homes: dict[str, Path]
) -> None:
    out = hook(agent, payload(agent, homes["work"]))
    assert out.action == "block"
    assert out.output == {
        "decision": decision,
        "reason": "Not done yet: failed checks: file_exists: done.txt (done.txt does not exist). "
        "Continue, or state the blocker.",
    }


def _relayed_reason(name: str) -> str:
    """The hook reason inside what a Claude Code version sent the model."""
    messages = load(name)
    user = messages[0]["content"]
    text = user if isinstance(user, str) else user[0]["text"]
    reason = text.split("Stop hook feedback:\n", 1)[1]
    return reason.removesuffix("\n</system-reminder>")


@pytest.mark.parametrize(
    "name", ["claude-2.1.197-reason-as-sent.json", "claude-2.1.332-reason-as-sent.json"]
)
def test_the_reason_claude_code_relayed_is_the_one_the_hook_gives(
    name: str, hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    # The capture's task: a.txt and b.txt; the agent wrote a.txt only.
    task = write_task(tmp_path / "ab.yaml", checks=[{"file_exists": "b.txt"}])
    (homes["work"] / "a.txt").write_text("a")
    out = hook("claude", payload("claude", homes["work"]), task=str(task))
    assert out.output is not None
    assert out.output["reason"] == _relayed_reason(name)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_payload_missing_what_the_gate_needs_is_refused_by_name(agent: str) -> None:
    cli = AGENTS[agent]
    good = load(
        {
            "claude": "claude-2.1.332-stop-stdin.json",
            "codex": "codex-0.171.0-stop-stdin.json",
            "gemini": "gemini-0.61.0-afteragent-stdin.json",
        }[agent]
    )
    for bad, message in [
        ({**good, "session_id": ""}, "session_id"),
        ({**good, "hook_event_name": "PreToolUse"}, "hook_event_name"),
        ({**good, "cwd": 7}, "cwd"),
        ({**good, "stop_hook_active": "yes"}, "stop_hook_active"),
    ]:
        with pytest.raises(HookInputError, match=message):
            cli.parse(bad)
