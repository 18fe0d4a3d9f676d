"""`run_task`: run a task's agent loop behind the completion gate, to done, escalated or failed.

1. Resolve the workdir, the models and the tools (built-ins bound to a `Workspace`, user tools
   by import path, ``update_checklist`` bound to the task's `Checklist`); digest the protected
   files (`protect.task_patterns`), which ``write_file`` then refuses to touch.
2. Run the loop with `run_id` = the task id, so a side-effecting call's idempotency key is
   ``<task>:<step>:<call>``; the harness's `Evidence` and the checklist listen to its events.
3. Every claimed completion goes to the `CompletionGate` (checks, verifier, checklist).
4. Map the run's end: accepted -> ``done`` with a signed certificate (``closure: human``:
   ``awaiting_review``, with a certificate a person approves and a review report); stopped by
   the gate -> ``escalated`` with a report; any loop failure (truncated, refused,
   provider_error, max_steps, ...) -> ``failed`` with that reason.

Certificates and reports go under the output directory, else donegate's data directory, never
the agent's workdir: nothing the gate trusts lives where the agent writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, Unpack

from donegate.config import data_dir
from donegate.errors import UserError
from donegate.events import EventSink, fan_out
from donegate.harness.certificate import build_certificate, write_certificate
from donegate.harness.checklist import Checklist
from donegate.harness.escalation import build_report, round_data, write_report
from donegate.harness.evidence import Evidence
from donegate.harness.gate import CheckWatcher, CompletionGate, GateRound
from donegate.harness.preflight import check_outputs
from donegate.harness.protect import Manifest, take_manifest, task_patterns
from donegate.harness.spec import TaskSpec
from donegate.harness.task_tools import build_tools
from donegate.harness.verifier import Verifier
from donegate.loop import Policies, RunResult
from donegate.models.base import Model, ModelSettings
from donegate.models.infer import infer_model
from donegate.records.check import CheckResult
from donegate.records.checklist import CHECKLIST_TOOL, ChecklistItem
from donegate.records.evidence import EvidenceRecord
from donegate.records.report import EscalationReport, ReviewRequest
from donegate.records.status import TaskOutcome, TaskStatus, task_status
from donegate.results import NO_SPEND, Spend
from donegate.run import RunOptions, arun, run
from donegate.spend import Budget, budget_of
from donegate.tools import EffectLedger, Tool

__all__ = [
    "COMPLETION_TOOL",
    "TaskOptions",
    "TaskResult",
    "arun_task",
    "run_task",
]

COMPLETION_TOOL = "task_complete"
"""The completion tool offered by default; calling it is a claim the gate re-checks."""

_COMPLETION_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string", "description": "What was done."}},
    "required": ["summary"],
}


@dataclass(frozen=True, kw_only=True, slots=True)
class TaskResult:
    """How a task ended, with everything needed to trust or review it."""

    status: TaskOutcome
    """``done``: every gate passed; ``awaiting_review``: so did the claim, and a person must
    approve it (``closure: human``); ``escalated``: a human must look; ``failed``: the loop
    broke."""
    task_id: str
    """The task's id."""
    reason: str
    """Why it ended so (a failed run's loop status and reason, the gate's last reasons...)."""
    run: RunResult
    """The loop's result: transcript, tool calls, usage."""
    continuations: int = 0
    """Automatic continuations the gate granted."""
    model_calls: int = 0
    """Calls of the worker model."""
    verifier_calls: int = 0
    """Calls of the verifier model."""
    checks: tuple[CheckResult, ...] = ()
    """The check results of the last gate judgement."""
    certificate: Path | None = None
    """The completion certificate, when done (awaiting review: the one a person approves)."""
    escalation: EscalationReport | None = None
    """The escalation report (with ``files``: its JSON and Markdown paths), when escalated or
    failed; the review report when awaiting review."""
    rounds: tuple[GateRound, ...] = ()
    """Every gate judgement, in order."""
    checklist: tuple[ChecklistItem, ...] = ()
    """The checklist as it ended."""
    evidence: tuple[EvidenceRecord, ...] = ()
    """Every tool call the harness recorded."""
    spend: Spend = NO_SPEND
    """What the task's model calls spent, by model and role (earlier runs' included)."""
    charged: Spend = NO_SPEND
    """What this run's own model calls spent (a metrics counter adds it up)."""

    def summary(self) -> dict[str, Any]:
        """The result as one JSON-ready object (what ``donegate run --json`` prints)."""
        escalation = None
        report = self.escalation
        if report is not None:
            escalation = {
                **(report.files.as_data() if report.files is not None else {}),
                "open_items": [i.item for i in report.left.open_items],
                "failed_checks": [c.name for c in report.left.failed_checks],
            }
        return {
            "task_id": self.task_id,
            "status": self.status,
            "continuations": self.continuations,
            "model_calls": self.model_calls,
            "verifier_calls": self.verifier_calls,
            "checks": [
                {"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks
            ],
            "certificate": str(self.certificate) if self.certificate is not None else None,
            "escalation": escalation,
            "reason": self.reason,
            "spend": self.spend.as_data(),
            "charged": self.charged.as_data(),
        }


@dataclass(kw_only=True)
class _Prepared:
    spec: TaskSpec
    root: Path
    out: Path
    model: Model
    verifier: Verifier | None
    tools: list[Tool]
    checklist: Checklist
    evidence: Evidence
    protected: Manifest
    gate: CompletionGate
    sink: EventSink | None
    system: str | None
    completion_tool: str | None
    budget: Budget
    task_file: str | Path | None = None
    started: float = field(default_factory=time.time)


class TaskOptions(TypedDict, total=False):
    """The keyword options `run_task` and `arun_task` share (written once, checked by mypy)."""

    model: Model | str | None
    """The worker model; default: the task's ``model`` (``provider:name``; a ``script:FILE``
    must be loaded by the caller and passed as a `Model`)."""
    verifier_model: Model | str | None
    """The verifier model; default: the task's ``verifier``."""
    workdir: str | Path | None
    """The agent's working directory; default: the task's ``workdir``, else the cwd."""
    ledger: EffectLedger | None
    """Journal of side-effecting calls; recorded results are never re-executed."""
    events: EventSink | None
    """Receives every run event (after the harness's own evidence and checklist)."""
    output_dir: str | Path | None
    """Where certificates and reports go; default: donegate's data directory."""
    completion_tool: str | None
    """The completion tool's name (default ``task_complete``); None: a text-only end claims."""
    check_timeout: float
    """Seconds each check may run (default 120)."""
    settings: ModelSettings | None
    """Generation settings."""
    policies: Policies | None
    """What the loop does with each non-final ending."""
    on_round: Callable[[GateRound], None] | None
    """Sees every gate judgement."""
    task_file: str | Path | None
    """The file `spec` came from; protected when it sits inside the workdir."""
    on_check: CheckWatcher | None
    """Entered around each check while it runs (live progress)."""
    baseline: Callable[[Manifest], Manifest] | None
    """Given the protected-file manifest taken now, the one to judge the run against: the
    worker's returns the one its task's first run took, so a resumed run does not take it again
    from a workdir the agent may have changed. Default: the one taken now."""
    spent: Spend | None
    """What the task spent before this run (a worker's earlier runs of a requeued task): its
    ``budget:`` counts it."""


def run_task(spec: TaskSpec, **options: Unpack[TaskOptions]) -> TaskResult:
    """Run `spec` to ``done``, ``awaiting_review``, ``escalated`` or ``failed``.

    Certificates and reports go under ``output_dir``, else the data directory
    (``$DONEGATE_HOME``, default ``~/.donegate``). Options: `TaskOptions`.
    """
    p = _prepare(spec, options, "run_task")
    return _finish(p, run(spec.prompt, model=p.model, **_loop_options(p, options)))


async def arun_task(spec: TaskSpec, **options: Unpack[TaskOptions]) -> TaskResult:
    """The async `run_task` (the gate's checks and verifier run on a thread)."""
    p = _prepare(spec, options, "arun_task")
    return _finish(p, await arun(spec.prompt, model=p.model, **_loop_options(p, options)))


def _loop_options(p: _Prepared, options: TaskOptions) -> RunOptions:
    """What the agent loop is run with: the task's tools, limits and gate."""
    completion_tool = p.completion_tool
    return RunOptions(
        tools=p.tools,
        system=p.system,
        max_steps=p.spec.max_steps,
        settings=options.get("settings"),
        finish_tool=_COMPLETION_SCHEMA if completion_tool else None,
        finish_tool_name=completion_tool or "submit_answer",
        policies=options.get("policies"),
        run_id=p.spec.id,
        ledger=options.get("ledger"),
        gate=p.gate,
        events=p.sink,
        meter=p.budget.meter("agent"),
    )


def _prepare(spec: TaskSpec, options: TaskOptions, caller: str) -> _Prepared:
    unknown = sorted(set(options) - set(TaskOptions.__annotations__))
    if unknown:  # what Python says of an unknown keyword, kept now that options are a dict
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    model, workdir = options.get("model"), options.get("workdir")
    completion_tool = options.get("completion_tool", COMPLETION_TOOL)
    root = Path(workdir if workdir is not None else spec.workdir or Path.cwd()).resolve()
    if not root.is_dir():
        raise UserError(f"{spec.id}: workdir is not a directory: {root}")
    output_dir = options.get("output_dir")
    out = Path(output_dir) if output_dir else data_dir()
    check_outputs(out)  # before the first model call: a run is never paid for, then thrown away
    patterns, pinned = task_patterns(spec, root, task_file=options.get("task_file"))
    protected = take_manifest(root, patterns, pinned=pinned, allow=spec.allow)
    baseline = options.get("baseline")
    if baseline is not None:  # even with nothing protected: the tree is the start record
        protected = baseline(protected)
    worker = _resolve(model if model is not None else spec.model, "model", spec.id)
    judge = options.get("verifier_model")
    judge = judge if judge is not None else spec.verifier
    budget = budget_of(spec.budget, spec.prices, options.get("spent"))
    verifier = None
    if judge is not None:
        verifier = Verifier(_resolve(judge, "verifier", spec.id), meter=budget.meter("verifier"))
    try:  # a usd budget on a model without a price: refused before any call
        budget.require_prices(worker.name, *([verifier.model.name] if verifier else []))
    except UserError as exc:
        raise UserError(f"{spec.id}: {exc}") from None
    checklist = Checklist(spec.checklist)
    evidence = Evidence()
    tools = build_tools(spec, root, checklist, protected=protected)
    if spec.checklist and not any(t.name == CHECKLIST_TOOL for t in tools):
        raise UserError(f"{spec.id}: the task has a checklist but no {CHECKLIST_TOOL} tool")
    gate = CompletionGate(
        checks=spec.checks,
        workdir=root,
        checklist=checklist,
        evidence=evidence,
        verifier=verifier,
        completion_condition=spec.completion_condition,
        max_continuations=spec.max_continuations,
        check_timeout=options.get("check_timeout", 120.0),
        on_round=options.get("on_round"),
        protected=protected,
        on_check=options.get("on_check"),
    )
    return _Prepared(
        spec=spec,
        root=root,
        out=out,
        model=worker,
        verifier=verifier,
        tools=tools,
        checklist=checklist,
        evidence=evidence,
        protected=protected,
        gate=gate,
        sink=fan_out(evidence, checklist, options.get("events")),
        system=_system(spec, checklist, completion_tool, protected),
        completion_tool=completion_tool,
        budget=budget,
        task_file=options.get("task_file"),
    )


def _resolve(value: Model | str | None, what: str, task: str) -> Model:
    if value is None:
        raise UserError(f"{task}: no {what}: pass one or set `{what}` in the task")
    if isinstance(value, str) and value.startswith("script:"):
        raise UserError(
            f"{task}: {what} {value!r}: load script models with donegate.testing.player."
            "ScriptedModel (or use the CLI) and pass the model"
        )
    return infer_model(value)


def _system(
    spec: TaskSpec, checklist: Checklist, completion_tool: str | None, protected: Manifest
) -> str | None:
    notes = []
    if spec.completion_condition:
        notes.append(f"The task is done when: {spec.completion_condition}")
    if checklist.items:
        notes.append(
            f"Track the task's parts with {CHECKLIST_TOOL} as you work; mark an item done only "
            f"after doing it.\nChecklist:\n{checklist.render()}"
        )
    if spec.checks:
        notes.append("When you say you are done, the harness runs its own acceptance checks.")
    if not protected.empty:
        notes.append(
            "These files are protected: changing, adding or deleting any of them fails the "
            f"task: {', '.join([*protected.patterns, *protected.pinned])}"
        )
    if completion_tool:
        notes.append(f"Call {completion_tool} when the whole task is finished.")
    text = "\n\n".join(notes)
    if spec.system and text:
        return f"{spec.system}\n\n{text}"
    return spec.system or text or None


def _finish(p: _Prepared, result: RunResult) -> TaskResult:
    gate = p.gate
    verifier_calls = p.verifier.calls if p.verifier is not None else 0
    common: dict[str, Any] = {
        "task_id": p.spec.id,
        "run": result,
        "continuations": gate.continuations,
        "model_calls": result.model_calls,
        "verifier_calls": verifier_calls,
        "checks": gate.last_checks,
        "rounds": tuple(gate.rounds),
        "checklist": p.checklist.items,
        "evidence": p.evidence.records,
        "spend": p.budget.spend,
        "charged": p.budget.charged,
    }
    outcome = task_status(result.status, human_closure=p.spec.closure == "human")
    if outcome in ("done", "awaiting_review"):
        finished = time.time()
        cert = build_certificate(
            spec=p.spec,
            workdir=p.root,
            checks=gate.last_checks,
            evidence=p.evidence,
            transcript=result.transcript,
            models={
                "worker": p.model.name,
                "verifier": p.verifier.model.name if p.verifier else None,
            },
            started_at=p.started,
            finished_at=finished,
            continuations=gate.continuations,
            model_calls=result.model_calls,
            checklist=p.checklist.as_data(),
            protected=p.protected,
            resolved=True,
            spend=p.budget.spend.as_data(),
            task_file=p.task_file,
        )
        path = write_certificate(cert, p.out / "certificates")
        if outcome == TaskStatus.AWAITING_REVIEW:
            return _awaiting_review(p, result, path, common)
        reason = "every gate passed"
        if not cert.closure.backed_by_checks:
            reason += " (closure: model; no mechanical check backed it)"
        return TaskResult(status=TaskStatus.DONE, reason=reason, certificate=path, **common)
    if outcome == TaskStatus.ESCALATED:
        # a verifier refused by the budget leaves the gate to stop the run: say why it did
        reason = p.budget.exhausted or result.reason
        report = _report(p, result, reason)
        return TaskResult(status=TaskStatus.ESCALATED, reason=reason, escalation=report, **common)
    reason = f"{result.status.value}: {result.reason}"
    # a failed run is reported where an escalated one is: a person reads why it broke
    return TaskResult(status=TaskStatus.FAILED, reason=reason,
                      escalation=_report(p, result, reason), **common)  # fmt: skip


def _report(p: _Prepared, result: RunResult, reason: str) -> EscalationReport:
    """The escalation report of a run that ended escalated or failed, written; with its files."""
    gate = p.gate
    report = build_report(
        task_id=p.spec.id,
        reason=reason,
        prompt=p.spec.prompt,
        completion_condition=p.spec.completion_condition,
        continuations=gate.continuations,
        max_continuations=gate.max_continuations,
        model_calls=result.model_calls,
        attempted=p.evidence.records,
        checklist=p.checklist.as_data(),
        checks=gate.last_checks,
        rounds=[round_data(r) for r in gate.rounds],
        transcript=result.transcript,
        extra={"last_text": result.text, "workdir": str(p.root)},
        spend=p.budget.spend,
    )
    json_path, md_path = write_report(report, p.out / "escalations")
    return report.with_files(str(json_path), str(md_path))


def _awaiting_review(
    p: _Prepared, result: RunResult, certificate: Path, common: dict[str, Any]
) -> TaskResult:
    """``closure: human``: the claim passed every gate; a person's approval closes it."""
    reason = "every gate passed; awaiting a person's review (closure: human)"
    report = build_report(
        task_id=p.spec.id,
        reason=reason,
        prompt=p.spec.prompt,
        completion_condition=p.spec.completion_condition,
        continuations=p.gate.continuations,
        max_continuations=p.gate.max_continuations,
        model_calls=result.model_calls,
        attempted=p.evidence.records,
        checklist=p.checklist.as_data(),
        checks=p.gate.last_checks,
        rounds=[round_data(r) for r in p.gate.rounds],
        transcript=result.transcript,
        extra={"last_text": result.text, "workdir": str(p.root)},
        review=ReviewRequest(certificate=str(certificate)),
        spend=p.budget.spend,
    )
    json_path, md_path = write_report(report, p.out / "reviews")
    report = report.with_files(str(json_path), str(md_path))
    return TaskResult(
        status=TaskStatus.AWAITING_REVIEW, reason=reason, certificate=certificate,
        escalation=report, **common,
    )  # fmt: skip
