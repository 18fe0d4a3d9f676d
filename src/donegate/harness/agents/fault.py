"""A hook that cannot judge fails closed: a counted block, then an escalation report.

With ``fail_open`` an error lets the stop through instead; when even the count cannot be kept
(`last_resort`) the stop is blocked once and a stop that follows a block goes through.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from donegate.harness.agents.call import (
    HookCall,
    HookOutcome,
    absolute,
    budget_of,
    cap_claim,
    load_state,
    report_to_exec,
    save_state,
)
from donegate.harness.agents.judge import pointer
from donegate.harness.agents.report import hook_report
from donegate.harness.agents.state import HookState, Round
from donegate.harness.spec import TaskSpec
from donegate.records.judgement import Judgement

__all__ = ["escalate", "fault", "last_resort"]


# -- errors fail closed -----------------------------------------------------------------------


def fault(
    call: HookCall,
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
            path = call.store.fallback_path(absolute(task_path), cwd, call.session)
            task_key = absolute(task_path)
        state, tamper = load_state(call, path, task_key, task_path)
        if tamper is not None:
            error = f"{error}; also {tamper}"
    budget = budget_of(call, spec)
    common: dict[str, Any] = {
        "at": time.time(),
        "event": event.event_name if event is not None else "(unparsed)",
        "claim": cap_claim(event.claim) if event is not None else None,
        "stop_hook_active": event.stop_hook_active if event is not None else False,
        "error": error,
    }
    if state.escalated is not None:
        state = state.with_round(Round(**common, outcome="let_through"))
        written = save_state(call, path, state)
        log = f"donegate hook: {error}; already escalated ({state.escalated}): stop let through"
        return HookOutcome(action="escalate", output=None, log=(*call.log, log),
                           blocks=state.blocks, budget=budget, error=error,
                           state=written)  # fmt: skip
    if state.blocks < budget:
        state = state.with_round(Round(**common, outcome="fault"))
        written = save_state(call, path, state)
        if written is None:  # the block cannot be counted: do not loop on it
            return last_resort(call, error)
        reason = (
            f"The completion gate could not judge this stop: {error}. The stop stays blocked "
            f"until the gate can decide ({state.blocks} of {budget} before a human is asked)."
        )
        if event is not None:
            report_to_exec(call, event, "fault", state, reason)
        answer = call.agent.answer(reason) if call.agent.name else _generic(reason)
        log = f"donegate hook: {error}; blocked, fail-closed ({state.blocks} of {budget})"
        return HookOutcome(action="block", output=answer, log=(*call.log, log),
                           blocks=state.blocks, budget=budget, state=written,
                           error=error)  # fmt: skip
    state = state.with_round(Round(**common, outcome="escalated"))
    reason = f"the hook failed {state.blocks} time(s) in a row; last error: {error}"
    return escalate(call, spec, state, path, reason=reason, found=None, budget=budget, error=error)


def last_resort(call: HookCall, error: str) -> HookOutcome:
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


def escalate(
    call: HookCall,
    spec: TaskSpec | None,
    state: HookState,
    path: Path,
    *,
    reason: str,
    found: Judgement | None,
    budget: int,
    error: str | None = None,
) -> HookOutcome:
    """Write the escalation report (once), record it in the state, and let the stop through."""
    event = call.event
    ref = found.transcript if found is not None and found.transcript else pointer(call)
    checks = found.checks if found is not None else ()
    todos = found.todos if found is not None else ()
    report = hook_report(
        state,
        spec=spec,
        reason=reason,
        budget=budget,
        checks=checks,
        todos=todos,
        transcript=ref,
        agent_title=call.agent.title,
        cwd=event.cwd if event is not None else None,
        state_path=path,
    )
    from donegate.harness.escalation import write_report  # here: only an escalation needs it

    out = call.store.root.parent / "escalations"
    json_path: Path | None = None
    try:
        json_path, _ = write_report(report, out)
    except OSError as exc:
        call.log.append(f"donegate hook: cannot write the escalation report under {out}: {exc}")
    state = state.model_copy(update={"escalated": str(json_path or out)})
    written = save_state(call, path, state)
    if event is not None:
        report_to_exec(call, event, "escalated", state, reason, report=json_path)
    where = f"; escalation report {json_path}" if json_path is not None else ""
    log = [f"donegate: escalated: {reason}; stop let through{where}"]
    return HookOutcome(action="escalate", output=None, log=(*call.log, *log),
                       blocks=state.blocks, budget=budget, checks=checks, todos=todos,
                       problems=found.problems if found is not None else (), report=json_path,
                       state=written, error=error)  # fmt: skip
