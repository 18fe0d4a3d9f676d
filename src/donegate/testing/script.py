"""Script files: what a model returns, turn by turn, plus stubs for the tools it calls.

A script is data about the model, not about tools (YAML or JSON, readable without the loop in
mind)::

    prompt: order 55219 arrived smashed
    tools:
      get_order: {returns: {sku: MUG-01}}
    turns:
      - {tool_call: get_order, args: {order_id: "55219"}}
      - {text: "I've started a refund."}
    expect: {status: complete, model_calls: 2}

A turn can also inject a transport fault: ``{disconnect: true}`` (the connection is dropped
without an answer) or ``{delay: SECONDS}`` (the answer comes that late, so a client whose
timeout is shorter gives up; with no answer given, the connection is dropped after the wait).
Each attempt a fault makes consumes its turn, as an HTTP error turn does.

``{latency: SECONDS}`` beside an answer is no fault: the model takes that long to answer, and
the answer comes (the player sleeps, the emulator holds the reply), as a real model's turn takes
seconds; it is how a bench holds many agents in flight (``bench/inflight.py``).

A turn may call any tool name. The ``tools:`` stubs answer calls only where nothing else runs
tools (``donegate replay``, `ScriptedModel` with ``script.tools()``); under ``donegate run`` the
task's real tools run, and under ``donegate emulate`` the client runs its own. A call to a tool
that was not offered is still served as scripted (models do call tools they were not given):
the player reports it as a warning, never a refusal. ``prompt`` may be left out of a script
for ``donegate run`` (the task's prompt is used; `check_for_task`).

The file is validated by pydantic models (`donegate.testing._script_schema`, as task files are
by `donegate.harness.spec`), then each turn is built into a canonical `Turn` once, here, so the
direct player and every wire format replay exactly the same value. Tool results are not in the
turns: they come from the stubs, so either side can vary alone. Every problem is a `ScriptError`
naming the file and the field (``refund.yaml: turns[3].ending: unknown ending 'done'; ...``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from donegate._files import UniqueKeyLoader, load_data
from donegate.errors import ScriptError
from donegate.finish import FinishTool
from donegate.messages import (
    Ending,
    ErrorInfo,
    Message,
    Part,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
)
from donegate.models._rules import context_exceeded_message, decide
from donegate.testing._script_schema import (
    CallData,
    ResultData,
    ScriptFile,
    StubData,
    TurnData,
    validate_script,
)
from donegate.testing.stubs import StubResult, StubSpec, StubTool, ToolStubError

__all__ = [
    "Expect",
    "Fault",
    "Script",
    "StubResult",
    "StubSpec",
    "StubTool",
    "ToolStubError",
    "check_for_task",
    "describe_turn",
    "load_script",
    "parse_script",
]

MAX_SCRIPT_BYTES = 16 * 1024 * 1024
"""Scripts may hold recorded sessions, so their cap is above a task file's 4 MiB."""
_CONTEXT_MESSAGE = "prompt is too long: the conversation exceeds the maximum context length"


# -- the script ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Fault:
    """A transport fault a turn injects: a late answer, or a connection dropped unanswered.

    Over HTTP the emulator really waits `delay` seconds, then drops the connection
    (`disconnect`) or sends the turn's answer; the client's own timeout decides whether it is
    still listening. Without HTTP (the direct player, ``ScriptedModel.handler``) there is no
    clock: a delay is a timeout at once. Either way the attempt consumes its turn and the client
    retries it like a 5xx.
    """

    delay: float = 0.0
    """Seconds the server waits before answering (or dropping the connection)."""
    disconnect: bool = False
    """The connection is closed without a response (always so for a turn with no answer)."""

    @property
    def timeout(self) -> bool:
        """True when a client meets this fault as a timeout (any delay) rather than a drop."""
        return self.delay > 0

    def error_turn(self) -> Turn:
        """What an SDK model reports once its retries are spent on this fault."""
        kind, message = (
            ("APITimeoutError", "Request timed out.")
            if self.timeout
            else ("APIConnectionError", "Connection error.")
        )
        return Turn(
            message=Message(role="assistant", parts=()),
            ending=Ending.ERROR,
            raw_reason=kind,
            detail=message,
            error=ErrorInfo(type=kind, message=message),
        )

    def describe(self) -> str:
        """``delay 2s``, ``disconnect``, ``delay 2s, disconnect``."""
        bits = [f"delay {self.delay:g}s"] if self.delay else []
        return ", ".join([*bits, "disconnect"] if self.disconnect else bits)


@dataclass(frozen=True, kw_only=True, slots=True)
class Expect:
    """What a replay of the script should produce; None (or empty) means not checked."""

    status: str | None = None
    """The run's status (``complete``, ``truncated``, ...)."""
    model_calls: int | None = None
    """Requests the model received."""
    tool_calls: Mapping[str, int] = field(default_factory=dict)
    """Executions per tool name; tools not named are not checked."""
    text: str | None = None
    """The run's final text."""
    output: Mapping[str, Any] | None = None
    """The finish tool's arguments."""
    ending: str | None = None
    """The last turn's ending."""
    unused_turns: int | None = None
    """Turns left unplayed (0 for a script that must be used up)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Script:
    """A parsed script: the run's inputs, the model's turns, the tool stubs, the expectations."""

    prompt: str | None = None
    """The user message; None when the script leaves it to the task (``donegate run``)."""
    system: str | None = None
    """The system message."""
    max_steps: int = 8
    """The loop's step limit; keep it above the number of turns so only a real stop passes."""
    finish_tool: FinishTool | None = None
    """The structured-answer tool, when the script has one."""
    stubs: Mapping[str, StubSpec] = field(default_factory=dict)
    """Tool stubs by name."""
    turns: tuple[Turn, ...] = ()
    """What the model returns, in order, as canonical turns."""
    faults: Mapping[int, Fault] = field(default_factory=dict)
    """Transport faults by turn index (a fault-only turn holds `Fault.error_turn`)."""
    latencies: Mapping[int, float] = field(default_factory=dict)
    """Seconds each ``latency:`` turn takes to answer, by turn index (not faults)."""
    expect: Expect = field(default_factory=Expect)
    """What a replay should produce."""
    source: str | None = None
    """The file the script came from, for messages."""

    def tools(self) -> list[StubTool]:
        """Fresh stub tools (no calls recorded), one per stub, in file order."""
        return [StubTool.build(name, spec) for name, spec in self.stubs.items()]

    @property
    def called(self) -> tuple[str, ...]:
        """Every tool name a turn calls, in order of first call."""
        names = (c.name for t in self.turns for c in t.tool_calls)
        return tuple(dict.fromkeys(names))

    def require_prompt(self, what: str) -> str:
        """The prompt, or a `ScriptError` saying `what` needs one (a run uses the task's)."""
        if self.prompt is None:
            raise ScriptError(
                f"missing; {what} needs the user's prompt (only `donegate run` takes the task's)",
                source=self.source,
                field="prompt",
            )
        return self.prompt


def check_for_task(script: Script, *, prompt: str, tools: Iterable[str]) -> list[str]:
    """Warnings about playing `script` as the model of a task with `prompt` and `tools`.

    The task's prompt is the one sent, so a script that gives its own must give the same one
    (else `ScriptError`); a stub named like a task tool is ignored, since the real tool runs.
    """
    if script.prompt is not None and script.prompt.strip() != prompt.strip():
        raise ScriptError(
            f"{_short(script.prompt)} differs from the task's prompt {_short(prompt)}; "
            "leave it out (the task's is used) or make them match",
            source=script.source,
            field="prompt",
        )
    where = f"{script.source}: " if script.source else ""
    return [
        f"{where}tools.{name}: stub ignored: the task's own {name!r} tool runs"
        for name in script.stubs
        if name in set(tools)
    ]


def describe_turn(turn: Turn, fault: Fault | None = None, latency: float = 0.0) -> str:
    """A one-line summary of a turn, for messages about unused or unsupported turns."""
    if latency:
        return f"latency {latency:g}s, {describe_turn(turn, fault)}"
    if fault is not None:
        return (
            fault.describe() if fault.disconnect else f"{fault.describe()}, {describe_turn(turn)}"
        )
    if turn.error is not None and turn.error.status:
        return f"{turn.ending.value}: HTTP {turn.error.status}"
    bits = [f"{c.name}({c.id})" for c in turn.tool_calls]
    text = turn.text or turn.refusal or ""
    if text:
        bits.insert(0, repr(text if len(text) <= 40 else text[:37] + "..."))
    elif turn.thinking:
        bits.insert(0, "thinking only")
    return f"{turn.ending.value}: {', '.join(bits)}" if bits else turn.ending.value


# -- loading ---------------------------------------------------------------------------------


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and parse a script file: ``.json`` as JSON, anything else as YAML."""
    source = os.fspath(path)
    data = load_data(path, source=source, what="script", limit=MAX_SCRIPT_BYTES,
                     loader=UniqueKeyLoader, error=ScriptError)  # fmt: skip
    return parse_script(data, source=source)


def parse_script(data: Any, *, source: str | None = None) -> Script:
    """Build a `Script` from parsed YAML or JSON; `source` names the file in errors."""
    return _build(validate_script(data, source=source), source)


# -- building --------------------------------------------------------------------------------


def _build(file: ScriptFile, source: str | None) -> Script:
    calls = [[c for _, c in t.calls()] for t in file.turns]
    ids = _fresh_ids({c.id for turn in calls for c in turn if "id" in c.model_fields_set})
    turns = tuple(_turn(t, c, ids) for t, c in zip(file.turns, calls, strict=True))
    faults = {i: f for i, f in enumerate(map(_fault, file.turns)) if f is not None}
    given = set(file.given())
    return Script(
        prompt=file.prompt if "prompt" in given else None,
        system=file.system if "system" in given else None,
        max_steps=file.max_steps,
        finish_tool=file.finish_tool.tool if "finish_tool" in given else None,
        stubs={name: _stub(stub) for name, stub in file.tools.items()},
        turns=turns,
        faults=faults,
        latencies={i: t.latency for i, t in enumerate(file.turns) if t.latency},
        expect=Expect(**{k: getattr(file.expect, k) for k in file.expect.given()}),
        source=source,
    )


def _stub(data: StubData) -> StubSpec:
    results = data.results if "results" in data.model_fields_set else [data]
    return StubSpec(
        results=tuple(map(_result, results)),
        side_effect=data.side_effect,
        description=data.description,
        parameters=data.parameters,
    )


def _result(data: ResultData | StubData) -> StubResult:
    if "raises" in data.model_fields_set:
        return StubResult(raises=data.raises)
    return StubResult(returns=data.returns)


def _fault(data: TurnData) -> Fault | None:
    if not data.delay and not data.disconnect:
        return None
    return Fault(delay=data.delay, disconnect=not data.answers)


def _turn(data: TurnData, calls: list[CallData], ids: Iterator[str]) -> Turn:
    """The canonical turn of `data` with its `calls`; a call without an id takes the next id."""
    fault = _fault(data)
    if fault is not None and fault.disconnect:  # no answer: the error the client ends up with
        return fault.error_turn()
    ending, given = data.stated_ending, data.model_fields_set
    usage = Usage(**data.usage.model_dump()) if "usage" in given else Usage()
    if "http_error" in given:
        return _http_error(data, ending, usage)
    parts: list[Part] = []
    if "thinking" in given:
        parts.append(ThinkingPart(text=data.thinking, progress=True))
    if "text" in given:
        as_refusal = ending is Ending.REFUSED and "refusal" not in given
        parts.append(RefusalPart(text=data.text) if as_refusal else TextPart(text=data.text))
    if "refusal" in given:
        parts.append(RefusalPart(text=data.refusal))
    for call in calls:
        call_id = call.id if "id" in call.model_fields_set else next(ids)
        if "args_raw" in call.model_fields_set:
            parts.append(ToolCall.from_raw(id=call_id, name=call.tool, arguments_raw=call.args_raw))
        else:
            parts.append(ToolCall.from_args(id=call_id, name=call.tool, arguments=call.args))
    decided, detail = decide(Ending.COMPLETE, parts)
    if ending is not None and ending is not decided:
        decided, detail = ending, None
    return Turn(
        message=Message(role="assistant", parts=tuple(parts)),
        ending=decided,
        detail=data.stop_details if "stop_details" in given else detail,
        usage=usage,
    )


def _http_error(data: TurnData, ending: Ending | None, usage: Usage) -> Turn:
    status, message = data.http_error, data.message
    if ending is None:
        exceeded = status == 413 or context_exceeded_message(message)
        ending = Ending.CONTEXT_EXCEEDED if exceeded else Ending.ERROR
    if ending is Ending.CONTEXT_EXCEEDED and not message:
        message = _CONTEXT_MESSAGE  # so every wire format reads the rendered body back alike
    retry_after = data.retry_after if "retry_after" in data.model_fields_set else None
    return Turn(
        message=Message(role="assistant", parts=()),
        ending=ending,
        raw_reason=str(status),
        detail=message or None,
        usage=usage,
        error=ErrorInfo(status=status, message=message, retry_after=retry_after),
    )


def _fresh_ids(taken: set[str]) -> Iterator[str]:
    n = 0
    while True:
        n += 1
        if f"c{n}" not in taken:
            yield f"c{n}"


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
