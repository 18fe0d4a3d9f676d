"""Page models built from store records: a run's journal step by step, a certificate's state.

A step is one model call: its journaled turn (ending, raw reason, tokens), the tool calls it
made, the results the harness gave back, and what the gate did with it. The gate's verdicts are
read from the journal itself: a message the harness sent back at that step is the gate's
continuation (its nudge names what is missing), and the run's end is the last step's verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic

from donegate.errors import UserError
from donegate.harness.certificate import verify_certificate
from donegate.harness.signing import signature_problem
from donegate.messages import Message, ToolCall, ToolResult, Turn
from donegate.records.certificate import Certificate, CertificateCheck, read_certificate
from donegate.store import RunJournal

__all__ = ["CertificateView", "StepView", "certificate_view", "steps_of"]


@dataclass(kw_only=True)
class StepView:
    """One model call of a run."""

    step: int
    """The model-call number (0: the prompt the run started from)."""
    turn: Turn | None = None
    """The classified turn, from the journal (None for the prompt, or when not journaled)."""
    replayed: bool = False
    """True when this run answered the step from an earlier run's journal (a resume)."""
    said: list[Message] = field(default_factory=list)
    """What the model said (assistant messages)."""
    calls: list[ToolCall] = field(default_factory=list)
    """Tool calls it made."""
    results: list[ToolResult] = field(default_factory=list)
    """The harness's answers."""
    sent: list[Message] = field(default_factory=list)
    """Messages the harness sent on (the prompt at step 0; a gate's continuation after)."""
    gate: str | None = None
    """The gate's verdict on this step, when it judged one."""


def steps_of(journal: RunJournal, generation_turns: Mapping[int, Turn]) -> list[StepView]:
    """`journal`'s steps in order; `generation_turns` are every run's turns of its generation."""
    steps: dict[int, StepView] = {}
    for step, message in journal.messages:
        view = steps.setdefault(step, StepView(step=step))
        if message.role == "assistant":
            view.said.append(message)
            view.calls.extend(message.tool_calls)
        elif message.role == "tool":
            view.results.extend(message.results)
        else:
            view.sent.append(message)
    for step, turn in journal.turns.items():
        steps.setdefault(step, StepView(step=step)).turn = turn
    for view in steps.values():
        if view.turn is None and view.step in generation_turns:
            view.turn = generation_turns[view.step]
            view.replayed = True
        if view.step > 0 and view.sent:
            view.gate = "continued: " + " ".join(m.text for m in view.sent if m.text)
    ordered = [steps[k] for k in sorted(steps)]
    last = next((v for v in reversed(ordered) if v.step > 0), None)
    run = journal.run
    if last is not None and last.gate is None:
        if run.status == "done":
            last.gate = "accepted: " + (run.reason or "every gate passed")
        elif run.status in ("escalated", "failed", "awaiting_review"):
            last.gate = f"{run.status}: {run.reason or ''}".rstrip(": ")
    return ordered


@dataclass(frozen=True, kw_only=True, slots=True)
class CertificateView:
    """A task's certificate as read from disk now, and whether it still proves itself."""

    path: str
    """Where the worker wrote it."""
    body: Certificate | None
    """The certificate (None when it could not be read or is of no version read here)."""
    problem: str | None
    """Why it could not be read."""
    signature: str
    """``valid``, ``invalid`` or ``unsigned``."""
    signature_detail: str | None
    """Why a signature is invalid."""
    proof: list[str]
    """What `verify_certificate` (signature, digests, evidence, transcript; checks not re-run)
    found wrong; empty when it holds."""


def certificate_view(path: str) -> CertificateView:
    """Read the certificate at `path` (bounded) and check its signature and digests.

    The checks are not re-run here (``donegate verify`` does that): a page must not run
    commands.
    """
    try:
        raw = read_certificate(path)
    except UserError as exc:
        return CertificateView(
            path=path,
            body=None,
            problem=str(exc),
            signature="invalid",
            signature_detail="the certificate could not be read",
            proof=[str(exc)],
        )
    state, detail = signature_state(raw)
    try:
        _, proof = verify_certificate(path, rerun=False)
    except UserError as exc:  # no key to check with: nothing can be proven
        proof = [str(exc)]
    try:
        body: Certificate | None = Certificate.from_data(raw)
    except pydantic.ValidationError:  # version 1, malformed: its signature and proof say so
        body = None
    if body is not None and body.status != "done":
        proof = [p for p in proof if not p.startswith("status:")]
    return CertificateView(
        path=path, body=body, problem=None, signature=state, signature_detail=detail, proof=proof
    )


def signature_state(body: Mapping[str, Any]) -> tuple[str, str | None]:
    """``("unsigned", None)``, ``("valid", None)`` or ``("invalid", why)``.

    The harness's own check decides (`signature_problem`); a signature it cannot check (no
    key) is shown invalid, never valid.
    """
    if body.get("signature") is None:
        return "unsigned", None
    try:
        problem = signature_problem(body)
    except UserError as exc:
        return "invalid", str(exc)
    return ("valid", None) if problem is None else ("invalid", problem)


def tool_output(result: ToolResult) -> str:
    """A result's content (the template clips it)."""
    return result.content


def spec_prompt(spec: Mapping[str, Any]) -> str:
    """The task's prompt as submitted."""
    prompt = spec.get("prompt")
    return prompt if isinstance(prompt, str) else ""


def checks_of(body: Certificate) -> Sequence[CertificateCheck]:
    """A certificate's check entries."""
    return body.checks
