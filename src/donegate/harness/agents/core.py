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
import hashlib
import time
import traceback
from pathlib import Path
from typing import Any

from donegate.errors import UserError
from donegate.harness.agents import protected
from donegate.harness.agents.base import AgentCLI, HookInputError, StopEvent, parse_payload
from donegate.harness.agents.call import (
    FALLBACK_BUDGET,
    RESERVE_S,
    HookCall,
    HookOptions,
    HookOutcome,
    absolute,
    budget_of,
    cap_claim,
    choose_store,
    exec_dir,
    load_state,
    report_to_exec,
    save_state,
    state_root,
)
from donegate.harness.agents.deadline import GRACE_S
from donegate.harness.agents.fault import escalate, fault, last_resort
from donegate.harness.agents.judge import baseline, certify_stop, judge, round_data
from donegate.harness.agents.state import HookState, Round, StateStore
from donegate.harness.decision import decide
from donegate.harness.spec import TaskSpec, load_task, with_budget
from donegate.records.judgement import Judgement

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


def run_hook(
    agent: AgentCLI, stdin_text: str | bytes, options: HookOptions, *, started: float | None = None
) -> HookOutcome:
    """Decide one hook call; never raises (an error is a counted block, or a pass if fail-open)."""
    call = HookCall(
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
        return last_resort(call, f"internal error: {type(exc).__name__}: {exc}")


def _run(call: HookCall, stdin_text: str | bytes) -> HookOutcome:
    choose_store(call)
    try:
        call.payload = parse_payload(stdin_text)
    except HookInputError as exc:
        return fault(call, None, str(exc))
    if call.options.usage_error is not None:
        with contextlib.suppress(HookInputError):
            call.event = call.agent.parse(call.payload)
        return fault(call, None, f"usage: {call.options.usage_error}")
    try:
        call.event = call.agent.parse(call.payload)
    except HookInputError as exc:
        return fault(call, None, str(exc))
    if call.store_error is not None:
        return fault(call, None, call.store_error)
    event = call.event
    task_path = call.options.task
    if event.kind == "subagent_stop" and call.options.subagent_task:
        task_path = call.options.subagent_task
    if task_path is None:
        return fault(call, None, "usage: no --task given")
    try:
        spec = load_task(task_path)
    except (UserError, OSError, ValueError) as exc:
        return fault(call, None, f"cannot load the task: {exc}")
    try:
        return _decide(call, spec, event, task_path)
    except Exception as exc:  # fail closed on anything the gate did not foresee
        detail = (
            str(exc) if isinstance(exc, UserError | OSError) else f"{type(exc).__name__}: {exc}"
        )
        return fault(call, spec, detail)


# -- the decision -----------------------------------------------------------------------------


def task_digest(task_path: str) -> str:
    """SHA-256 of the task file's bytes (what a session pins at its first event)."""
    with open(task_path, "rb") as handle:
        return hashlib.sha256(handle.read(_MAX_TASK_BYTES)).hexdigest()


_MAX_TASK_BYTES = 16 * 1024 * 1024


def _task_changed(digest: str | None, task_path: str) -> tuple[str, str | None]:
    """The task file's digest now, and why it is tampering when it is not the pinned one."""
    pinned = task_digest(task_path)
    if digest is not None and digest != pinned:
        return pinned, (
            f"the task file {absolute(task_path)} changed since the session's first event "
            "(pinned then, never taken again at a stop): treated as tampering"
        )
    return pinned, None


def _started(
    call: HookCall,
    spec: TaskSpec,
    event: StopEvent,
    state: HookState,
    path: Path,
    *,
    root: Path,
    task_path: str,
    round_: Round,
    carry: dict[str, Any],
    budget: int,
) -> HookOutcome:
    """A session's first event: the start is taken (or the kept one reused), nothing judged."""
    manifest = protected.take(spec, root, task_path, session=event.session_id)
    note = f"protected files digested: {len(manifest.get('files', {}))}"
    state = state.with_round(
        round_.model_copy(update={"note": note}), **carry, protected=state.protected or manifest
    )
    written = save_state(call, path, state)
    report_to_exec(call, event, "started", state, note)
    return HookOutcome(action="pass", output=None, log=(*call.log, f"donegate: {note}"),
                       budget=budget, state=written)  # fmt: skip


def _budget_exhausted(call: HookCall, spec: TaskSpec, found: Judgement) -> str | None:
    """``budget exhausted: ...`` when the session's transcript shows the task's ``budget:``
    spent (the stop would otherwise be blocked, and the next continuation pays again), priced
    by the task's ``prices:`` first; with a ``usd`` budget, tokens on a model priced by neither
    end it too (fails closed: unpriced, the budget would never be reached)."""
    options = call.options
    if options.budget_usd is not None or options.budget_tokens is not None:
        spec = with_budget(spec, usd=options.budget_usd, tokens=options.budget_tokens)
    if spec.budget is None or found.transcript is None:
        return None
    from donegate.spend import overrun, price_book, unpriced  # here: only a budget asks

    spent = call.agent.transcript_spend(found.transcript, prices=price_book(spec.prices))
    if spent is None:
        return None
    source = f"{call.agent.title}'s transcript"
    return overrun(spec.budget, spent, source) or unpriced(spec.budget, spent, source)


def _decide(call: HookCall, spec: TaskSpec, event: StopEvent, task_path: str) -> HookOutcome:
    path = call.store.path_for(spec.id, event.session_id, event.subagent_id)
    state, tamper = load_state(call, path, spec.id, task_path)
    if tamper is not None:
        return fault(call, spec, tamper, state=state, path=path)
    pinned, changed = _task_changed(state.task_digest, task_path)
    if changed is not None:
        return fault(call, spec, changed, state=state, path=path)
    root = event.cwd.resolve()
    if not root.is_dir():
        raise HookInputError(f"the session's cwd is not a directory: {root}")
    budget = budget_of(call, spec)
    claim = cap_claim(call.agent.newest_claim(event.claim, state.last_raw_claim))
    common: dict[str, Any] = {"at": time.time(), "event": event.event_name, "claim": claim,
                              "stop_hook_active": event.stop_hook_active}  # fmt: skip
    carry: dict[str, Any] = {
        "last_raw_claim": event.claim,
        "exec_run": call.options.exec_run or state.exec_run,
        "task_digest": state.task_digest or pinned,  # pinned at the session's first event
    }

    if event.kind == "session_start":
        return _started(call, spec, event, state, path, root=root, task_path=task_path,
                        round_=Round(**common, outcome="started"), carry=carry,
                        budget=budget)  # fmt: skip

    if event.kind == "stop" and event.running:
        note = (
            "background work still running ("
            + "; ".join(event.running)
            + "): stop let through without spending a continuation"
        )
        state = state.with_round(Round(**common, outcome="deferred", note=note), **carry)
        written = save_state(call, path, state)
        report_to_exec(call, event, "deferred", state, note)
        return HookOutcome(action="defer", output=None, log=(*call.log, f"donegate: {note}"),
                           blocks=state.blocks, budget=budget, state=written)  # fmt: skip

    if state.protected is None:
        state = state.model_copy(
            update={"protected": baseline(call, spec, root, task_path, event.session_id)}
        )
    found = judge(
        spec,
        call.agent,
        event,
        root=root,
        manifest=state.protected,
        deadline=call.deadline_at - RESERVE_S - GRACE_S,
        check_timeout=call.options.check_timeout,
        deadline_s=call.options.deadline or call.agent.default_deadline,
        freeze=call.options.freeze,
    )
    briefs = round_data(found)
    verdict = decide(found, state.blocks, budget)  # the count lives in the signed state
    if verdict.action == "accept":
        certificate = certify_stop(call, spec, state, event, root=root, found=found)
        where = str(certificate) if certificate is not None else None
        state = state.with_round(
            Round(**common, outcome="passed", certificate=where, **briefs), **carry
        )
        written = save_state(call, path, state)
        report_to_exec(call, event, "passed", state, "every check passed")
        log = "donegate: every check passed" + (
            f"; certificate {certificate}" if certificate else ""
        )
        return HookOutcome(action="pass", output=None, log=(*call.log, log), budget=budget,
                           checks=found.checks, todos=found.todos, state=written,
                           certificate=certificate)  # fmt: skip

    if state.escalated is not None:
        note = f"already escalated ({state.escalated}); stop let through"
        state = state.with_round(Round(**common, outcome="let_through", note=note, **briefs),
                                 **carry)  # fmt: skip
        written = save_state(call, path, state)
        report_to_exec(call, event, "let_through", state, note)
        return HookOutcome(action="escalate", output=None, log=(*call.log, f"donegate: {note}"),
                           blocks=state.blocks, budget=budget, checks=found.checks,
                           todos=found.todos, problems=found.problems, state=written)  # fmt: skip

    problems = "; ".join(found.problems)
    exhausted = _budget_exhausted(call, spec, found) if verdict.action == "continue" else None
    if exhausted is not None:  # no continuation past the task's budget: escalated here
        state = state.with_round(Round(**common, outcome="escalated", **briefs), **carry)
        return escalate(call, spec, state, path, reason=exhausted, found=found, budget=budget)
    if verdict.action == "continue":
        message = verdict.message
        state = state.with_round(Round(**common, outcome="blocked", **briefs), **carry)
        written = save_state(call, path, state)
        if written is None:  # a block that cannot be counted could loop: the last resort
            return last_resort(call, f"cannot write the hook state {path}")
        report_to_exec(call, event, "blocked", state, message)
        log = f"donegate: blocked ({state.blocks} of {budget}): {problems}"
        return HookOutcome(action="block", output=call.agent.answer(message),
                           log=(*call.log, log), blocks=state.blocks, budget=budget,
                           checks=found.checks, todos=found.todos, problems=found.problems,
                           state=written)  # fmt: skip
    state = state.with_round(Round(**common, outcome="escalated", **briefs), **carry)
    return escalate(call, spec, state, path, reason=verdict.reason, found=found, budget=budget)
