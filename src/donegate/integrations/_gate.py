"""The framework-neutral gate every integration wraps: a task file's gate, fed one turn at a time.

A framework (pydantic-ai, the Agents SDK, LangChain) owns the loop and the tools; donegate owns
the decision of when the task is done. Each integration turns the framework's model response
into a donegate `Turn` and asks `HostGate.observe`, which:

1. lets a tool-using (or paused) turn through: it is not a claim;
2. stops at once on a refusal, a content filter, an overflowing context or a provider error: the
   same model would answer the same, so it is not asked again (`Escalated`, with a report);
3. answers a truncated, empty or malformed turn with a nudge, never as the final answer,
   counted against ``max_continuations`` like any continuation;
4. hands a clean text end (or a finish-tool call, `claim`) to `CompletionGate.judge`, the one
   place the gate's rule lives: accept writes the signed certificate (``certificate``), continue
   returns the nudge, stop escalates.

The certificate records the host (``host: {name, version, tools_isolated: false}``): the
framework ran the agent's tools, so only the checks ran where donegate put them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, NoReturn

from donegate.config import data_dir
from donegate.errors import Escalated, UserError
from donegate.harness.certificate import build_certificate, write_certificate
from donegate.harness.checklist import Checklist
from donegate.harness.escalation import build_report, round_data, write_report
from donegate.harness.evidence import Evidence
from donegate.harness.gate import CompletionGate
from donegate.harness.protect import Manifest, take_manifest, task_patterns
from donegate.harness.spec import TaskSpec, load_task
from donegate.loop import RESUME_PROMPT
from donegate.messages import Ending, Message, RefusalPart, TextPart, ToolCall, Turn

__all__ = ["FINISH_TOOL", "Decision", "FrameworkGate", "HostGate", "assistant_turn"]

FINISH_TOOL = "task_complete"
"""The finish tool's name, as `donegate run` offers it (`donegate.harness.runner`)."""
FINISH_DESCRIPTION = (
    "Call this once, when the whole task is finished; the harness then runs its own acceptance "
    "checks, and tells you what is missing if they fail."
)

_AT_ONCE = {
    Ending.REFUSED: "the model refused; a refusal is not retried on the same model",
    Ending.FILTERED: "a content filter stopped the response; it is not retried on the same model",
    Ending.CONTEXT_EXCEEDED: "the conversation no longer fits the model's context window",
    Ending.ERROR: "the provider failed",
}
_NUDGES = {
    Ending.TRUNCATED: RESUME_PROMPT,
    Ending.EMPTY: "Your last response was empty. Continue the task, or state the blocker.",
    Ending.MALFORMED_TOOL_CALL: (
        "Your last tool call could not be used. Call the tool again with valid JSON arguments."
    ),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """What the framework's loop does with one model response."""

    action: Literal["proceed", "continue", "accept"]
    """``proceed``: not a claim, let the framework go on; ``continue``: send `message` and ask
    the model again; ``accept``: the task is done, the certificate is written."""
    message: str | None = None
    """The nudge to send, for ``continue``."""


def assistant_turn(
    *,
    text: str = "",
    calls: tuple[ToolCall, ...] = (),
    refusal: str | None = None,
    ending: Ending,
    raw_reason: str | None = None,
    model: str | None = None,
    api: str | None = None,
) -> Turn:
    """A donegate `Turn` from what a framework's response holds (each adapter reads its own)."""
    parts: list[Any] = [TextPart(text=text)] if text else []
    if refusal:
        parts.append(RefusalPart(text=refusal))
    parts.extend(calls)
    message = Message(role="assistant", parts=tuple(parts))
    return Turn(message=message, ending=ending, raw_reason=raw_reason, model=model, api=api)


class HostGate:
    """A task file's gate, for a loop donegate does not own. One per run (`start` resets it)."""

    def __init__(
        self,
        task: str | Path | TaskSpec,
        *,
        host: str,
        host_version: str | None = None,
        workdir: str | Path | None = None,
        output_dir: str | Path | None = None,
        check_timeout: float = 120.0,
    ) -> None:
        self.task_file = None if isinstance(task, TaskSpec) else Path(task)
        self.spec = task if isinstance(task, TaskSpec) else load_task(task)
        if self.spec.checklist:
            raise UserError(
                f"{self.spec.id}: a checklist needs donegate's update_checklist tool, which a "
                f"{host} agent does not have; drop `checklist:` or run it with `donegate run`"
            )
        self.host = {"name": host, "version": host_version, "tools_isolated": False}
        """What the certificate says of the framework: it, not donegate, ran the tools."""
        root = Path(workdir if workdir is not None else self.spec.workdir or Path.cwd())
        self.root = root.resolve()
        if not self.root.is_dir():
            raise UserError(f"{self.spec.id}: workdir is not a directory: {self.root}")
        self.out = Path(output_dir) if output_dir is not None else data_dir()
        self.check_timeout = check_timeout
        self.certificate: Path | None = None
        """The signed certificate's path, after a run the gate accepted."""
        self.report: Path | None = None
        """The escalation report's JSON path, after a run the gate stopped."""
        self.start()

    def start(self) -> None:
        """Begin a run: digest the protected files, reset the budget and the transcript."""
        patterns, pinned = task_patterns(self.spec, self.root, task_file=self.task_file)
        self.protected: Manifest = take_manifest(self.root, patterns, pinned=pinned)
        self.checklist = Checklist(self.spec.checklist)
        self.evidence = Evidence()
        self.gate = CompletionGate(
            checks=self.spec.checks,
            workdir=self.root,
            checklist=self.checklist,
            evidence=self.evidence,
            completion_condition=self.spec.completion_condition,
            max_continuations=self.spec.max_continuations,
            check_timeout=self.check_timeout,
            protected=self.protected,
        )
        self.transcript: list[Message] = [Message.user(self.spec.prompt)]
        self.model_calls = 0
        self.model_name: str | None = None
        self.started = time.time()
        self.certificate = None
        self.report = None

    @property
    def continuations(self) -> int:
        """Continuations granted so far (the gate's nudges and the broken turns' together)."""
        return self.gate.continuations

    @property
    def system_note(self) -> str:
        """What the model is told of the gate (added to the framework's instructions)."""
        notes = []
        if self.spec.completion_condition:
            notes.append(f"The task is done when: {self.spec.completion_condition}")
        if self.spec.checks:
            notes.append("When you say you are done, the harness runs its own acceptance checks.")
        if not self.protected.empty:
            protected = ", ".join([*self.protected.patterns, *self.protected.pinned])
            notes.append(f"These files are protected and must not change: {protected}")
        return "\n".join(notes)

    def observe(self, turn: Turn, *, text_nudge: str | None = None) -> Decision:
        """Decide one model response (steps 1-4 of the module docstring).

        With `text_nudge`, a clean text end is not a claim but a turn that is never final (a
        host whose only way to finish is the finish tool): it is answered with that nudge.
        """
        self.model_calls += 1
        self.model_name = turn.model or self.model_name
        self.transcript.append(turn.message)
        if turn.ending in (Ending.TOOL_USE, Ending.PAUSED):
            return Decision(action="proceed")
        if turn.ending in _AT_ONCE:
            why = _AT_ONCE[turn.ending]
            self.escalate(f"{why} ({turn.raw_reason or turn.ending.value})")
        nudge = _NUDGES.get(turn.ending)
        if text_nudge is not None and turn.ending is Ending.COMPLETE:
            nudge = text_nudge
        if nudge is None:
            return self.claim(turn)
        if self.gate.continuations >= self.gate.max_continuations:
            what = "a text answer without the finish tool"
            if turn.ending is not Ending.COMPLETE:
                what = f"{turn.ending.value} ({turn.raw_reason or '-'})"
            self.escalate(
                f"not done after {self.gate.continuations} continuation(s): the last turn was "
                + what
            )
        self.gate.continuations += 1
        return self._nudge(nudge)

    def claim(self, turn: Turn, output: Mapping[str, Any] | None = None) -> Decision:
        """Judge a claim of done (a clean text end, or the finish tool's arguments)."""
        verdict = self.gate.judge(turn, self.transcript, None if output is None else dict(output))
        if verdict.action == "accept":
            self._certify()
            return Decision(action="accept")
        if verdict.action == "continue":
            return self._nudge(verdict.message or verdict.reason)
        self.escalate(verdict.reason)

    def _nudge(self, message: str) -> Decision:
        self.transcript.append(Message.user(message))
        return Decision(action="continue", message=message)

    def _certify(self) -> None:
        cert = build_certificate(
            spec=self.spec,
            workdir=self.root,
            checks=self.gate.last_checks,
            evidence=self.evidence,
            transcript=self.transcript,
            models={"worker": self.model_name, "verifier": None},
            started_at=self.started,
            finished_at=time.time(),
            continuations=self.gate.continuations,
            model_calls=self.model_calls,
            checklist=self.checklist.as_data(),
            protected=self.protected,
            resolved=True,
            host=self.host,
        )
        self.certificate = write_certificate(cert, self.out / "certificates")

    def escalate(self, reason: str) -> NoReturn:
        """Write the escalation report and raise `Escalated` carrying its path."""
        report = build_report(
            task_id=self.spec.id,
            reason=reason,
            prompt=self.spec.prompt,
            completion_condition=self.spec.completion_condition,
            continuations=self.gate.continuations,
            max_continuations=self.gate.max_continuations,
            model_calls=self.model_calls,
            checklist=self.checklist.as_data(),
            checks=self.gate.last_checks,
            rounds=[round_data(r) for r in self.gate.rounds],
            transcript=self.transcript,
            extra={"workdir": str(self.root), "host": self.host["name"]},
        )
        json_path, _ = write_report(report, self.out / "escalations")
        self.report = json_path
        raise Escalated(reason, report=json_path)


class FrameworkGate:
    """What every framework adapter holds: one `HostGate` for a task file, and what it left.

    Each adapter names its framework (`host`, `host_version`) and adds its hooks; the constructor
    and the results read the same for all of them.
    """

    host: ClassVar[str]
    """The framework's name, recorded as the certificate's host."""
    host_version: ClassVar[str]
    """The framework's installed version, recorded with it."""

    def __init__(
        self,
        task: str | Path | TaskSpec,
        *,
        workdir: str | Path | None = None,
        output_dir: str | Path | None = None,
        check_timeout: float = 120.0,
    ) -> None:
        super().__init__()
        self._gate = HostGate(
            task,
            host=self.host,
            host_version=self.host_version,
            workdir=workdir,
            output_dir=output_dir,
            check_timeout=check_timeout,
        )

    @property
    def gate(self) -> HostGate:
        """The framework-neutral gate (budget, transcript, task)."""
        return self._gate

    @property
    def certificate(self) -> Path | None:
        """The signed certificate's path, after a run the gate accepted."""
        return self._gate.certificate

    @property
    def report(self) -> Path | None:
        """The escalation report's path, after a run the gate stopped."""
        return self._gate.report
