"""The agent loop: call the model, classify at once, then act on the ending.

The algorithm is a generator of actions (sans I/O): it yields `CallModel`, `RunTools` and
`Judge`, receives their outcomes, and returns a `RunResult`. `donegate.run` and `donegate.arun`
drive it with plain or async I/O, so both paths take exactly the same decisions.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, assert_never

from donegate.actions import (
    CONTINUE,
    Action,
    CallModel,
    Continue,
    Gate,
    Judge,
    RunTools,
    Step,
    Steps,
    Stop,
    Verdict,
)
from donegate.events import (
    EventSink,
    ModelCalled,
    NullSink,
    Progress,
    RunEnded,
    ToolCalled,
    TurnAppended,
)
from donegate.finish import FinishTool
from donegate.messages import NO_USAGE, Ending, Message, TextPart, ToolCall, ToolResult, Turn, Usage
from donegate.models.base import Model, ModelRequest, ModelSettings, ToolSpec
from donegate.records.status import _TERMINAL, Status
from donegate.results import NO_SPEND, RunResult, ToolCallRecord
from donegate.spend import Meter
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


@dataclass(kw_only=True, slots=True)
class LoopConfig:
    """Everything one run needs, resolved (no strings left to interpret)."""

    model: Model
    tools: Mapping[str, Tool]
    settings: ModelSettings
    max_steps: int
    policies: Policies
    finish: FinishTool | None = None
    meter: Meter | None = None
    """A budget's view: asked before each call (it clips or refuses it), charged after."""
    run_id: str = "run"
    gate: Gate | None = None
    sink: EventSink = field(default_factory=NullSink)


@dataclass(kw_only=True, slots=True)
class Retries:
    """Consecutive failures per kind; a kind's count is reset by any turn of another ending."""

    truncated: int = 0
    """Truncated turns in a row."""
    malformed: int = 0
    """Malformed tool-call turns in a row."""
    paused: int = 0
    """Paused turns in a row."""
    finish: int = 0
    """Invalid finish-tool arguments (never reset: counted over the whole run)."""

    def keep_only(self, ending: Ending) -> None:
        """Reset the counters of the failures this turn did not repeat."""
        if not (self.truncated or self.malformed or self.paused):
            return  # the usual turn: nothing failed before it
        if ending is not Ending.TRUNCATED:
            self.truncated = 0
        if ending is not Ending.MALFORMED_TOOL_CALL:
            self.malformed = 0
        if ending is not Ending.PAUSED:
            self.paused = 0


@dataclass(kw_only=True, slots=True)
class RunState:
    """What one run has done so far; the handlers read and grow it."""

    config: LoopConfig
    transcript: list[Message]
    """The conversation, mutated in place (the caller's list)."""
    model: Model
    """The model asked next (the fallback after a refusal)."""
    settings: ModelSettings
    """The next request's settings (a truncation retry doubles the output limit)."""
    admitted: ModelSettings | None = None  # as the budget admitted it: max_tokens clipped
    tool_specs: tuple[ToolSpec, ...]
    """The tools offered on every request (the finish tool last)."""
    calls: int = 0
    """Model calls made; the current step number."""
    usage: Usage = NO_USAGE
    turns: list[Turn] = field(default_factory=list)
    records: list[ToolCallRecord] = field(default_factory=list)
    retries: Retries = field(default_factory=Retries)
    fell_back: bool = False
    listening: bool = True
    """False when the sink is a `NullSink`: events nobody reads are not built."""

    @property
    def at_step_limit(self) -> bool:
        """True when no further model call is allowed."""
        return self.calls >= self.config.max_steps

    def append(self, *messages: Message) -> None:
        """Grow the transcript and say so (persistence hangs off this event)."""
        self.transcript.extend(messages)
        if self.listening:
            self.config.sink(TurnAppended(step=self.calls, messages=messages))

    def record(self, record: ToolCallRecord) -> None:
        """Keep an answered call and say so."""
        self.records.append(record)
        if self.listening:
            self.config.sink(ToolCalled(record=record))  # as measured where the tool ran

    def unanswered(self, batch: Sequence[ToolCall], why: str) -> list[ToolResult]:
        """Answer `batch` with errors without running it; each answer is recorded."""
        out = []
        for call in batch:
            result = error_result(call, why)
            self.record(ToolCallRecord(step=self.calls, call=call, result=result, executed=False))
            out.append(result)
        return out

    def end(self, stop: Stop) -> RunResult:
        """The run's result; `RunEnded` is the last event."""
        last = self.turns[-1] if self.turns else None
        result = RunResult(
            status=stop.status,
            text=last.text if last is not None else "",
            output=stop.output,
            transcript=tuple(self.transcript),
            model_calls=self.calls,
            tool_calls=tuple(self.records),
            usage=self.usage,
            ending=last.ending if last is not None else None,
            reason=stop.reason,
            turns=tuple(self.turns),
            spend=NO_SPEND if (meter := self.config.meter) is None else meter.budget.spend,
        )
        if self.listening:
            self.config.sink(RunEnded(result=result, ending=result.ending))
        return result


def agent_loop(config: LoopConfig, transcript: list[Message]) -> Generator[Action, Any, RunResult]:
    """Run the agent loop over `transcript` (mutated in place as the conversation grows).

    1. Guards, before every call: `max_steps` counts model calls; a budget (`meter`) clips it.
    2. Call the model and classify the response at once; nothing is appended yet.
    3. Act on the ending (one handler each, `_dispatch`):
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
    tool_specs = tuple(t.spec for t in config.tools.values())
    if config.finish is not None:
        tool_specs = (*tool_specs, config.finish.spec)
    state = RunState(
        config=config,
        transcript=transcript,
        model=config.model,
        settings=config.settings,
        tool_specs=tool_specs,
        listening=not isinstance(config.sink, NullSink),
    )
    while True:
        stop = _guard(state)
        if stop is not None:
            return state.end(stop)
        turn = yield from _call_model(state)
        state.retries.keep_only(turn.ending)
        step = yield from _dispatch(state, turn)
        match step:
            case Continue():
                continue
            case Stop():
                return state.end(step)
            case _:
                assert_never(step)


def _guard(state: RunState) -> Stop | None:
    """Step 1: the limits checked before every model call."""
    if state.at_step_limit:
        return Stop(Status.MAX_STEPS, f"step limit of {state.config.max_steps} model calls reached")
    if (meter := state.config.meter) is not None:
        got = meter.admit(state.model.name, state.transcript, state.tool_specs, state.settings)
        if isinstance(got, str):
            return Stop(Status.BUDGET_EXCEEDED, got)
        state.admitted = got
    return None


def _call_model(state: RunState) -> Generator[Action, Any, Turn]:
    """Step 2: one model call, classified; the turn is kept but nothing is appended yet."""
    state.calls += 1
    model = state.model
    request = ModelRequest(
        model=model.name,
        messages=tuple(state.transcript),
        tools=state.tool_specs,
        settings=state.admitted or state.settings,
    )
    started = time.perf_counter() if state.listening else 0.0
    turn: Turn = yield CallModel(model=model, request=request, step=state.calls)
    state.turns.append(turn)
    state.usage = state.usage + turn.usage
    if (meter := state.config.meter) is not None:
        meter.charge(model.name, turn.usage, len(request.messages))
    if state.listening:
        sink = state.config.sink
        duration = time.perf_counter() - started
        sink(ModelCalled(step=state.calls, model=model.name, turn=turn, duration_s=duration))
        for part in turn.thinking:
            if part.progress and part.text:
                sink(Progress(step=state.calls, text=part.text))
    return turn


def _dispatch(state: RunState, turn: Turn) -> Steps:
    """Step 3: the handler for this turn's ending (a new `Ending` is a type error here)."""
    ending = turn.ending
    match ending:
        case Ending.TOOL_USE:
            return (yield from _on_tool_use(state, turn))
        case Ending.COMPLETE:
            state.append(turn.message)
            return (yield from _claim(state, turn, None, "the model finished its turn"))
        case Ending.EMPTY if state.config.gate is not None and turn.thinking:
            # An empty turn that carries thinking (an Opus 5.5 progress update) is a report,
            # not a failure, when a gate decides completion: the gate continues it.
            state.append(turn.message)
            return (yield from _claim(state, turn, None, "the model finished its turn"))
        case Ending.TRUNCATED:
            return _on_truncated(state, turn)
        case Ending.MALFORMED_TOOL_CALL:
            return _on_malformed(state, turn)
        case Ending.PAUSED:
            return _on_paused(state, turn)
        case Ending.REFUSED:
            return _on_refused(state, turn)
        case Ending.EMPTY | Ending.FILTERED | Ending.CONTEXT_EXCEEDED | Ending.ERROR:
            detail = f": {turn.detail}" if turn.detail else ""
            return Stop(_TERMINAL[ending], f"turn ended {ending.value}{detail}")
        case _:
            assert_never(ending)


def _claim(state: RunState, turn: Turn, output: Any, why: str) -> Steps:
    """Step 5: a claim of completion (already appended), put to the gate when there is one."""
    gate = state.config.gate
    if gate is None:
        return Stop(Status.COMPLETE, why, output=output)
    verdict: Verdict = yield Judge(
        gate=gate, claim=turn, transcript=tuple(state.transcript), output=output
    )
    match verdict.action:
        case "accept":
            return Stop(Status.COMPLETE, why, output=output)
        case "stop":
            return Stop(Status.GATED, verdict.reason)
        case "continue":
            state.append(Message.user(verdict.message))
            return CONTINUE
        case _:
            assert_never(verdict.action)


def _on_tool_use(state: RunState, turn: Turn) -> Steps:
    """Answer every call in order; a finish-tool call among them is a claim."""
    finish = state.config.finish
    batch = turn.tool_calls
    if finish is not None:
        finish_call = next((c for c in batch if c.name == finish.name), None)
        if finish_call is not None:
            return (yield from _on_finish(state, turn, finish, finish_call))
    if state.at_step_limit:
        results = state.unanswered(batch, "not run: the step limit was reached")
        state.append(turn.message, Message.tool_results(results))
        return Stop(
            Status.MAX_STEPS,
            f"step limit of {state.config.max_steps} model calls reached; "
            f"{len(batch)} requested tool call(s) not executed",
        )
    done = yield from _run_batch(state, batch)
    state.append(turn.message, Message.tool_results(done))
    return CONTINUE


def _on_finish(state: RunState, turn: Turn, finish: FinishTool, finish_call: ToolCall) -> Steps:
    """A finish-tool call: valid arguments are a claim, invalid ones are fed back (bounded)."""
    batch = turn.tool_calls
    others = [c for c in batch if c is not finish_call]
    output, problem = finish.validate(finish_call.arguments or {})
    if problem is None:
        accepted = ToolResult(
            call_id=finish_call.id, name=finish_call.name, content="Answer received."
        )
        state.records.append(
            ToolCallRecord(step=state.calls, call=finish_call, result=accepted, executed=True)
        )
        results = [accepted, *state.unanswered(others, "not run: the run finished")]
        state.append(turn.message, Message.tool_results(_in_order(batch, results)))
        return (yield from _claim(state, turn, output, "finish tool called"))
    state.retries.finish += 1
    if state.retries.finish > state.config.policies.finish_retries:
        state.unanswered(batch, "not run: invalid final answer")
        return Stop(
            Status.MALFORMED_TOOL_CALL,
            f"{finish.name} arguments invalid {state.retries.finish} times: {problem}",
        )
    bad = error_result(finish_call, f"invalid answer: {problem}. Call it again.")
    state.records.append(
        ToolCallRecord(step=state.calls, call=finish_call, result=bad, executed=False)
    )
    if state.at_step_limit:
        done = state.unanswered(others, "not run: the step limit was reached")
    else:
        done = yield from _run_batch(state, others)
    state.append(turn.message, Message.tool_results(_in_order(batch, [bad, *done])))
    return CONTINUE


def _on_truncated(state: RunState, turn: Turn) -> Step:
    """Retry with a doubled output limit, or ask to resume; a partial call never runs."""
    policies = state.config.policies
    partial = bool(turn.tool_calls)
    state.retries.truncated += 1
    if policies.truncation == "fail" or state.retries.truncated > policies.truncation_retries:
        if partial:
            state.unanswered(turn.tool_calls, "not run: the call was cut off")
        what = "a tool call" if partial else "the answer"
        return Stop(Status.TRUNCATED, f"output limit reached while writing {what}")
    if policies.truncation == "resume" and not partial and turn.text:
        state.append(
            Message(role="assistant", parts=(TextPart(text=turn.text),)),
            Message.user(policies.resume_prompt),
        )
    else:
        limit = state.settings.max_tokens or policies.default_max_tokens
        state.settings = replace(state.settings, max_tokens=limit * 2)
    return CONTINUE


def _on_malformed(state: RunState, turn: Turn) -> Step:
    """Feed the parse errors back as error results, on a bounded budget."""
    policies = state.config.policies
    batch = turn.tool_calls
    state.retries.malformed += 1
    if state.retries.malformed > policies.malformed_retries:
        state.unanswered(batch, "not run: malformed arguments")
        return Stop(Status.MALFORMED_TOOL_CALL, turn.detail or "malformed tool call")
    if not batch:
        # The provider rejected the call itself and sent none back: there is no call to
        # answer, so the problem is named in a user message instead.
        if turn.message.parts:
            state.append(turn.message)
        state.append(Message.user(_malformed_prompt(policies, turn.detail)))
        return CONTINUE
    results = [
        error_result(c, f"arguments for {c.name} did not parse: {c.parse_error}")
        if c.parse_error
        else error_result(c, "not run: another call in this turn was malformed")
        for c in batch
    ]
    for c, r in zip(batch, results, strict=True):
        state.records.append(ToolCallRecord(step=state.calls, call=c, result=r, executed=False))
    state.append(turn.message, Message.tool_results(results))
    return CONTINUE


def _on_paused(state: RunState, turn: Turn) -> Step:
    """Resend the paused assistant content as-is, a bounded number of times."""
    retries = state.config.policies.pause_retries
    state.retries.paused += 1
    if state.retries.paused > retries:
        return Stop(Status.MAX_STEPS, f"paused turn resent {retries} times")
    state.append(turn.message)
    return CONTINUE


def _on_refused(state: RunState, turn: Turn) -> Step:
    """Never retried on the same model; once on the fallback model, if any and allowed."""
    policies = state.config.policies
    fallback = policies.fallback_model
    if fallback is not None and not state.fell_back and turn.detail not in policies.no_fallback:
        state.fell_back, state.model = True, fallback
        return CONTINUE
    why = f" ({turn.detail})" if turn.detail else ""
    return Stop(Status.REFUSED, f"the model refused{why}")


def _run_batch(
    state: RunState, batch: Sequence[ToolCall]
) -> Generator[Action, Any, list[ToolResult]]:
    """Ask the driver to run `batch`; side-effecting calls get ``<run_id>:<step>:<i>`` keys."""
    tools, step = state.config.tools, state.calls
    planned = []
    for i, call in enumerate(batch):
        tool = tools.get(call.name)
        key = f"{state.config.run_id}:{step}:{i}" if tool is not None and tool.side_effect else None
        planned.append((call, tool, key))
    done: list[ToolCallRecord] = yield RunTools(step=step, calls=tuple(planned))
    for record in done:
        state.record(record)
    return [r.result for r in done]


def _malformed_prompt(policies: Policies, detail: str | None) -> str:
    problem = (detail or "").strip() or "the provider reported a malformed function call"
    return policies.malformed_prompt.replace("{problem}", problem)


def _in_order(batch: Sequence[ToolCall], results: Sequence[ToolResult]) -> list[ToolResult]:
    by_id = {r.call_id: r for r in results}
    return [by_id[c.id] for c in batch if c.id in by_id]
