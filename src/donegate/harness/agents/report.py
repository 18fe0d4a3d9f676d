"""The escalation report of a hook's session: every round's claim, what failed, the todo state.

A hook session escalates when its budget of blocks is spent (or the agent states a blocker, or
the hook itself kept failing). The report is the harness's usual one (`escalation.build_report`)
built from the hook's state: each blocked or failed round with its claim, failed checks, the
agent's todo items and the hook's own error; the last look at the world; and a pointer to the
transcript (path, SHA-256, size), never the transcript itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from donegate.harness.agents.base import TodoItem
from donegate.harness.agents.state import HookState
from donegate.harness.agents.transcript import TranscriptRef
from donegate.harness.checks import CheckResult
from donegate.harness.escalation import build_report
from donegate.harness.spec import TaskSpec

__all__ = ["hook_report"]

_REPORTED = ("blocked", "fault", "escalated")


def hook_report(
    state: HookState,
    *,
    spec: TaskSpec | None,
    reason: str,
    budget: int,
    checks: Sequence[CheckResult],
    todos: Sequence[TodoItem],
    transcript: TranscriptRef,
    agent_title: str,
    cwd: Path | None,
    state_path: Path,
) -> dict[str, Any]:
    """The report as plain values (`escalation.write_report` writes it)."""
    rounds = [r for r in state.rounds if r.outcome in _REPORTED]
    return build_report(
        task_id=spec.id if spec is not None else state.task,
        reason=reason,
        prompt=spec.prompt if spec is not None else "",
        completion_condition=spec.completion_condition if spec is not None else "",
        continuations=state.blocks,
        max_continuations=budget,
        checklist=[
            {"item": t.text, "status": t.status, "note": f"{t.source}: {t.raw_status}"}
            for t in todos
        ],
        checks=checks,
        rounds=[
            {
                "round": i + 1,
                "step": f"{r.event} #{i + 1}",
                "claim": r.claim or f"({agent_title or 'the agent'} stopped)",
                "problems": [*r.problems, *([f"hook error: {r.error}"] if r.error else [])],
                "failed_checks": [c.name for c in r.checks if not c.passed],
                "todos": [t.model_dump() for t in r.todos],
                "error": r.error,
                "verdict": "escalate" if r.outcome == "escalated" else "continue",
            }
            for i, r in enumerate(rounds)
        ],
        transcript=(),
        extra={
            "agent": state.agent,
            "session_id": state.session_id,
            "subagent_id": state.subagent_id,
            "task_path": state.task_path,
            "cwd": str(cwd) if cwd is not None else None,
            "last_claim": rounds[-1].claim if rounds else None,
            "errors": [r.error for r in state.rounds if r.error],
            "hook_state": str(state_path),
            "transcript": transcript.as_data(),  # a pointer: the transcript is never copied
        },
    )
