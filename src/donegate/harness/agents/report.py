"""What a gated agent session leaves: a signed certificate when done, or an escalation report.

`certify` writes the harness's certificate (`certificate.build_certificate`, signed) for an
agent CLI's session: the checks that passed, the protected-file manifest, which CLI it was, and
a pointer to its transcript. It carries no evidence records or messages of donegate's own: the
agent ran its own tools, so what the certificate proves is the checks, not the path there.

A hook session escalates when its budget of blocks is spent (or the agent states a blocker, or
the hook itself kept failing). The report is the harness's usual one (`escalation.build_report`)
built from the hook's state: each blocked or failed round with its claim, failed checks, the
agent's todo items and the hook's own error; the last look at the world; and a pointer to the
transcript (path, SHA-256, size), never the transcript itself.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from donegate.config import data_path
from donegate.harness.agents import protected
from donegate.harness.agents.state import HookState
from donegate.harness.spec import TaskSpec
from donegate.records.check import CheckResult
from donegate.records.checklist import TodoItem
from donegate.records.judgement import TranscriptRef

if TYPE_CHECKING:
    from donegate.records.report import EscalationReport

# The escalation report's module and models are imported when a session escalates, and the
# certificate's when a stop passes: a stop that blocks (most stops of a session) builds neither.

__all__ = ["certify", "hook_report"]

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
) -> EscalationReport:
    """The report (`escalation.write_report` writes it)."""
    from donegate.harness.escalation import build_report
    from donegate.records.report import Claim

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
            Claim(
                round=i + 1,
                step=f"{r.event} #{i + 1}",
                claim=r.claim or f"({agent_title or 'the agent'} stopped)",
                problems=(*r.problems, *([f"hook error: {r.error}"] if r.error else [])),
                failed_checks=tuple(c.name for c in r.checks if not c.passed),
                todos=tuple(t.model_dump() for t in r.todos),
                error=r.error,
                verdict="escalate" if r.outcome == "escalated" else "continue",
            )
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


def certify(
    spec: TaskSpec,
    *,
    root: Path,
    checks: Sequence[CheckResult],
    manifest: Mapping[str, Any] | None,
    agent: Mapping[str, Any],
    started: float,
    continuations: int,
    transcript: TranscriptRef | None = None,
    todos: Sequence[TodoItem] = (),
    task_file: str | Path | None = None,
) -> Path:
    """Write the signed certificate of a session whose checks passed; its path.

    `agent` names the CLI (``name``, and what else is known: ``version``, ``exit_code``,
    ``session_id``); the certificate goes under ``data_dir()/certificates``.
    """
    from donegate.harness.certificate import build_certificate, write_certificate
    from donegate.harness.evidence import Evidence

    name = " ".join(str(agent[k]) for k in ("name", "version") if agent.get(k))
    cert = build_certificate(
        spec=spec,
        workdir=root,
        checks=checks,
        evidence=Evidence(),
        transcript=[],
        models={"agent": name or None},
        started_at=started,
        finished_at=time.time(),
        continuations=continuations,
        model_calls=0,
        checklist=[{"item": t.text, "status": t.status, "note": t.source} for t in todos],
        protected=protected.manifest(dict(manifest) if manifest else None, root),
        agent=agent,
        agent_transcript=transcript.as_data() if transcript is not None else None,
        task_file=task_file,
    )
    return write_certificate(cert, data_path("certificates"))
