"""One hook call: its options, its answer, and the (task, session) state record it keeps.

`HookCall` carries what a call has learned so far (the parsed payload, the state store in use,
lines for stderr); the helpers here load and save the state record, where a record that fails
validation is tampering, and tell a running ``donegate exec`` what each call decided.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from donegate.config import data_dir, data_path
from donegate.harness.agents.base import AgentCLI, StopEvent, safe_id
from donegate.harness.agents.state import CLAIM_CAP, HookState, Round, StateStore, TamperedState
from donegate.harness.spec import TaskSpec
from donegate.records.check import CheckResult
from donegate.records.checklist import TodoItem

__all__ = [
    "FALLBACK_BUDGET",
    "RESERVE_S",
    "HookCall",
    "HookOptions",
    "HookOutcome",
    "absolute",
    "budget_of",
    "cap_claim",
    "choose_store",
    "exec_dir",
    "exec_record",
    "load_state",
    "report_to_exec",
    "save_state",
    "state_root",
    "temporary_root",
]


FALLBACK_BUDGET = 3
"""Blocks a hook error may cost when the task (and so its ``max_continuations``) is unreadable."""
RESERVE_S = 1.5
"""Seconds of the deadline kept for writing state and reports after the checks."""

HookAction = Literal["block", "pass", "defer", "escalate", "open"]


@dataclass(frozen=True, kw_only=True, slots=True)
class HookOptions:
    """How the hook was asked to run (the command line, mostly)."""

    task: str | None
    """The task file (None: the command line gave none, which is itself a hook error)."""
    subagent_task: str | None = None
    """The task judging subagent stops (the main task when unset)."""
    deadline: float | None = None
    """Seconds the hook may take (the CLI's default when unset)."""
    fail_open: bool = False
    """Let the stop through when the hook itself fails (default: block, counted)."""
    max_continuations: int | None = None
    """Override the task's ``max_continuations`` (and an exec run's budget): an explicit
    ``--max-continuations`` wins; without it the hook reads the budget itself (`budget_of`)."""
    budget_usd: float | None = None
    """Override the task's ``budget.usd`` (``exec --budget-usd`` hands it to its hooks)."""
    budget_tokens: int | None = None
    """Override the task's ``budget.tokens``."""
    exec_run: str | None = None
    """The ``donegate exec`` run id this hook reports to."""
    check_timeout: float = 120.0
    """A check's timeout when it sets none (the deadline still bounds it)."""
    usage_error: str | None = None
    """A command-line problem found before the hook ran: a hook error, failed closed."""
    freeze: tuple[int, ...] = ()
    """Processes whose trees stop while the hook looks at the world (the agent's sandbox under
    ``donegate exec``, handed in by its gateway), so nothing changes the files mid-look."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HookOutcome:
    """What the hook decided, and what to print."""

    action: HookAction
    """``block``; ``pass`` (done); ``defer`` (work running); ``escalate``; ``open`` (fail-open)."""
    output: dict[str, Any] | None
    """The JSON answer for stdout (None: print nothing, the stop goes ahead)."""
    log: tuple[str, ...] = ()
    """Lines for stderr."""
    blocks: int = 0
    budget: int = 0
    checks: tuple[CheckResult, ...] = ()
    todos: tuple[TodoItem, ...] = ()
    problems: tuple[str, ...] = ()
    report: Path | None = None
    """The escalation report this call wrote."""
    certificate: Path | None = None
    """The certificate this call wrote (a passing main-agent stop outside ``exec``)."""
    state: Path | None = None
    """The state record this call wrote."""
    error: str | None = None
    """The hook's own failure, when this was one."""


@dataclass(kw_only=True)
class HookCall:
    """What one hook call has learned so far; every step of the decision reads and adds to it."""

    agent: AgentCLI
    """The CLI whose hook this is."""
    options: HookOptions
    """How the hook was asked to run."""
    started: float
    """`time.monotonic()` when the call began (its deadline counts from here)."""
    store: StateStore
    """Where state records live (a private temporary one when the data directory is unusable)."""
    store_error: str | None = None
    """Why the data directory could not be used, if it could not."""
    event: StopEvent | None = None
    """The parsed stop, once parsed."""
    payload: dict[str, Any] | None = None
    """The raw JSON payload, once read."""
    log: list[str] = field(default_factory=list)
    """Lines for stderr."""

    @property
    def deadline_at(self) -> float:
        """When the hook must have answered (`time.monotonic()`)."""
        seconds = self.options.deadline or self.agent.default_deadline
        return self.started + seconds

    @property
    def session(self) -> str | None:
        """The session id, from the parsed stop or (unparsed) the raw payload."""
        if self.event is not None:
            return self.event.session_id
        session = (self.payload or {}).get("session_id")
        return session if isinstance(session, str) and session else None


def state_root() -> Path:
    """Where hook state lives: ``data_dir()/hooks``."""
    return data_path("hooks")


def exec_dir(run_id: str) -> Path:
    """The record folder of one ``donegate exec`` run."""
    return data_path("exec") / safe_id(run_id)


def choose_store(call: HookCall) -> None:
    """The data directory's state folder, or (it being unusable) a private temporary one."""
    root = call.store.root
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not os.access(root, os.W_OK | os.X_OK):
            raise PermissionError(f"{root} is not writable")
    except (OSError, ValueError) as exc:
        call.store_error = f"the data directory is unusable ({data_dir()}): {exc}"
        call.store = StateStore(temporary_root())


def temporary_root() -> Path:
    """A private folder under the temp directory, when the data directory is unusable."""
    base = Path(tempfile.gettempdir()) / f"donegate-{os.getuid()}"
    with contextlib.suppress(OSError):
        base.mkdir(mode=0o700, exist_ok=True)
    return base / "hooks"


def load_state(
    call: HookCall, path: Path, task: str, task_path: str
) -> tuple[HookState, str | None]:
    """The record at `path` or a fresh one; a tampered record becomes fault rounds."""
    event = call.event
    fresh: dict[str, Any] = {
        "agent": call.agent.name or "unknown",
        "task": task,
        "task_path": absolute(task_path),
        "session_id": call.session or "no-session",
        "subagent_id": event.subagent_id if event is not None else None,
        "exec_run": call.options.exec_run,
    }
    try:
        found = call.store.load(path)
    except OSError as exc:  # not a record that failed validation: one the hook cannot read
        return HookState(**fresh), f"cannot read the hook state {path}: {exc.strerror or exc}"
    except TamperedState as exc:
        earlier = max(0, call.store.tampered_count(path) - 1)
        rounds = [
            Round(at=time.time(), event="(tampered)", outcome="fault",
                  error="an earlier hook state record of this session failed validation")
            for _ in range(earlier)
        ]  # fmt: skip
        state = HookState(**fresh, rounds=rounds, blocks=len(rounds))
        where = f" (kept as {exc.quarantined})" if exc.quarantined else ""
        return state, f"{exc.reason}{where}: treated as tampering"
    return (found if found is not None else HookState(**fresh)), None


def save_state(call: HookCall, path: Path, state: HookState) -> Path | None:
    """Write the record; None (and a stderr line) when it cannot be written."""
    try:
        call.store.save(path, state)
        return path
    except (OSError, ValueError) as exc:
        call.log.append(f"donegate hook: cannot write the hook state {path}: {exc}")
        return None


def budget_of(call: HookCall, spec: TaskSpec | None) -> int:
    """Blocks allowed, from one source each in turn: an explicit ``--max-continuations``; the
    ``donegate exec`` run's budget (its record, written before the agent started, holds the
    task's ``max_continuations`` or exec's own override); the task's; else `FALLBACK_BUDGET`.

    Exec writes no ``--max-continuations`` into the hook's command line: the budget is read
    here, from the record exec keeps in the data directory, not parsed back from argv.
    """
    if call.options.max_continuations is not None:
        return call.options.max_continuations
    if call.options.exec_run:
        budget = (exec_record(call.options.exec_run) or {}).get("budget")
        if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 0:
            return budget
    return spec.max_continuations if spec is not None else FALLBACK_BUDGET


def exec_record(run_id: str) -> dict[str, Any] | None:
    """The ``run.json`` record of the ``donegate exec`` run `run_id`; None when it cannot be
    read or is not a JSON object."""
    with contextlib.suppress(OSError, ValueError):
        record = json.loads((exec_dir(run_id) / "run.json").read_text(encoding="utf-8"))
        if isinstance(record, dict):
            return record
    return None


def report_to_exec(
    call: HookCall,
    event: StopEvent,
    outcome: str,
    state: HookState,
    reason: str,
    *,
    report: Path | None = None,
) -> None:
    """Tell a running ``donegate exec`` what happened (its progress and its decision read this)."""
    run = call.options.exec_run
    if not run:
        return
    line = {
        "at": time.time(),
        "agent": call.agent.name,
        "event": event.event_name,
        "session_id": event.session_id,
        "subagent_id": event.subagent_id,
        "outcome": outcome,
        "blocks": state.blocks,
        "reason": reason,
        "report": str(report) if report is not None else state.escalated,
        "certificate": state.rounds[-1].certificate if state.rounds else None,
        "todos": [t.model_dump() for t in (state.rounds[-1].todos if state.rounds else [])],
    }
    try:
        folder = exec_dir(run)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(folder / "events.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as exc:
        call.log.append(f"donegate hook: cannot report to exec run {run}: {exc}")


def absolute(path: str) -> str:
    """`path` made absolute when it can be (a task path names the fallback state record)."""
    try:
        return os.path.abspath(path)
    except (ValueError, OSError):
        return path


def cap_claim(text: str | None) -> str | None:
    """The claim cut to `CLAIM_CAP` characters for the state record."""
    if text is None or len(text) <= CLAIM_CAP:
        return text
    return text[: CLAIM_CAP - 20] + " [... cut by donegate]"
