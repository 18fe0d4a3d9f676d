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

import importlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from donegate.config import data_dir
from donegate.errors import UserError
from donegate.events import EventSink, fan_out
from donegate.harness.builtin_tools import Workspace, workspace_tool
from donegate.harness.certificate import build_certificate, write_certificate
from donegate.harness.checklist import CHECKLIST_TOOL, Checklist, ChecklistItem
from donegate.harness.checks import CheckResult
from donegate.harness.escalation import (
    EscalationReport,
    ReviewRequest,
    build_report,
    round_data,
    write_report,
)
from donegate.harness.evidence import Evidence, EvidenceRecord
from donegate.harness.gate import CheckWatcher, CompletionGate, GateRound
from donegate.harness.protect import Manifest, take_manifest, task_patterns
from donegate.harness.spec import ImportTool, TaskSpec
from donegate.harness.verifier import Verifier
from donegate.loop import Policies, RunResult, Status
from donegate.models.base import Model, ModelSettings
from donegate.models.infer import infer_model
from donegate.run import arun, run
from donegate.tools import EffectLedger, Tool

__all__ = ["COMPLETION_TOOL", "TaskResult", "arun_task", "run_task", "side_effect_tools"]

COMPLETION_TOOL = "task_complete"
"""The completion tool offered by default; calling it is a claim the gate re-checks."""

_COMPLETION_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string", "description": "What was done."}},
    "required": ["summary"],
}
_SIDE_EFFECTS = {"write_file": True, "run_command": True, "read_file": False, "list_dir": False}
_IDEMPOTENT = frozenset({"write_file"})  # writing the same content again changes nothing more


@dataclass(frozen=True, kw_only=True, slots=True)
class TaskResult:
    """How a task ended, with everything needed to trust or review it."""

    status: Literal["done", "awaiting_review", "escalated", "failed"]
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
    """The escalation report (with ``files``: its JSON and Markdown paths), when escalated;
    the review report when awaiting review."""
    rounds: tuple[GateRound, ...] = ()
    """Every gate judgement, in order."""
    checklist: tuple[ChecklistItem, ...] = ()
    """The checklist as it ended."""
    evidence: tuple[EvidenceRecord, ...] = ()
    """Every tool call the harness recorded."""

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
    started: float = field(default_factory=time.time)


def run_task(
    spec: TaskSpec,
    *,
    model: Model | str | None = None,
    verifier_model: Model | str | None = None,
    workdir: str | Path | None = None,
    ledger: EffectLedger | None = None,
    events: EventSink | None = None,
    output_dir: str | Path | None = None,
    completion_tool: str | None = COMPLETION_TOOL,
    check_timeout: float = 120.0,
    settings: ModelSettings | None = None,
    policies: Policies | None = None,
    on_round: Callable[[GateRound], None] | None = None,
    task_file: str | Path | None = None,
    on_check: CheckWatcher | None = None,
) -> TaskResult:
    """Run `spec` to ``done``, ``awaiting_review``, ``escalated`` or ``failed``.

    `model` and `verifier_model` default to the task's ``model`` and ``verifier``
    (``provider:name``; a ``script:FILE`` must be loaded by the caller and passed as a `Model`).
    Certificates and reports go under `output_dir`, else ``$DONEGATE_HOME`` (``~/.donegate``).
    `on_round` sees every gate judgement and `on_check` is entered around each check while it
    runs (live progress). `task_file`, the file `spec` came
    from, is protected when it sits inside the workdir.
    """
    p = _prepare(
        spec, model=model, verifier_model=verifier_model, workdir=workdir, events=events,
        output_dir=output_dir, completion_tool=completion_tool, check_timeout=check_timeout,
        on_round=on_round, task_file=task_file, on_check=on_check,
    )  # fmt: skip
    result = run(
        spec.prompt,
        model=p.model,
        tools=p.tools,
        system=p.system,
        max_steps=spec.max_steps,
        settings=settings,
        finish_tool=_COMPLETION_SCHEMA if completion_tool else None,
        finish_tool_name=completion_tool or "submit_answer",
        policies=policies,
        run_id=spec.id,
        ledger=ledger,
        gate=p.gate,
        events=p.sink,
    )
    return _finish(p, result)


async def arun_task(
    spec: TaskSpec,
    *,
    model: Model | str | None = None,
    verifier_model: Model | str | None = None,
    workdir: str | Path | None = None,
    ledger: EffectLedger | None = None,
    events: EventSink | None = None,
    output_dir: str | Path | None = None,
    completion_tool: str | None = COMPLETION_TOOL,
    check_timeout: float = 120.0,
    settings: ModelSettings | None = None,
    policies: Policies | None = None,
    on_round: Callable[[GateRound], None] | None = None,
    task_file: str | Path | None = None,
    on_check: CheckWatcher | None = None,
) -> TaskResult:
    """The async `run_task` (the gate's checks and verifier run on a thread)."""
    p = _prepare(
        spec, model=model, verifier_model=verifier_model, workdir=workdir, events=events,
        output_dir=output_dir, completion_tool=completion_tool, check_timeout=check_timeout,
        on_round=on_round, task_file=task_file, on_check=on_check,
    )  # fmt: skip
    result = await arun(
        spec.prompt,
        model=p.model,
        tools=p.tools,
        system=p.system,
        max_steps=spec.max_steps,
        settings=settings,
        finish_tool=_COMPLETION_SCHEMA if completion_tool else None,
        finish_tool_name=completion_tool or "submit_answer",
        policies=policies,
        run_id=spec.id,
        ledger=ledger,
        gate=p.gate,
        events=p.sink,
    )
    return _finish(p, result)


def _prepare(
    spec: TaskSpec,
    *,
    model: Model | str | None,
    verifier_model: Model | str | None,
    workdir: str | Path | None,
    events: EventSink | None,
    output_dir: str | Path | None,
    completion_tool: str | None,
    check_timeout: float,
    on_round: Callable[[GateRound], None] | None,
    task_file: str | Path | None = None,
    on_check: CheckWatcher | None = None,
) -> _Prepared:
    root = Path(workdir if workdir is not None else spec.workdir or Path.cwd()).resolve()
    if not root.is_dir():
        raise UserError(f"{spec.id}: workdir is not a directory: {root}")
    out = Path(output_dir) if output_dir else data_dir()
    patterns, pinned = task_patterns(spec, root, task_file=task_file)
    protected = take_manifest(root, patterns, pinned=pinned)
    worker = _resolve(model if model is not None else spec.model, "model", spec.id)
    judge = verifier_model if verifier_model is not None else spec.verifier
    verifier = Verifier(_resolve(judge, "verifier", spec.id)) if judge is not None else None
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
        check_timeout=check_timeout,
        on_round=on_round,
        protected=protected,
        on_check=on_check,
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
        sink=fan_out(evidence, checklist, events),
        system=_system(spec, checklist, completion_tool, protected),
        completion_tool=completion_tool,
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


def build_tools(
    spec: TaskSpec, root: Path, checklist: Checklist, *, protected: Manifest | None = None
) -> list[Tool]:
    """The task's tools: built-ins confined to `root` (``write_file`` refusing `protected`
    paths), user tools by import path."""
    guard = protected.covers_path if protected is not None and not protected.empty else None
    workspace = Workspace(
        root,
        max_read_bytes=spec.max_read_bytes,
        max_command_timeout=spec.max_command_timeout,
        protected=guard,
    )
    tools: list[Tool] = []
    for ref in spec.tools:
        if isinstance(ref, ImportTool):
            tools.append(_import_tool(ref, root))
        elif ref == CHECKLIST_TOOL:
            tools.append(checklist.tool())
        else:
            tools.append(
                workspace_tool(
                    workspace, ref, side_effect=_SIDE_EFFECTS[ref], idempotent=ref in _IDEMPOTENT
                )
            )
    return tools


def side_effect_tools(spec: TaskSpec) -> frozenset[str]:
    """Names of `spec`'s tools that get idempotency keys (their calls go through the ledger)."""
    return frozenset(
        ref.tool_name if isinstance(ref, ImportTool) else ref
        for ref in spec.tools
        if (ref.side_effect if isinstance(ref, ImportTool) else _SIDE_EFFECTS.get(ref, False))
    )


def _import_tool(ref: ImportTool, root: Path) -> Tool:
    module_name, _, attr = ref.import_path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        sys.path.insert(0, str(root))  # task-local tool modules live in the workdir
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise UserError(f"tool {ref.import_path}: no module named {exc.name!r}") from None
        finally:
            sys.path.remove(str(root))
    obj = getattr(module, attr, None)
    if isinstance(obj, Tool):
        return replace(obj, name=ref.tool_name, side_effect=ref.side_effect)
    if not callable(obj):
        raise UserError(f"tool {ref.import_path}: {module_name} has no function {attr!r}")
    return Tool.from_function(obj, name=ref.tool_name, side_effect=ref.side_effect)


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
    }
    if result.status is Status.COMPLETE:
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
        )
        path = write_certificate(cert, p.out / "certificates")
        if p.spec.closure == "human":
            return _awaiting_review(p, result, path, common)
        reason = "every gate passed"
        if not cert.closure.backed_by_checks:
            reason += " (closure: model; no mechanical check backed it)"
        return TaskResult(status="done", reason=reason, certificate=path, **common)
    if result.status is Status.GATED:
        report = build_report(
            task_id=p.spec.id,
            reason=result.reason,
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
        )
        json_path, md_path = write_report(report, p.out / "escalations")
        report = report.with_files(str(json_path), str(md_path))
        return TaskResult(status="escalated", reason=result.reason, escalation=report, **common)
    reason = f"{result.status.value}: {result.reason}"
    return TaskResult(status="failed", reason=reason, **common)


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
    )
    json_path, md_path = write_report(report, p.out / "reviews")
    report = report.with_files(str(json_path), str(md_path))
    return TaskResult(
        status="awaiting_review", reason=reason, certificate=certificate, escalation=report,
        **common,
    )  # fmt: skip
