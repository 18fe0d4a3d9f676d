"""The completion gate inside your own Temporal workflows (``pip install "donegate[temporal]"``).

Your workflow owns the agent (its model calls and tools as your activities); donegate's
activities decide when the task is done, and `GatedAgent` is a workflow you run as a child that
drives your agent activity through the gate's rounds:

1. ``donegate.start_gate`` digests the task's protected files once (`GateState.baseline`), so
   every later judgement compares against the workdir as it was before the agent ran.
2. Your agent activity (its name in `GatedAgentInput.agent_activity`) gets an `AgentRound` (the
   prompt, the gate's nudge, the round) and returns one model turn as donegate's turn JSON
   (``donegate.codec.turn_to_json``; ``donegate.classify_turn`` makes one from a provider body).
3. ``donegate.judge`` decides that turn with `HostGate`, rebuilt from the `GateState` the
   workflow carries: a tool-using turn proceeds, a truncated or empty one is nudged, a claim runs
   the task's checks in the clean room on the activity's host and is accepted (a signed
   certificate), continued (the nudge), or escalated (a report).
4. The rounds, continuations and escalation are this deterministic workflow code; the state
   crosses activities as data, so a worker dying mid-judgement re-runs only that judgement.

Retry policies, as `GatedAgent` uses them (use the same when you call the activities yourself):

* `CLASSIFY_RETRY`: 3 attempts; a body that is not the wire format's (``WireFormatError``) is not
  retried.
* `CHECKS_RETRY` and `JUDGE_RETRY`: 3 attempts, 2 s doubling; a bad task file or workdir
  (``UserError``) is not retried. A check's failure is a result, not an error: it never retries.
* Your agent activity: `AGENT_RETRY` (5 attempts, 1 s doubling to 30 s) unless you pass another.

The certificate records the host as ``temporal`` with ``tools_isolated: false``: your
activities ran the agent's tools, so only the checks ran where donegate put them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

from donegate.errors import Escalated, UserError

__all__ = [
    "AGENT_RETRY",
    "CHECKS_RETRY",
    "CLASSIFY_RETRY",
    "JUDGE_RETRY",
    "AgentRound",
    "ChecksInput",
    "ClassifyInput",
    "GateStart",
    "GateState",
    "GateVerdict",
    "GatedAgent",
    "GatedAgentInput",
    "GatedAgentResult",
    "JudgeInput",
    "activities",
    "classify_turn",
    "judge",
    "run_checks",
    "start_gate",
]

CLASSIFY_RETRY = RetryPolicy(maximum_attempts=3, non_retryable_error_types=["WireFormatError"])
CHECKS_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2),
    maximum_attempts=3,
    non_retryable_error_types=["UserError"],
)
JUDGE_RETRY = CHECKS_RETRY
AGENT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
)


@dataclass(kw_only=True)
class ClassifyInput:
    """A provider response to classify: the API's name (as ``donegate classify`` takes it)."""

    api: str
    body: Any
    stream: bool = False
    status: int = 200


@dataclass(kw_only=True)
class ChecksInput:
    """A task file's checks, to run on `workdir` (default: the task's)."""

    task: str
    workdir: str | None = None


@dataclass(kw_only=True)
class GateStart:
    """Where a gated run begins: the task file and its workdir (default: the task's)."""

    task: str
    workdir: str | None = None


@dataclass(kw_only=True)
class GateState:
    """Everything the gate remembers between judgements, carried by the workflow as data."""

    task: str
    workdir: str
    prompt: str
    baseline: dict[str, Any]
    """The protected files' manifest, taken before the agent ran."""
    transcript: list[dict[str, Any]] = field(default_factory=list)
    continuations: int = 0
    model_calls: int = 0
    started: float = 0.0


@dataclass(kw_only=True)
class JudgeInput:
    state: GateState
    turn: dict[str, Any]
    """One model turn as ``donegate.codec.turn_to_json`` writes it."""


@dataclass(kw_only=True)
class GateVerdict:
    """The gate's decision on one turn, and the state to carry to the next."""

    action: str
    """``proceed``, ``continue``, ``accept`` or ``escalate``."""
    state: GateState
    message: str = ""
    """The nudge (continue) or the reason (escalate)."""
    certificate: str | None = None
    report: str | None = None


@activity.defn(name="donegate.classify_turn")
def classify_turn(given: ClassifyInput) -> dict[str, Any]:
    """How a provider response ended, as donegate's turn JSON."""
    from donegate.codec import turn_to_json
    from donegate.models.registry import classify

    return turn_to_json(classify(given.api, given.body, stream=given.stream, status=given.status))


@activity.defn(name="donegate.run_checks")
def run_checks(given: ChecksInput) -> list[dict[str, Any]]:
    """The task's checks, each run in the clean room on this host: results, no decision."""
    from donegate.codec import to_data
    from donegate.harness.checks import run_checks as run
    from donegate.harness.spec import load_task

    spec = load_task(Path(given.task))
    root = Path(given.workdir or spec.workdir or ".").resolve()
    return [to_data(r) for r in run(spec.checks, root)]


@activity.defn(name="donegate.start_gate")
def start_gate(given: GateStart) -> GateState:
    """Digest the protected files and begin a gated run."""
    gate = _gate(given.task, given.workdir)
    return GateState(
        task=given.task,
        workdir=str(gate.root),
        prompt=gate.spec.prompt,
        baseline=gate.protected.as_data(),
        started=time.time(),
    )


@activity.defn(name="donegate.judge")
def judge(given: JudgeInput) -> GateVerdict:
    """Decide one turn with the task's gate, restored from `given.state`."""
    from donegate.codec import message_from_json, message_to_json, turn_from_json
    from donegate.harness.protect import Manifest

    state = given.state
    gate = _gate(state.task, state.workdir)
    gate.protected = gate.gate.protected = Manifest.from_data(state.baseline, gate.root)
    if state.transcript:
        gate.transcript = [message_from_json(m) for m in state.transcript]
    gate.gate.continuations = state.continuations
    gate.model_calls = state.model_calls
    gate.started = state.started or gate.started
    try:
        decision = gate.observe(turn_from_json(given.turn))
        action, message = decision.action, decision.message or ""
    except Escalated as exc:
        action, message = "escalate", exc.reason
    after = GateState(
        task=state.task,
        workdir=state.workdir,
        prompt=state.prompt,
        baseline=state.baseline,
        transcript=[message_to_json(m) for m in gate.transcript],
        continuations=gate.continuations,
        model_calls=gate.model_calls,
        started=gate.started,
    )
    return GateVerdict(
        action=action,
        state=after,
        message=message,
        certificate=str(gate.certificate) if gate.certificate else None,
        report=str(gate.report) if gate.report else None,
    )


def _gate(task: str, workdir: str | None) -> Any:
    from donegate.integrations._gate import HostGate

    try:
        return HostGate(task, host="temporal", workdir=workdir)
    except UserError:
        raise
    except OSError as exc:
        raise UserError(f"{task}: {exc}") from None


def activities() -> list[Any]:
    """The gate's activities, to register with your Temporal worker."""
    return [classify_turn, run_checks, start_gate, judge]


@dataclass(kw_only=True)
class AgentRound:
    """What your agent activity is asked: answer `prompt`, or go on after `nudge`."""

    prompt: str
    round: int
    nudge: str = ""
    transcript: list[dict[str, Any]] = field(default_factory=list)
    """The conversation so far (donegate's message JSON), the gate's nudges included."""


@dataclass(kw_only=True)
class GatedAgentInput:
    """A `GatedAgent` run: a task file, and the activity that runs your agent for one turn."""

    task: str
    agent_activity: str
    workdir: str | None = None
    agent_timeout_s: float = 600.0
    max_turns: int = 50
    """Turns before the workflow escalates on its own (tool-using turns included)."""


@dataclass(kw_only=True)
class GatedAgentResult:
    """How the gated run ended: ``done`` with a certificate, or ``escalated`` with a report."""

    status: str
    reason: str = ""
    certificate: str | None = None
    report: str | None = None
    turns: int = 0
    continuations: int = 0


@workflow.defn(name="donegate.gated_agent", sandboxed=False)
class GatedAgent:
    """Your agent activity, turn by turn, behind donegate's completion gate (steps 1-4 above).

    Not sandboxed: it reads no clock, randomness or I/O itself; every such thing is an activity.
    """

    @workflow.run
    async def run(self, given: GatedAgentInput) -> GatedAgentResult:
        timeout = timedelta(seconds=60)
        state: GateState = await workflow.execute_activity(
            start_gate, GateStart(task=given.task, workdir=given.workdir),
            start_to_close_timeout=timeout, retry_policy=JUDGE_RETRY,
        )  # fmt: skip
        nudge = ""
        for turn_no in range(1, given.max_turns + 1):
            turn: dict[str, Any] = await workflow.execute_activity(
                given.agent_activity,
                AgentRound(prompt=state.prompt, round=turn_no, nudge=nudge,
                           transcript=state.transcript),
                result_type=dict,
                start_to_close_timeout=timedelta(seconds=given.agent_timeout_s),
                retry_policy=AGENT_RETRY,
            )  # fmt: skip
            verdict: GateVerdict = await workflow.execute_activity(
                judge, JudgeInput(state=state, turn=turn),
                start_to_close_timeout=timedelta(seconds=600), retry_policy=JUDGE_RETRY,
            )  # fmt: skip
            state = verdict.state
            if verdict.action == "accept":
                return GatedAgentResult(
                    status="done", certificate=verdict.certificate, turns=turn_no,
                    continuations=state.continuations,
                )  # fmt: skip
            if verdict.action == "escalate":
                return GatedAgentResult(
                    status="escalated", reason=verdict.message, report=verdict.report,
                    turns=turn_no, continuations=state.continuations,
                )  # fmt: skip
            nudge = verdict.message if verdict.action == "continue" else ""
        return GatedAgentResult(
            status="escalated", reason=f"no claim the gate accepted in {given.max_turns} turns",
            turns=given.max_turns, continuations=state.continuations,
        )  # fmt: skip
