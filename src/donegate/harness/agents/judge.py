"""What one look at the world finds at a stop: checks, protected files, the agent's todo state.

Also the signed certificate of a passing stop and the protected-file baseline it is judged
against.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from donegate.harness.agents import protected
from donegate.harness.agents.base import AgentCLI, StopEvent, TodoStateError
from donegate.harness.agents.call import HookCall, exec_record
from donegate.harness.agents.deadline import run_checks_by
from donegate.harness.agents.report import certify
from donegate.harness.agents.state import CheckBrief, HookState, TodoRecord
from donegate.harness.agents.transcript import locate
from donegate.harness.poison import review_changes
from donegate.harness.spec import TaskSpec
from donegate.records.checklist import TodoItem
from donegate.records.judgement import Judgement, TranscriptRef
from donegate.records.status import ItemStatus

__all__ = [
    "NOT_LISTED",
    "baseline",
    "certify_stop",
    "checklist_gaps",
    "judge",
    "pointer",
    "round_data",
    "transcript_roots",
    "with_checklist",
]


NOT_LISTED = "not in the agent's todo list"
"""The status of a task checklist item the agent's own list does not hold (it is open)."""


def checklist_gaps(texts: Sequence[str], checklist: Sequence[str]) -> list[str]:
    """The task's checklist items that no item of the agent's list (`texts`) names: case and
    spacing aside, the same text."""
    held = {_plain(t) for t in texts}
    return [item for item in checklist if _plain(item) not in held]


def with_checklist(todos: Sequence[TodoItem], checklist: Sequence[str]) -> tuple[TodoItem, ...]:
    """The agent's todo items joined by the task's ``checklist:``: an item its list holds takes
    the agent's status; one it does not hold is open, and blocks like any open item."""
    missing = checklist_gaps([t.text for t in todos], checklist)
    return (*todos, *(TodoItem(text=item, status=ItemStatus.OPEN, raw_status=NOT_LISTED,
                               source="task checklist") for item in missing))  # fmt: skip


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


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
    freeze: tuple[int, ...] = (),
) -> Judgement:
    """Look at the world for one stop: checks, protected files, the agent's todo state.

    The checks must end by `deadline` (`time.monotonic()`); `deadline_s` names it in details.
    The process trees under `freeze` (the agent's sandbox, under exec) are stopped while the
    clean room copies the workdir.
    """
    ref = locate(event.transcript_path, transcript_roots(agent, root))
    problems: list[str] = []
    changes = protected.changes(manifest, root)
    problems.extend(changes)
    review = review_changes(protected.manifest(manifest, root), spec.checks)
    problems.extend(review.problems(verifier=False))
    try:
        todos = tuple(agent.todos(event, ref))
    except TodoStateError as exc:
        todos = ()
        problems.append(f"the agent's todo state could not be read ({exc})")
    todos = with_checklist(todos, spec.checklist)
    open_items = [t for t in todos if t.status != "done"]
    if open_items:
        problems.append(
            "open todo items: " + ", ".join(f"{t.text} ({t.raw_status})" for t in open_items)
        )
    ran = tuple(
        run_checks_by(
            spec.checks,
            root,
            deadline=deadline,
            check_timeout=check_timeout,
            label_s=deadline_s,
            snapshot_of=protected.manifest(manifest, root),
            freeze=freeze,
        )
    )
    checks = review.results(verifier=False) + ran
    failed = [c for c in ran if not c.passed]
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
        task_file=call.options.task,
    )


def baseline(
    call: HookCall, spec: TaskSpec, root: Path, task_path: str, session: str | None = None
) -> dict[str, Any]:
    """The protected-file digests to judge against: exec's (taken before the agent ran), else now.

    Without a session-start hook or exec, the first stop is the earliest the hook sees the
    workdir: changes made before it cannot be seen (install registers a session-start hook).
    """
    if call.options.exec_run:
        record = exec_record(call.options.exec_run) or {}
        if isinstance(record.get("protected"), dict):
            manifest: dict[str, Any] = record["protected"]
            return manifest
    return protected.take(spec, root, task_path, session=session)
