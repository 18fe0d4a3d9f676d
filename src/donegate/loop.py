"""The agent loop: call the model, classify at once, then act on the ending.

The algorithm is a generator of actions (sans I/O): it yields `CallModel`, `RunTools` and
`Judge`, receives their outcomes, and returns a `RunResult`. `donegate.run` and `donegate.arun`
drive it with plain or async I/O, so both paths take exactly the same decisions.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, TypeAlias

from donegate.events import EventSink, ModelCalled, Progress, RunEnded, ToolCalled, TurnAppended
from donegate.finish import FinishTool
from donegate.messages import Ending, Message, TextPart, ToolCall, ToolResult, Turn, Usage
from donegate.models.base import Model, ModelRequest, ModelSettings
from donegate.results import _TERMINAL, RunResult, Status, ToolCallRecord
from donegate.tools import Tool, error_result

__all__ = [
    "CallModel",
    "Judge",
    "Policies",
    "RunResult",
    "RunTools",
    "Status",
    "ToolCallRecord",
    "Verdict",
    "agent_loop",
]

# `Status`, `RunResult`, `ToolCallRecord` and the Ending -> Status table `_TERMINAL` live in
# `donegate.results` (the bottom layer); they are re-exported here, where they used to live.


RESUME_PROMPT = (
    "Your last response was cut off at the output limit. Continue exactly where it stopped, "
    "without repeating what you already wrote."
)

MALFORMED_PROMPT = (
    "Your last tool call could not be used ({problem}). Call the tool again with valid JSON "
    "arguments that match its schema, or answer in text."
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Policies:
    """What the loop does with each ending that is not `complete` or `tool_use`."""

    truncation: Literal["retry", "resume", "fail"] = "retry"
    """``retry`` the call with a doubled output limit; ``resume`` asks the model to continue."""
    truncation_retries: int = 1
    """Attempts after a truncated turn before the run ends `truncated`."""
    malformed_retries: int = 2
    """Times unparseable arguments are fed back before the run ends `malformed_tool_call`."""
    pause_retries: int = 10
    """Times a paused turn (``pause_turn``) is resent as-is."""
    finish_retries: int = 2
    """Times invalid finish-tool arguments are fed back."""
    fallback_model: Model | None = None
    """Asked once after a refusal (not for `no_fallback`); None: refusals end."""
    no_fallback: frozenset[str] = frozenset({"reasoning_extraction"})
    """Refusal details that another model must not be asked about (Anthropic's category for
    attempts to extract reasoning)."""
    default_max_tokens: int = 4096
    """Output limit doubled on a retry when the request set none."""
    resume_prompt: str = RESUME_PROMPT
    """The message sent under ``truncation="resume"``."""
    malformed_prompt: str = MALFORMED_PROMPT
    """The message sent after a malformed call the provider returned no call for; ``{problem}``
    is the provider's own description of it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """A completion gate's answer to a claim of completion."""

    action: Literal["accept", "continue", "stop"]
    """Accept the claim, continue with `message`, or stop without accepting."""
    message: str = ""
    """The nudge sent as the next user message on ``continue``."""
    reason: str = ""
    """Why, for the result and the record."""


class Gate(Protocol):
    """Decides whether a claimed completion is done (the harness implements it)."""

    def judge(self, claim: Turn, transcript: Sequence[Message], output: Any) -> Verdict:
        """Judge a text-only end of turn or a finish-tool call."""
        ...


# -- actions the algorithm yields --------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class CallModel:
    """Call `model` with `request`; send back the classified `Turn`."""

    model: Model
    """The model to call (the fallback after a refusal)."""
    request: ModelRequest
    """The request."""
    step: int
    """1-based model-call number."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunTools:
    """Run these calls (concurrently when several); send back `ToolCallRecord`s in call order."""

    step: int
    """The model call that asked."""
    calls: tuple[tuple[ToolCall, Tool | None, str | None], ...]
    """Each call with its tool (None if unknown) and idempotency key (side effects only)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Judge:
    """Ask the gate about a claim; send back a `Verdict`."""

    gate: Gate
    """The gate."""
    claim: Turn
    """The turn that claims completion."""
    transcript: tuple[Message, ...]
    """The conversation so far, the claim included."""
    output: Any
    """The finish tool's validated output, if a finish tool made the claim."""


Action: TypeAlias = CallModel | RunTools | Judge


@dataclass(kw_only=True, slots=True)
class LoopConfig:
    """Everything one run needs, resolved (no strings left to interpret)."""

    model: Model
    tools: Mapping[str, Tool]
    settings: ModelSettings
    max_steps: int
    policies: Policies
    finish: FinishTool | None = None
    budget_tokens: int | None = None
    run_id: str = "run"
    gate: Gate | None = None
    sink: EventSink | None = None


def agent_loop(config: LoopConfig, transcript: list[Message]) -> Generator[Action, Any, RunResult]:
    """Run the agent loop over `transcript` (mutated in place as the conversation grows).

    1. Guards, before every call: `max_steps` counts model calls; `budget_tokens` the usage.
    2. Call the model and classify the response at once; nothing is appended yet.
    3. Act on the ending:
       - ``tool_use``: answer every call exactly once, in call order, paired by id; a raising
         tool becomes an error result. A finish-tool call with valid arguments is a claim (5).
         If this was the last allowed call, the calls are recorded as not executed and the run
         ends ``max_steps``: no side effect the model never sees.
       - ``complete``: a claim (5); so is an ``empty`` turn carrying thinking (a progress
         update) when a gate is configured.
       - ``truncated``: retry once with a doubled output limit (or ask to resume); a partial
         tool call is never executed. Then ``truncated``.
       - ``malformed_tool_call``: feed the parse error back as error results, twice at most; a
         malformed turn with no call to answer (the provider rejected it and sent none) is
         answered by a user message naming the provider's description, on the same budget.
       - ``paused``: resend the assistant content as-is, up to 10 times.
       - ``refused``: never retried on the same model; once on a fallback model if configured
         (not for ``reasoning_extraction``). Then ``refused``.
       - ``filtered``, ``context_exceeded``, ``empty``, ``error``: terminal, each its own status.
    4. Append what the step produced and loop.
    5. A claim ends the run ``complete`` unless a gate says to continue (its nudge becomes the
       next user message) or to stop (``gated``).
    """
    policies = config.policies
    settings = config.settings
    model = config.model
    tool_specs = tuple(t.spec for t in config.tools.values())
    if config.finish is not None:
        tool_specs = (*tool_specs, config.finish.spec)
    turns: list[Turn] = []
    records: list[ToolCallRecord] = []
    usage = Usage()
    calls = 0
    retries = {"truncated": 0, "malformed": 0, "paused": 0, "finish": 0}
    fell_back = False

    def emit_appended(step: int, *messages: Message) -> None:
        transcript.extend(messages)
        if config.sink is not None:
            config.sink(TurnAppended(step=step, messages=messages))

    def end(status: Status, reason: str, *, output: Any = None) -> RunResult:
        last = turns[-1] if turns else None
        result = RunResult(
            status=status,
            text=last.text if last is not None else "",
            output=output,
            transcript=tuple(transcript),
            model_calls=calls,
            tool_calls=tuple(records),
            usage=usage,
            ending=last.ending if last is not None else None,
            reason=reason,
            turns=tuple(turns),
        )
        if config.sink is not None:
            config.sink(RunEnded(result=result, ending=result.ending))
        return result

    def unanswered(step: int, batch: Sequence[ToolCall], why: str) -> list[ToolResult]:
        out = []
        for call in batch:
            result = error_result(call, why)
            records.append(ToolCallRecord(step=step, call=call, result=result, executed=False))
            if config.sink is not None:
                config.sink(ToolCalled(step=step, call=call, result=result, executed=False))
            out.append(result)
        return out

    while True:
        # 1. Guards.
        if calls >= config.max_steps:
            return end(Status.MAX_STEPS, f"step limit of {config.max_steps} model calls reached")
        if config.budget_tokens is not None and usage.total_tokens >= config.budget_tokens:
            return end(
                Status.BUDGET_EXCEEDED,
                f"token budget of {config.budget_tokens} spent ({usage.total_tokens} used)",
            )

        # 2. Call and classify.
        calls += 1
        request = ModelRequest(
            model=model.name, messages=tuple(transcript), tools=tool_specs, settings=settings
        )
        started = time.perf_counter()
        turn: Turn = yield CallModel(model=model, request=request, step=calls)
        turns.append(turn)
        usage = usage + turn.usage
        if config.sink is not None:
            config.sink(
                ModelCalled(
                    step=calls,
                    model=model.name,
                    turn=turn,
                    duration_s=time.perf_counter() - started,
                )
            )
            for part in turn.thinking:
                if part.progress and part.text:
                    config.sink(Progress(step=calls, text=part.text))

        # 3. Act on the ending. Retry budgets are per run of consecutive failures.
        ending = turn.ending
        for kind, kept in (
            ("truncated", Ending.TRUNCATED),
            ("malformed", Ending.MALFORMED_TOOL_CALL),
            ("paused", Ending.PAUSED),
        ):
            if ending is not kept:
                retries[kind] = 0
        if ending is Ending.TOOL_USE:
            batch = turn.tool_calls
            finish_call = next(
                (c for c in batch if config.finish and c.name == config.finish.name), None
            )
            if finish_call is not None and config.finish is not None:
                output, problem = config.finish.validate(finish_call.arguments or {})
                others = [c for c in batch if c is not finish_call]
                if problem is None:
                    accepted = ToolResult(
                        call_id=finish_call.id, name=finish_call.name, content="Answer received."
                    )
                    records.append(
                        ToolCallRecord(step=calls, call=finish_call, result=accepted, executed=True)
                    )
                    results = [accepted, *unanswered(calls, others, "not run: the run finished")]
                    emit_appended(
                        calls, turn.message, Message.tool_results(_in_order(batch, results))
                    )
                    verdict = yield from _judge(config, turn, transcript, output)
                    if verdict is None or verdict.action == "accept":
                        return end(Status.COMPLETE, "finish tool called", output=output)
                    if verdict.action == "stop":
                        return end(Status.GATED, verdict.reason)
                    emit_appended(calls, Message.user(verdict.message))
                    continue
                retries["finish"] += 1
                if retries["finish"] > policies.finish_retries:
                    unanswered(calls, batch, "not run: invalid final answer")
                    return end(
                        Status.MALFORMED_TOOL_CALL,
                        f"{config.finish.name} arguments invalid {retries['finish']} times: "
                        f"{problem}",
                    )
                bad = error_result(finish_call, f"invalid answer: {problem}. Call it again.")
                records.append(
                    ToolCallRecord(step=calls, call=finish_call, result=bad, executed=False)
                )
                if calls >= config.max_steps:
                    done = unanswered(calls, others, "not run: the step limit was reached")
                else:
                    done = yield from _run_batch(config, calls, others, records)
                emit_appended(
                    calls, turn.message, Message.tool_results(_in_order(batch, [bad, *done]))
                )
                continue
            if calls >= config.max_steps:
                results = unanswered(calls, batch, "not run: the step limit was reached")
                emit_appended(calls, turn.message, Message.tool_results(results))
                return end(
                    Status.MAX_STEPS,
                    f"step limit of {config.max_steps} model calls reached; "
                    f"{len(batch)} requested tool call(s) not executed",
                )
            done = yield from _run_batch(config, calls, batch, records)
            emit_appended(calls, turn.message, Message.tool_results(done))
            continue

        # An empty turn that carries thinking (an Opus 5.5 progress update) is a report, not a
        # failure, when a gate decides completion: the gate continues it.
        claim = ending is Ending.COMPLETE or (
            ending is Ending.EMPTY and config.gate is not None and bool(turn.thinking)
        )
        if claim:
            emit_appended(calls, turn.message)
            verdict = yield from _judge(config, turn, transcript, None)
            if verdict is None or verdict.action == "accept":
                return end(Status.COMPLETE, "the model finished its turn")
            if verdict.action == "stop":
                return end(Status.GATED, verdict.reason)
            emit_appended(calls, Message.user(verdict.message))
            continue

        if ending is Ending.TRUNCATED:
            partial = bool(turn.tool_calls)
            retries["truncated"] += 1
            if policies.truncation == "fail" or retries["truncated"] > policies.truncation_retries:
                if partial:
                    unanswered(calls, turn.tool_calls, "not run: the call was cut off")
                what = "a tool call" if partial else "the answer"
                return end(Status.TRUNCATED, f"output limit reached while writing {what}")
            if policies.truncation == "resume" and not partial and turn.text:
                emit_appended(
                    calls,
                    Message(role="assistant", parts=(TextPart(text=turn.text),)),
                    Message.user(policies.resume_prompt),
                )
            else:
                limit = settings.max_tokens or policies.default_max_tokens
                settings = replace(settings, max_tokens=limit * 2)
            continue

        if ending is Ending.MALFORMED_TOOL_CALL:
            retries["malformed"] += 1
            batch = turn.tool_calls
            if retries["malformed"] > policies.malformed_retries:
                unanswered(calls, batch, "not run: malformed arguments")
                return end(Status.MALFORMED_TOOL_CALL, turn.detail or "malformed tool call")
            if not batch:
                # The provider rejected the call itself and sent none back: there is no call
                # to answer, so the problem is named in a user message instead.
                if turn.message.parts:
                    emit_appended(calls, turn.message)
                emit_appended(calls, Message.user(_malformed_prompt(policies, turn.detail)))
                continue
            results = [
                error_result(c, f"arguments for {c.name} did not parse: {c.parse_error}")
                if c.parse_error
                else error_result(c, "not run: another call in this turn was malformed")
                for c in batch
            ]
            for c, r in zip(batch, results, strict=True):
                records.append(ToolCallRecord(step=calls, call=c, result=r, executed=False))
            emit_appended(calls, turn.message, Message.tool_results(results))
            continue

        if ending is Ending.PAUSED:
            retries["paused"] += 1
            if retries["paused"] > policies.pause_retries:
                return end(Status.MAX_STEPS, f"paused turn resent {policies.pause_retries} times")
            emit_appended(calls, turn.message)
            continue

        if ending is Ending.REFUSED:
            fallback = policies.fallback_model
            if fallback is not None and not fell_back and turn.detail not in policies.no_fallback:
                fell_back, model = True, fallback
                continue
            why = f" ({turn.detail})" if turn.detail else ""
            return end(Status.REFUSED, f"the model refused{why}")

        status = _TERMINAL[ending]
        detail = f": {turn.detail}" if turn.detail else ""
        return end(status, f"turn ended {ending.value}{detail}")


def _judge(
    config: LoopConfig, claim: Turn, transcript: list[Message], output: Any
) -> Generator[Action, Any, Verdict | None]:
    if config.gate is None:
        return None
    verdict: Verdict = yield Judge(
        gate=config.gate, claim=claim, transcript=tuple(transcript), output=output
    )
    return verdict


def _run_batch(
    config: LoopConfig,
    step: int,
    batch: Sequence[ToolCall],
    records: list[ToolCallRecord],
) -> Generator[Action, Any, list[ToolResult]]:
    planned = tuple(
        (
            call,
            config.tools.get(call.name),
            f"{config.run_id}:{step}:{i}"
            if (t := config.tools.get(call.name)) is not None and t.side_effect
            else None,
        )
        for i, call in enumerate(batch)
    )
    done: list[ToolCallRecord] = yield RunTools(step=step, calls=planned)
    records.extend(done)
    if config.sink is not None:
        for r in done:
            config.sink(ToolCalled(record=r))  # the record as measured where the tool ran
    return [r.result for r in done]


def _malformed_prompt(policies: Policies, detail: str | None) -> str:
    problem = (detail or "").strip() or "the provider reported a malformed function call"
    return policies.malformed_prompt.replace("{problem}", problem)


def _in_order(batch: Sequence[ToolCall], results: Sequence[ToolResult]) -> list[ToolResult]:
    by_id = {r.call_id: r for r in results}
    return [by_id[c.id] for c in batch if c.id in by_id]
