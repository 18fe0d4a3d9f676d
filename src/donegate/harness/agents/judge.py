"""What one look at the world finds at a stop: checks, protected files, the agent's todo state.

Also the signed certificate of a passing stop and the protected-file baseline it is judged
against.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from donegate.harness.agents import protected
from donegate.harness.agents.base import AgentCLI, StopEvent, TodoItem, TodoStateError
from donegate.harness.agents.call import HookCall, exec_dir
from donegate.harness.agents.deadline import run_checks_by
from donegate.harness.agents.report import certify
from donegate.harness.agents.state import CheckBrief, HookState, TodoRecord
from donegate.harness.agents.transcript import TranscriptRef, locate
from donegate.harness.checks import CheckResult
from donegate.harness.spec import TaskSpec

__all__ = [
    "Judgement",
    "baseline",
    "certify_stop",
    "judge",
    "pointer",
    "round_data",
    "transcript_roots",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Judgement:
    """What one look at the world found: checks, protected files, the agent's todo state."""

    checks: tuple[CheckResult, ...]
    todos: tuple[TodoItem, ...]
    problems: tuple[str, ...]
    """Empty when the stop may pass."""
    transcript: TranscriptRef

    @property
    def stated_blocker(self) -> bool:
        """Every open item is one the agent marked blocked (and at least one is)."""
        open_items = [t for t in self.todos if t.status != "done"]
        return bool(open_items) and all(t.status == "blocked" for t in open_items)


def judge(
    spec: TaskSpec,
    agent: AgentCLI,
    event: StopEvent,
    *,
    root: Path,
    manifest: dict[str, Any] | None,
    deadline: float,
    check_timeout: float = 120.0,
    deadline_s: float | None = None,
) -> Judgement:
    """Look at the world for one stop: checks, protected files, the agent's todo state.

    The checks must end by `deadline` (`time.monotonic()`); `deadline_s` names it in details.
    """
    ref = locate(event.transcript_path, transcript_roots(agent, root))
    problems: list[str] = []
    changes = protected.changes(manifest, root)
    problems.extend(changes)
    try:
        todos = tuple(agent.todos(event, ref))
    except TodoStateError as exc:
        todos = ()
        problems.append(f"the agent's todo state could not be read ({exc})")
    open_items = [t for t in todos if t.status != "done"]
    if open_items:
        problems.append(
            "open todo items: " + ", ".join(f"{t.text} ({t.raw_status})" for t in open_items)
        )
    checks = tuple(
        run_checks_by(
            spec.checks, root, deadline=deadline, check_timeout=check_timeout, label_s=deadline_s
        )
    )
    failed = [c for c in checks if not c.passed]
    if failed:
        problems.append("failed checks: " + ", ".join(f"{c.name} ({c.detail})" for c in failed))
    return Judgement(checks=checks, todos=todos, problems=tuple(problems), transcript=ref)


def round_data(found: Judgement) -> dict[str, Any]:
    """A judgement as the fields of a state record's round."""
    return {
        "checks": [CheckBrief(name=c.name, passed=c.passed, detail=c.detail) for c in found.checks],
        "todos": [TodoRecord.model_validate(t.as_data()) for t in found.todos],
        "problems": list(found.problems),
    }


def transcript_roots(agent: AgentCLI, root: Path) -> list[Path]:
    """The CLI's data folders, and the session's cwd unless it is ``/`` or the home folder."""
    roots = list(agent.data_roots())
    if root != Path(root.anchor) and root != Path.home().resolve():
        roots.append(root)
    return roots


def pointer(call: HookCall) -> TranscriptRef:
    """Where the transcript is, for a report written without a judgement (a hook error)."""
    event = call.event
    if event is None:
        return TranscriptRef(path=None, note="the payload could not be read")
    with contextlib.suppress(OSError, ValueError):
        return locate(event.transcript_path, transcript_roots(call.agent, event.cwd.resolve()))
    return TranscriptRef(path=event.transcript_path, note="not located")


def certify_stop(
    call: HookCall,
    spec: TaskSpec,
    state: HookState,
    event: StopEvent,
    *,
    root: Path,
    found: Judgement,
) -> Path | None:
    """The signed certificate of a session's passing stop (under ``exec``, exec writes it).

    A subagent's stop is not the session's end: it gets none. A certificate that cannot be
    written is a hook error (`OSError`, `UserError` from the signing key): the stop is not done.
    """
    if event.kind != "stop" or call.options.exec_run:
        return None
    agent: dict[str, Any] = {"name": call.agent.name, "session_id": event.session_id}
    model = event.payload.get("model")
    if isinstance(model, str):
        agent["model"] = model
    return certify(
        spec,
        root=root,
        checks=found.checks,
        manifest=state.protected,
        agent=agent,
        started=state.rounds[0].at if state.rounds else time.time(),
        continuations=state.blocks,
        transcript=found.transcript,
        todos=found.todos,
    )


def baseline(call: HookCall, spec: TaskSpec, root: Path, task_path: str) -> dict[str, Any]:
    """The protected-file digests to judge against: exec's (taken before the agent ran), else now.

    Without a session-start hook or exec, the first stop is the earliest the hook sees the
    workdir: changes made before it cannot be seen (install registers a session-start hook).
    """
    if call.options.exec_run:
        with contextlib.suppress(OSError, ValueError):
            record = json.loads((exec_dir(call.options.exec_run) / "run.json").read_text())
            if isinstance(record, dict) and isinstance(record.get("protected"), dict):
                manifest: dict[str, Any] = record["protected"]
                return manifest
    return protected.take(spec, root, task_path)
