"""`run`, `arun` and `stream`: drive the agent loop with plain or async I/O.

Both drivers execute the same algorithm (`donegate.loop.agent_loop`); they differ only in how
they wait: the sync driver runs parallel tool calls on threads, the async one gathers them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, assert_never

from donegate.actions import Action, CallModel, Gate, Judge, RunTools
from donegate.errors import UserError
from donegate.events import Event, EventSink, NullSink, RunEnded, TextDelta, fan_out
from donegate.finish import FinishTool, as_finish_tool
from donegate.loop import LoopConfig, Policies, agent_loop
from donegate.messages import Message, ToolCall, ToolResult, Turn
from donegate.models.base import Model, ModelSettings
from donegate.models.infer import infer_model
from donegate.results import RunResult, ToolCallRecord
from donegate.spend import Budget, Meter
from donegate.tools import EffectLedger, Tool, as_tool, begin_effect, error_result

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

# asyncio and concurrent.futures are imported inside the functions that use them (an async
# function runs under an event loop, so asyncio is loaded by then): `import donegate` and a
# synchronous run with one tool at a time never load them.

__all__ = ["RunOptions", "arun", "run", "stream"]

Planned = tuple[ToolCall, Tool | None, str | None]


class RunOptions(TypedDict, total=False):
    """The keyword options `run`, `arun` and `stream` share."""

    tools: Sequence[Tool | Callable[..., Any]]
    """Tools: `Tool`s or plain/async functions (schema from their type hints)."""
    system: str | None
    """A system prompt (ignored when the transcript has one)."""
    max_steps: int
    """Model calls allowed; a guard, checked before each call (default 20)."""
    settings: ModelSettings | None
    """Generation settings."""
    finish_tool: Any
    """A pydantic model or JSON Schema offered as a finish tool."""
    finish_tool_name: str
    """The finish tool's name (default ``submit_answer``)."""
    policies: Policies | None
    """What to do with each non-final ending."""
    budget_tokens: int | None
    """Input plus output tokens for the whole run: a call that cannot fit is not made (the run
    ends ``budget_exceeded``), one that can has its ``max_tokens`` clipped to what is left."""
    meter: Meter | None
    """A task budget's view (`donegate.spend.Budget.meter`): consulted before each call,
    charged after; the run ends ``budget_exceeded`` when a call cannot fit."""
    model_name: str | None
    """The model's name when `model` is an SDK client."""
    run_id: str | None
    """Prefix of idempotency keys (``<run_id>:<step>:<call>``)."""
    ledger: EffectLedger | None
    """Journal of side-effecting calls; recorded results are never re-executed."""
    gate: Gate | None
    """Decides whether a claimed completion is done."""
    events: EventSink | None
    """Receives every run event."""


def _config(model: Model | str | Any, options: RunOptions) -> LoopConfig:
    max_steps = options.get("max_steps", 20)
    if max_steps < 1:
        raise UserError(f"max_steps must be at least 1, got {max_steps}")
    resolved: dict[str, Tool] = {}
    for t in options.get("tools", ()):
        tool = as_tool(t)
        if tool.name in resolved:
            raise UserError(f"two tools are named {tool.name!r}")
        resolved[tool.name] = tool
    finish: FinishTool | None = as_finish_tool(
        options.get("finish_tool"), name=options.get("finish_tool_name", "submit_answer")
    )
    if finish is not None and finish.name in resolved:
        raise UserError(f"the finish tool's name {finish.name!r} is also a tool's name")
    return LoopConfig(
        model=infer_model(model, model_name=options.get("model_name")),
        tools=resolved,
        settings=options.get("settings") or _SETTINGS,
        max_steps=max_steps,
        policies=options.get("policies") or _POLICIES,
        finish=finish,
        meter=_meter(options),
        run_id=options.get("run_id") or "run",
        gate=options.get("gate"),
        sink=events if (events := options.get("events")) is not None else _NO_EVENTS,
    )


def _meter(options: RunOptions) -> Meter | None:
    meter, tokens = options.get("meter"), options.get("budget_tokens")
    if meter is None and tokens is not None:
        return Budget(tokens=tokens).meter("agent")
    return meter


# the defaults, made once: frozen, so every run can share them
_SETTINGS = ModelSettings()
_POLICIES = Policies()
_NO_EVENTS = NullSink()


def _transcript(prompt: str | Sequence[Message], system: str | None) -> list[Message]:
    if isinstance(prompt, str):  # a prompt: one user message, nothing to look for
        user = Message.user(prompt)
        return [user] if system is None else [Message.system(system), user]
    messages = list(prompt)
    if system is not None and not any(m.role == "system" for m in messages):
        messages.insert(0, Message.system(system))
    if not any(m.role == "user" for m in messages):
        raise UserError("the transcript has no user message")
    return messages


def _timed(
    step: int, call: ToolCall, key: str | None, result: ToolResult, started: tuple[float, float]
) -> ToolCallRecord:
    """The record of an executed call, timed from `started` (unix time, monotonic) to now."""
    duration = time.perf_counter() - started[1]
    return ToolCallRecord(
        step=step,
        call=call,
        result=result,
        executed=True,
        idempotency_key=key,
        duration_s=duration,
        started_at=started[0],
        ended_at=started[0] + duration,
    )


def _for(call: ToolCall, recorded: ToolResult) -> ToolResult:
    """A recorded result answering `call`: under `call`'s id, which a resumed run's model may
    have given anew (a provider refuses a result whose id answers no call)."""
    if recorded.call_id == call.id and recorded.name == call.name:
        return recorded
    return replace(recorded, call_id=call.id, name=call.name)


def _clock() -> tuple[float, float]:
    return time.time(), time.perf_counter()


def _batch(calls: Sequence[Planned], ledger: EffectLedger | None) -> Callable[[], None] | None:
    """The write that begins the side-effecting calls of a batch (run side by side) at once,
    where the ledger can (a `donegate.tools.BatchLedger`) and their keys are distinct; each
    call's lookup then reads it. None when there is nothing to batch.

    The ledger is asked for the method, not `isinstance`-checked against the protocol: on
    Python 3.11 a runtime protocol check costs ~15 us, more than the rest of this."""
    look_up = getattr(ledger, "lookup_batch", None)
    if look_up is None:
        return None
    keyed = [(key, call) for call, tool, key in calls if tool is not None and key is not None]
    if len(keyed) < 2 or len({key for key, _ in keyed}) < len(keyed):
        return None
    return lambda: look_up(keyed)


def _execute_sync(planned: Planned, ledger: EffectLedger | None, step: int) -> ToolCallRecord:
    call, tool, key = planned
    if tool is None:
        return ToolCallRecord(
            step=step,
            call=call,
            result=error_result(call, f"unknown tool {call.name!r}"),
            executed=False,
        )
    if key is not None and ledger is not None:
        recorded = ledger.lookup(key, call) or begin_effect(ledger, tool, key, call)
        if recorded is not None:
            return ToolCallRecord(
                step=step, call=call, result=_for(call, recorded), executed=False,
                idempotency_key=key,
            )  # fmt: skip
    started = _clock()  # the tool's own run is timed, not the ledger's bookkeeping around it
    result = tool.run_sync(call, key)
    record = _timed(step, call, key, result, started)
    if key is not None and ledger is not None:
        ledger.record(key, result)
    return record


async def _execute_async(
    planned: Planned, ledger: EffectLedger | None, step: int, threaded: bool
) -> ToolCallRecord:
    call, tool, key = planned
    if tool is None or not tool.is_async:
        if threaded:  # plain functions called side by side run on threads
            import asyncio

            return await asyncio.to_thread(_execute_sync, planned, ledger, step)
        return _execute_sync(planned, ledger, step)
    if key is not None and ledger is not None:
        recorded = ledger.lookup(key, call) or begin_effect(ledger, tool, key, call)
        if recorded is not None:
            return ToolCallRecord(
                step=step, call=call, result=_for(call, recorded), executed=False,
                idempotency_key=key,
            )  # fmt: skip
    started = _clock()
    result = await tool.run_async(call, key)
    record = _timed(step, call, key, result, started)
    if key is not None and ledger is not None:
        ledger.record(key, result)
    return record


_pools = threading.local()


def _tool_threads() -> ThreadPoolExecutor:
    """The threads the calling thread's runs call plain tools side by side on.

    One pool per calling thread, kept across its runs (starting threads for every run cost
    ~0.2 ms of CPU): a thread drives one run at a time, so a run never waits behind another's
    tools, and a run nested in a tool runs on a pool thread with a pool of its own. The pool
    goes when its thread does; a forked child (whose copy has no threads) makes its own.
    """
    kept: tuple[int, ThreadPoolExecutor] | None = getattr(_pools, "kept", None)
    if kept is None or kept[0] != os.getpid():
        from concurrent.futures import ThreadPoolExecutor

        kept = _pools.kept = (os.getpid(), ThreadPoolExecutor(8, "donegate-tool"))
    return kept[1]


def drive_sync(
    algorithm: Generator[Action, Any, RunResult], ledger: EffectLedger | None = None
) -> RunResult:
    """Run the algorithm with blocking I/O."""
    outcome: Any = None
    while True:
        try:
            action = algorithm.send(outcome)
        except StopIteration as stop:
            result: RunResult = stop.value
            return result
        match action:
            case CallModel():
                outcome = action.model.request(action.request)
            case RunTools() if len(action.calls) == 1:
                outcome = [_execute_sync(action.calls[0], ledger, action.step)]
            case RunTools():
                if (batch := _batch(action.calls, ledger)) is not None:
                    batch()
                pool = _tool_threads()
                futures = [pool.submit(_execute_sync, p, ledger, action.step) for p in action.calls]
                outcome = [f.result() for f in futures]
            case Judge():
                outcome = action.gate.judge(action.claim, action.transcript, action.output)
            case _:
                assert_never(action)


async def drive_async(
    algorithm: Generator[Action, Any, RunResult],
    ledger: EffectLedger | None = None,
    *,
    streaming: bool = False,
    sink: EventSink | None = None,
) -> RunResult:
    """Run the algorithm with async I/O; with `streaming`, text deltas become events."""
    import asyncio

    outcome: Any = None
    while True:
        try:
            action = algorithm.send(outcome)
        except StopIteration as stop:
            result: RunResult = stop.value
            return result
        match action:
            case CallModel() if streaming:
                outcome = await _stream_call(action, sink)
            case CallModel():
                outcome = await action.model.arequest(action.request)
            case RunTools():
                threaded = len(action.calls) > 1
                if threaded and (batch := _batch(action.calls, ledger)) is not None:
                    await asyncio.to_thread(batch)  # a store write: off the event loop
                outcome = list(
                    await asyncio.gather(
                        *(_execute_async(p, ledger, action.step, threaded) for p in action.calls)
                    )
                )
            case Judge():
                outcome = await asyncio.to_thread(
                    action.gate.judge, action.claim, action.transcript, action.output
                )
            case _:
                assert_never(action)


async def _stream_call(action: CallModel, sink: EventSink | None) -> Turn:
    turn: Turn | None = None
    async for item in action.model.astream(action.request):
        if isinstance(item, str):
            if sink is not None and item:
                sink(TextDelta(step=action.step, text=item))
        else:
            turn = item
    if turn is None:
        raise RuntimeError(f"{action.model.name} streamed no final turn")
    return turn


def run(
    prompt: str | Sequence[Message], *, model: Model | str | Any, **options: Unpack[RunOptions]
) -> RunResult:
    """Run an agent to a classified end; see `donegate.loop.agent_loop` for the algorithm.

    `model` is a `Model`, a ``"provider:model"`` string, or an official SDK client (then
    ``model_name=`` names the model). ``finish_tool=`` is a pydantic model or JSON Schema exposed
    as ``submit_answer``. The result's `status` is ``complete`` only for a real, non-empty
    finish. Options: `RunOptions`.
    """
    config = _config(model, options)
    transcript = _transcript(prompt, options.get("system"))
    return drive_sync(agent_loop(config, transcript), options.get("ledger"))


async def arun(
    prompt: str | Sequence[Message], *, model: Model | str | Any, **options: Unpack[RunOptions]
) -> RunResult:
    """The async `run`: parallel tool calls run concurrently."""
    config = _config(model, options)
    transcript = _transcript(prompt, options.get("system"))
    return await drive_async(agent_loop(config, transcript), options.get("ledger"))


async def stream(
    prompt: str | Sequence[Message], *, model: Model | str | Any, **options: Unpack[RunOptions]
) -> AsyncIterator[Event]:
    """Run with streamed model calls, yielding every event; the last is `RunEnded`.

    The `RunEnded` result equals what `arun` returns for the same script.
    """
    import asyncio

    queue: asyncio.Queue[Event | None] = asyncio.Queue()

    def enqueue(event: Event) -> None:
        queue.put_nowait(event)

    sink = fan_out(enqueue, options.get("events"))
    config = _config(model, {**options, "events": sink})
    transcript = _transcript(prompt, options.get("system"))
    task = asyncio.ensure_future(
        drive_async(
            agent_loop(config, transcript), options.get("ledger"), streaming=True, sink=sink
        )
    )
    task.add_done_callback(lambda _: queue.put_nowait(None))
    while True:
        event = await queue.get()
        if event is None:
            break
        yield event
        if isinstance(event, RunEnded):
            break
    await task  # re-raises a failure of the run itself
