"""The gate's decision at one stop of an agent CLI, shared by every CLI's hook.

`run_hook` never raises and always has an answer:

1. Parse the payload (the CLI module's `AgentCLI.parse`) and load the task.
2. Load the (task, session) state from the data directory; a record that fails validation is
   tampering, handled as a hook error (4).
3. A session start records the protected-file digests and lets the session begin. A stop while
   the CLI reports background work running is let through without spending a continuation
   (the CLI wakes the agent again when that work ends).
4. Judge the stop: the task's checks against the hook's deadline, the protected files against
   the digests taken at the start, the agent's own todo/goal state (an open item blocks; a
   ticked one is only the model's account). Nothing open: the stop passes and the count resets.
   Otherwise block with a nudge naming what is missing, until ``max_continuations`` blocks are
   spent; then write an escalation report (once) and let the stop through. When every open
   item is one the agent marked blocked, it has stated its blocker: escalate at once.
5. Any error in 1-4 (bad stdin, an unreadable task, a crashing check, unusable state, a bad
   ``DONEGATE_HOME``) fails closed: a block whose reason names the error, counted against the
   budget (`FALLBACK_BUDGET` when the task itself cannot be read), and once the budget is
   spent the stop is let through with an escalation report recording the error. With
   ``fail_open`` an error lets the stop through instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from donegate.config import data_dir
from donegate.errors import UserError
from donegate.harness.agents import protected
from donegate.harness.agents.base import (
    AgentCLI,
    HookInputError,
    StopEvent,
    TodoItem,
    TodoStateError,
    parse_payload,
    safe_id,
)
from donegate.harness.agents.deadline import GRACE_S, run_checks_by
from donegate.harness.agents.state import (
    CLAIM_CAP,
    CheckBrief,
    HookState,
    Round,
    StateStore,
    TamperedState,
    TodoRecord,
)
from donegate.harness.agents.transcript import TranscriptRef, locate
from donegate.harness.checks import CheckResult
from donegate.harness.escalation import build_report, write_report
from donegate.harness.gate import nudge_text
from donegate.harness.spec import TaskSpec, load_task

__all__ = [
    "FALLBACK_BUDGET",
    "RESERVE_S",
    "HookOptions",
    "HookOutcome",
    "exec_dir",
    "judge",
    "run_hook",
    "state_root",
]

FALLBACK_BUDGET = 3
"""Blocks a hook error may cost when the task (and so its ``max_continuations``) is unreadable."""
RESERVE_S = 1.5
"""Seconds of the deadline kept for writing state and reports after the checks."""

Action = Literal["block", "pass", "defer", "escalate", "open"]


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
    """Override the task's ``max_continuations``."""
    exec_run: str | None = None
    """The ``donegate exec`` run id this hook reports to."""
    check_timeout: float = 120.0
    """A check's timeout when it sets none (the deadline still bounds it)."""
    usage_error: str | None = None
    """A command-line problem found before the hook ran: a hook error, failed closed."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HookOutcome:
    """What the hook decided, and what to print."""

    action: Action
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
    state: Path | None = None
    """The state record this call wrote."""
    error: str | None = None
    """The hook's own failure, when this was one."""


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


@dataclass(kw_only=True)
class _Call:
    agent: AgentCLI
    options: HookOptions
    started: float
    store: StateStore
    store_error: str | None = None
    event: StopEvent | None = None
    payload: dict[str, Any] | None = None
    log: list[str] = field(default_factory=list)

    @property
    def deadline_at(self) -> float:
        seconds = self.options.deadline or self.agent.default_deadline
        return self.started + seconds

    @property
    def session(self) -> str | None:
        if self.event is not None:
            return self.event.session_id
        session = (self.payload or {}).get("session_id")
        return session if isinstance(session, str) and session else None


def state_root() -> Path:
    """Where hook state lives: ``data_dir()/hooks``."""
    return data_dir() / "hooks"


def exec_dir(run_id: str) -> Path:
    """The record folder of one ``donegate exec`` run."""
    return data_dir() / "exec" / safe_id(run_id)


def run_hook(
    agent: AgentCLI, stdin_text: str | bytes, options: HookOptions, *, started: float | None = None
) -> HookOutcome:
    """Decide one hook call; never raises (an error is a counted block, or a pass if fail-open)."""
    call = _Call(
        agent=agent,
        options=options,
        started=time.monotonic() if started is None else started,
        store=StateStore(state_root()),
    )
    try:
        return _run(call, stdin_text)
    except Exception as exc:  # the last net: a bug in the error path itself still blocks
        call.log.append(
            "donegate hook: internal error: " + "".join(traceback.format_exception(exc))
        )
        return _last_resort(call, f"internal error: {type(exc).__name__}: {exc}")


def _run(call: _Call, stdin_text: str | bytes) -> HookOutcome:
    _choose_store(call)
    try:
        call.payload = parse_payload(stdin_text)
    except HookInputError as exc:
        return _fault(call, None, str(exc))
    if call.options.usage_error is not None:
        with contextlib.suppress(HookInputError):
            call.event = call.agent.parse(call.payload)
        return _fault(call, None, f"usage: {call.options.usage_error}")
    try:
        call.event = call.agent.parse(call.payload)
    except HookInputError as exc:
        return _fault(call, None, str(exc))
    if call.store_error is not None:
        return _fault(call, None, call.store_error)
    event = call.event
    task_path = call.options.task
    if event.kind == "subagent_stop" and call.options.subagent_task:
        task_path = call.options.subagent_task
    if task_path is None:
        return _fault(call, None, "usage: no --task given")
    try:
        spec = load_task(task_path)
    except (UserError, OSError, ValueError) as exc:
        return _fault(call, None, f"cannot load the task: {exc}")
    try:
        return _decide(call, spec, event, task_path)
    except Exception as exc:  # fail closed on anything the gate did not foresee
        detail = (
            str(exc) if isinstance(exc, UserError | OSError) else f"{type(exc).__name__}: {exc}"
        )
        return _fault(call, spec, detail)


# -- the decision -----------------------------------------------------------------------------


def _decide(call: _Call, spec: TaskSpec, event: StopEvent, task_path: str) -> HookOutcome:
    path = call.store.path_for(spec.id, event.session_id, event.subagent_id)
    state, tamper = _load(call, path, spec.id, task_path)
    if tamper is not None:
        return _fault(call, spec, tamper, state=state, path=path)
    root = event.cwd.resolve()
    if not root.is_dir():
        raise HookInputError(f"the session's cwd is not a directory: {root}")
    budget = _budget(call, spec)
    claim = _cap(call.agent.newest_claim(event.claim, state.last_raw_claim))
    common: dict[str, Any] = {"at": time.time(), "event": event.event_name, "claim": claim,
                              "stop_hook_active": event.stop_hook_active}  # fmt: skip
    carry: dict[str, Any] = {
        "last_raw_claim": event.claim,
        "exec_run": call.options.exec_run or state.exec_run,
    }

    if event.kind == "session_start":
        manifest = protected.take(spec, root, task_path)
        note = f"protected files digested: {len(manifest.get('files', {}))}"
        state = state.with_round(
            Round(**common, outcome="started", note=note),
            **carry,
            protected=state.protected or manifest,
        )
        written = _save(call, path, state)
        _report_to_exec(call, event, "started", state, note)
        return HookOutcome(action="pass", output=None, log=(*call.log, f"donegate: {note}"),
                           budget=budget, state=written)  # fmt: skip

    if event.kind == "stop" and event.running:
        note = (
            "background work still running ("
            + "; ".join(event.running)
            + "): stop let through without spending a continuation"
        )
        state = state.with_round(Round(**common, outcome="deferred", note=note), **carry)
        written = _save(call, path, state)
        _report_to_exec(call, event, "deferred", state, note)
        return HookOutcome(action="defer", output=None, log=(*call.log, f"donegate: {note}"),
                           blocks=state.blocks, budget=budget, state=written)  # fmt: skip

    if state.protected is None:
        state = state.model_copy(update={"protected": _baseline(call, spec, root, task_path)})
    found = judge(
        spec,
        call.agent,
        event,
        root=root,
        manifest=state.protected,
        deadline=call.deadline_at - RESERVE_S - GRACE_S,
        check_timeout=call.options.check_timeout,
        deadline_s=call.options.deadline or call.agent.default_deadline,
    )
    briefs = _round_data(found)
    if not found.problems:
        state = state.with_round(Round(**common, outcome="passed", **briefs), **carry)
        written = _save(call, path, state)
        _report_to_exec(call, event, "passed", state, "every check passed")
        return HookOutcome(action="pass", output=None,
                           log=(*call.log, "donegate: every check passed"), budget=budget,
                           checks=found.checks, todos=found.todos, state=written)  # fmt: skip

    if state.escalated is not None:
        note = f"already escalated ({state.escalated}); stop let through"
        state = state.with_round(Round(**common, outcome="let_through", note=note, **briefs),
                                 **carry)  # fmt: skip
        written = _save(call, path, state)
        _report_to_exec(call, event, "let_through", state, note)
        return HookOutcome(action="escalate", output=None, log=(*call.log, f"donegate: {note}"),
                           blocks=state.blocks, budget=budget, checks=found.checks,
                           todos=found.todos, problems=found.problems, state=written)  # fmt: skip

    problems = "; ".join(found.problems)
    if found.stated_blocker:
        reason = f"the agent stated a blocker: {problems}"
    elif state.blocks < budget:
        message = nudge_text(found.problems)
        state = state.with_round(Round(**common, outcome="blocked", **briefs), **carry)
        written = _save(call, path, state)
        _report_to_exec(call, event, "blocked", state, message)
        log = f"donegate: blocked ({state.blocks} of {budget}): {problems}"
        return HookOutcome(action="block", output=call.agent.answer(message),
                           log=(*call.log, log), blocks=state.blocks, budget=budget,
                           checks=found.checks, todos=found.todos, problems=found.problems,
                           state=written)  # fmt: skip
    else:
        reason = f"not done after {state.blocks} continuation(s): {problems}"
    state = state.with_round(Round(**common, outcome="escalated", **briefs), **carry)
    return _escalate(call, spec, state, path, reason=reason, found=found, budget=budget)


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
    ref = locate(event.transcript_path, _transcript_roots(agent, root))
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


# -- errors fail closed -----------------------------------------------------------------------


def _fault(
    call: _Call,
    spec: TaskSpec | None,
    error: str,
    *,
    state: HookState | None = None,
    path: Path | None = None,
) -> HookOutcome:
    """A hook error: a counted block, an escalation once the budget is spent, or fail-open."""
    if call.options.fail_open:
        return HookOutcome(
            action="open",
            output=None,
            log=(*call.log, f"donegate hook: {error}; --fail-open: stop let through"),
            error=error,
        )
    event = call.event
    task_path = call.options.task or "(no task)"
    if event is not None and event.kind == "subagent_stop" and call.options.subagent_task:
        task_path = call.options.subagent_task
    if path is None or state is None:
        if spec is not None and event is not None:
            path = call.store.path_for(spec.id, event.session_id, event.subagent_id)
            task_key = spec.id
        else:
            cwd = str(event.cwd) if event is not None else os.getcwd()
            path = call.store.fallback_path(_absolute(task_path), cwd, call.session)
            task_key = _absolute(task_path)
        state, tamper = _load(call, path, task_key, task_path)
        if tamper is not None:
            error = f"{error}; also {tamper}"
    budget = _budget(call, spec)
    common: dict[str, Any] = {
        "at": time.time(),
        "event": event.event_name if event is not None else "(unparsed)",
        "claim": _cap(event.claim) if event is not None else None,
        "stop_hook_active": event.stop_hook_active if event is not None else False,
        "error": error,
    }
    if state.escalated is not None:
        state = state.with_round(Round(**common, outcome="let_through"))
        written = _save(call, path, state)
        log = f"donegate hook: {error}; already escalated ({state.escalated}): stop let through"
        return HookOutcome(action="escalate", output=None, log=(*call.log, log),
                           blocks=state.blocks, budget=budget, error=error,
                           state=written)  # fmt: skip
    if state.blocks < budget:
        state = state.with_round(Round(**common, outcome="fault"))
        written = _save(call, path, state)
        if written is None and event is not None and event.stop_hook_active:
            return _last_resort(call, error)
        reason = (
            f"The completion gate could not judge this stop: {error}. The stop stays blocked "
            f"until the gate can decide ({state.blocks} of {budget} before a human is asked)."
        )
        if event is not None:
            _report_to_exec(call, event, "fault", state, reason)
        answer = call.agent.answer(reason) if call.agent.name else _generic(reason)
        log = f"donegate hook: {error}; blocked, fail-closed ({state.blocks} of {budget})"
        return HookOutcome(action="block", output=answer, log=(*call.log, log),
                           blocks=state.blocks, budget=budget, state=written,
                           error=error)  # fmt: skip
    state = state.with_round(Round(**common, outcome="escalated"))
    reason = f"the hook failed {state.blocks} time(s) in a row; last error: {error}"
    return _escalate(call, spec, state, path, reason=reason, found=None, budget=budget, error=error)


def _last_resort(call: _Call, error: str) -> HookOutcome:
    """Nothing can be counted: block once, and let a stop that follows a block through."""
    event = call.event
    if call.options.fail_open or (event is not None and event.stop_hook_active):
        log = f"donegate hook: {error}; the count cannot be kept: stop let through"
        return HookOutcome(action="open", output=None, log=(*call.log, log), error=error)
    reason = f"The completion gate could not judge this stop: {error}. The stop is blocked."
    answer = call.agent.answer(reason) if call.agent.name else _generic(reason)
    log = f"donegate hook: {error}; blocked"
    return HookOutcome(action="block", output=answer, log=(*call.log, log), error=error)


def _generic(reason: str) -> dict[str, Any]:
    return {"decision": "block", "reason": reason}


# -- escalation -------------------------------------------------------------------------------


def _escalate(
    call: _Call,
    spec: TaskSpec | None,
    state: HookState,
    path: Path,
    *,
    reason: str,
    found: Judgement | None,
    budget: int,
    error: str | None = None,
) -> HookOutcome:
    event = call.event
    ref = found.transcript if found is not None else _pointer(call)
    checks = found.checks if found is not None else ()
    todos = found.todos if found is not None else ()
    rounds = [r for r in state.rounds if r.outcome in ("blocked", "fault", "escalated")]
    report = build_report(
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
                "claim": r.claim or f"({call.agent.title or 'the agent'} stopped)",
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
            "agent": call.agent.name,
            "session_id": state.session_id,
            "subagent_id": state.subagent_id,
            "task_path": state.task_path,
            "cwd": str(event.cwd) if event is not None else None,
            "last_claim": rounds[-1].claim if rounds else None,
            "errors": [r.error for r in state.rounds if r.error],
            "hook_state": str(path),
            "transcript": ref.as_data(),  # a pointer: the transcript itself is never copied
        },
    )
    out = call.store.root.parent / "escalations"
    json_path: Path | None = None
    try:
        json_path, _ = write_report(report, out)
    except OSError as exc:
        call.log.append(f"donegate hook: cannot write the escalation report under {out}: {exc}")
    state = state.model_copy(update={"escalated": str(json_path or out)})
    written = _save(call, path, state)
    if event is not None:
        _report_to_exec(call, event, "escalated", state, reason, report=json_path)
    where = f"; escalation report {json_path}" if json_path is not None else ""
    log = [f"donegate: escalated: {reason}; stop let through{where}"]
    return HookOutcome(action="escalate", output=None, log=(*call.log, *log),
                       blocks=state.blocks, budget=budget, checks=checks, todos=todos,
                       problems=found.problems if found is not None else (), report=json_path,
                       state=written, error=error)  # fmt: skip


# -- state ------------------------------------------------------------------------------------


def _choose_store(call: _Call) -> None:
    """The data directory's state folder, or (it being unusable) a private temporary one."""
    root = call.store.root
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not os.access(root, os.W_OK | os.X_OK):
            raise PermissionError(f"{root} is not writable")
    except (OSError, ValueError) as exc:
        call.store_error = f"the data directory is unusable ({data_dir()}): {exc}"
        call.store = StateStore(_temporary_root())


def _temporary_root() -> Path:
    base = Path(tempfile.gettempdir()) / f"donegate-{os.getuid()}"
    with contextlib.suppress(OSError):
        base.mkdir(mode=0o700, exist_ok=True)
    return base / "hooks"


def _load(call: _Call, path: Path, task: str, task_path: str) -> tuple[HookState, str | None]:
    """The record at `path` or a fresh one; a tampered record becomes fault rounds."""
    event = call.event
    fresh: dict[str, Any] = {
        "agent": call.agent.name or "unknown",
        "task": task,
        "task_path": _absolute(task_path),
        "session_id": call.session or "no-session",
        "subagent_id": event.subagent_id if event is not None else None,
        "exec_run": call.options.exec_run,
    }
    try:
        found = call.store.load(path)
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


def _save(call: _Call, path: Path, state: HookState) -> Path | None:
    try:
        call.store.save(path, state)
        return path
    except (OSError, ValueError) as exc:
        call.log.append(f"donegate hook: cannot write the hook state {path}: {exc}")
        return None


def _budget(call: _Call, spec: TaskSpec | None) -> int:
    if call.options.max_continuations is not None:
        return call.options.max_continuations
    return spec.max_continuations if spec is not None else FALLBACK_BUDGET


def _baseline(call: _Call, spec: TaskSpec, root: Path, task_path: str) -> dict[str, Any]:
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


def _report_to_exec(
    call: _Call,
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
        "todos": [t.model_dump() for t in (state.rounds[-1].todos if state.rounds else [])],
    }
    try:
        folder = exec_dir(run)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(folder / "events.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as exc:
        call.log.append(f"donegate hook: cannot report to exec run {run}: {exc}")


# -- small helpers ----------------------------------------------------------------------------


def _round_data(found: Judgement) -> dict[str, Any]:
    return {
        "checks": [CheckBrief(name=c.name, passed=c.passed, detail=c.detail) for c in found.checks],
        "todos": [TodoRecord.model_validate(t.as_data()) for t in found.todos],
        "problems": list(found.problems),
    }


def _transcript_roots(agent: AgentCLI, root: Path) -> list[Path]:
    """The CLI's data folders, and the session's cwd unless it is ``/`` or the home folder."""
    roots = list(agent.data_roots())
    if root != Path(root.anchor) and root != Path.home().resolve():
        roots.append(root)
    return roots


def _pointer(call: _Call) -> TranscriptRef:
    event = call.event
    if event is None:
        return TranscriptRef(path=None, note="the payload could not be read")
    with contextlib.suppress(OSError, ValueError):
        return locate(event.transcript_path, _transcript_roots(call.agent, event.cwd.resolve()))
    return TranscriptRef(path=event.transcript_path, note="not located")


def _absolute(path: str) -> str:
    try:
        return os.path.abspath(path)
    except (ValueError, OSError):
        return path


def _cap(text: str | None) -> str | None:
    if text is None or len(text) <= CLAIM_CAP:
        return text
    return text[: CLAIM_CAP - 20] + " [... cut by donegate]"
