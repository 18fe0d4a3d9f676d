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

A turn may call any tool name. The ``tools:`` stubs answer calls only where nothing else runs
tools (``donegate replay``, `ScriptedModel` with ``script.tools()``); under ``donegate run`` the
task's real tools run, and under ``donegate emulate`` the client runs its own. A call to a tool
that was not offered is still served as scripted (models do call tools they were not given):
the player reports it as a warning, never a refusal. ``prompt`` may be left out of a script
for ``donegate run`` (the task's prompt is used; `check_for_task`).

Each turn is parsed into a canonical `Turn` once, here, so the direct player and every wire
format replay exactly the same value. Tool results are not in the turns: they come from the
stubs, so either side can vary alone. Every problem is a `ScriptError` naming the file and the
field (``refund.yaml: turns[3].ending: unknown ending 'done'; ...``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from donegate._files import UniqueKeyLoader, load_data
from donegate.errors import ScriptError, UserError
from donegate.finish import FinishTool, as_finish_tool
from donegate.loop import Status
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
from donegate.testing.stubs import ANY_OBJECT, StubResult, StubSpec, StubTool, ToolStubError

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

_TOP = ("prompt", "system", "max_steps", "finish_tool", "tools", "turns", "expect")
_TURN = (
    "text",
    "thinking",
    "refusal",
    "tool_call",
    "args",
    "args_raw",
    "id",
    "tool_calls",
    "ending",
    "stop_details",
    "usage",
    "http_error",
    "retry_after",
    "message",
    "delay",
    "disconnect",
)
_FAULT = ("delay", "disconnect")
_CALL = ("tool", "args", "args_raw", "id")
_STUB = ("returns", "raises", "results", "side_effect", "description", "parameters")
_RESULT = ("returns", "raises")
_FINISH = ("name", "schema", "description")
_EXPECT = ("status", "model_calls", "tool_calls", "text", "output", "ending", "unused_turns")
_USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
          "reasoning_tokens")  # fmt: skip
_ENDINGS = tuple(e.value for e in Ending)
_STATUSES = tuple(s.value for s in Status)
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


def describe_turn(turn: Turn, fault: Fault | None = None) -> str:
    """A one-line summary of a turn, for messages about unused or unsupported turns."""
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
    return _Parser(source).script(data)


# -- parsing ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _CallDraft:
    """A tool call before ids are assigned."""

    name: str
    args: Mapping[str, Any] | None
    args_raw: str | None
    id: str | None
    path: str


@dataclass(slots=True)
class _TurnDraft:
    """A turn before ids are assigned."""

    parts: list[Part]
    calls: list[_CallDraft]
    ending: Ending | None
    detail: str | None
    usage: Usage
    error: ErrorInfo | None
    path: str
    fault: Fault | None = None


class _Parser:
    """Walks the data once, naming the field of every problem."""

    def __init__(self, source: str | None) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> NoReturn:
        raise ScriptError(message, source=self.source, field=path or None)

    # -- typed field readers -----------------------------------------------------------------

    def mapping(self, value: Any, path: str, keys: Sequence[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(path, f"expected a mapping, got {_kind(value)}")
        for key in value:
            if key not in keys:
                self.fail(
                    _join(path, str(key)),
                    f"unknown key {str(key)!r}; expected one of: {', '.join(keys)}",
                )
        return value

    def string(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            self.fail(path, f"expected a string, got {_kind(value)}")
        return value

    def integer(self, value: Any, path: str, *, minimum: int = 0) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(path, f"expected an integer, got {_kind(value)}")
        if value < minimum:
            self.fail(path, f"expected an integer >= {minimum}, got {value}")
        return value

    def number(self, value: Any, path: str) -> float:
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            self.fail(path, f"expected a number >= 0, got {_kind(value)}")
        return float(value)

    def boolean(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {_kind(value)}")
        return value

    def choice(self, value: Any, path: str, what: str, options: Sequence[str]) -> str:
        text = self.string(value, path)
        if text not in options:
            self.fail(path, f"unknown {what} {text!r}; expected one of: {', '.join(options)}")
        return text

    # -- sections ----------------------------------------------------------------------------

    def script(self, data: Any) -> Script:
        top = self.mapping(data, "", _TOP)
        prompt = self.string(top["prompt"], "prompt") if "prompt" in top else None
        if prompt is not None and not prompt.strip():
            self.fail("prompt", "is empty")
        system = self.string(top["system"], "system") if "system" in top else None
        max_steps = self.integer(top.get("max_steps", 8), "max_steps", minimum=1)
        finish = self.finish_tool(top["finish_tool"]) if "finish_tool" in top else None
        stubs = self.stubs(top.get("tools", {}))
        if finish is not None and finish.name in stubs:
            self.fail("finish_tool.name", f"{finish.name!r} is also a stubbed tool")
        if "turns" not in top:
            self.fail("turns", "missing; a script needs at least one model turn")
        turns, faults = self.turns(top["turns"])
        known = set(stubs) | {c.name for t in turns for c in t.tool_calls}
        expect = self.expect(top["expect"], known) if "expect" in top else Expect()
        return Script(
            prompt=prompt,
            system=system,
            max_steps=max_steps,
            finish_tool=finish,
            stubs=stubs,
            turns=turns,
            faults=faults,
            expect=expect,
            source=self.source,
        )

    def finish_tool(self, value: Any) -> FinishTool:
        raw = self.mapping(value, "finish_tool", _FINISH)
        name = self.string(raw.get("name", "submit_answer"), "finish_tool.name")
        schema = raw.get("schema", {"type": "object"})
        if not isinstance(schema, Mapping):
            self.fail("finish_tool.schema", f"expected a JSON Schema mapping, got {_kind(schema)}")
        try:
            tool = as_finish_tool(schema, name=name)
        except UserError as exc:
            self.fail("finish_tool.schema", str(exc).removeprefix("finish_tool: "))
        assert tool is not None
        if "description" in raw:
            description = self.string(raw["description"], "finish_tool.description")
            tool = FinishTool(schema=tool.schema, name=name, description=description)
        return tool

    def stubs(self, value: Any) -> dict[str, StubSpec]:
        if not isinstance(value, Mapping):
            self.fail("tools", f"expected a mapping of tool names to stubs, got {_kind(value)}")
        out: dict[str, StubSpec] = {}
        for name, raw in value.items():
            path = f"tools.{name}"
            if not isinstance(name, str) or not name:
                self.fail(path, "a tool name must be a non-empty string")
            out[name] = self.stub(raw, path)
        return out

    def stub(self, value: Any, path: str) -> StubSpec:
        raw = self.mapping(value, path, _STUB)
        given = [k for k in ("returns", "raises", "results") if k in raw]
        if len(given) > 1:
            self.fail(path, f"give one of returns, raises, results; got {', '.join(given)}")
        if "results" in raw:
            items = raw["results"]
            if not isinstance(items, list) or not items:
                self.fail(f"{path}.results", f"expected a non-empty list, got {_kind(items)}")
            results = tuple(self.result(r, f"{path}.results[{i}]") for i, r in enumerate(items))
        elif given:
            results = (self.result({given[0]: raw[given[0]]}, path),)
        else:
            self.fail(path, "missing behaviour; give returns, raises or results")
        parameters = raw.get("parameters", ANY_OBJECT)
        if not isinstance(parameters, Mapping):
            self.fail(
                f"{path}.parameters", f"expected a JSON Schema mapping, got {_kind(parameters)}"
            )
        return StubSpec(
            results=results,
            side_effect=self.boolean(raw.get("side_effect", False), f"{path}.side_effect"),
            description=self.string(raw.get("description", ""), f"{path}.description"),
            parameters=dict(parameters),
        )

    def result(self, value: Any, path: str) -> StubResult:
        raw = self.mapping(value, path, _RESULT)
        if len(raw) != 1:
            self.fail(path, "give exactly one of returns, raises")
        if "raises" in raw:
            return StubResult(raises=self.string(raw["raises"], f"{path}.raises"))
        return StubResult(returns=raw["returns"])

    def expect(self, value: Any, known: set[str]) -> Expect:
        raw = self.mapping(value, "expect", _EXPECT)
        counts: dict[str, int] = {}
        if "tool_calls" in raw:
            calls = raw["tool_calls"]
            if not isinstance(calls, Mapping):
                self.fail("expect.tool_calls", f"expected a mapping, got {_kind(calls)}")
            for name, count in calls.items():
                path = f"expect.tool_calls.{name}"
                counts[name] = self.integer(count, path)
                if name not in known and counts[name] > 0:
                    self.fail(
                        path,
                        f"unknown tool {name!r}: no turn calls it and no stub defines it; "
                        f"known tools: {_names(known)}",
                    )
        output = raw.get("output")
        if output is not None and not isinstance(output, Mapping):
            self.fail("expect.output", f"expected a mapping, got {_kind(output)}")

        def opt_int(key: str) -> int | None:
            return self.integer(raw[key], f"expect.{key}") if key in raw else None

        return Expect(
            status=self.choice(raw["status"], "expect.status", "status", _STATUSES)
            if "status" in raw
            else None,
            model_calls=opt_int("model_calls"),
            tool_calls=counts,
            text=self.string(raw["text"], "expect.text") if "text" in raw else None,
            output=output,
            ending=self.choice(raw["ending"], "expect.ending", "ending", _ENDINGS)
            if "ending" in raw
            else None,
            unused_turns=opt_int("unused_turns"),
        )

    # -- turns -------------------------------------------------------------------------------

    def turns(self, value: Any) -> tuple[tuple[Turn, ...], dict[int, Fault]]:
        if not isinstance(value, list) or not value:
            self.fail("turns", f"expected a non-empty list of turns, got {_kind(value)}")
        drafts = [self.turn(raw, f"turns[{i}]") for i, raw in enumerate(value)]
        explicit: dict[str, str] = {}
        for draft in drafts:
            for call in draft.calls:
                if call.id is None:
                    continue
                if call.id in explicit:
                    self.fail(
                        f"{call.path}.id", f"duplicate id {call.id!r} (see {explicit[call.id]})"
                    )
                explicit[call.id] = f"{call.path}.id"
        ids = _fresh_ids(set(explicit))
        faults = {i: d.fault for i, d in enumerate(drafts) if d.fault is not None}
        return tuple(self.build(d, ids) for d in drafts), faults

    def fault(self, raw: Mapping[str, Any], path: str) -> Fault | None:
        delay = 0.0
        if "delay" in raw:
            delay = self.number(raw["delay"], f"{path}.delay")
            if delay <= 0:
                self.fail(f"{path}.delay", f"expected a number of seconds > 0, got {_kind(delay)}")
        disconnect = (
            self.boolean(raw["disconnect"], f"{path}.disconnect") if "disconnect" in raw else False
        )
        if not delay and not disconnect:
            return None
        answers = any(k not in _FAULT for k in raw)
        if disconnect and answers:
            key = next(str(k) for k in raw if k not in _FAULT)
            self.fail(
                _join(path, key),
                "cannot be combined with disconnect: a dropped connection answers nothing",
            )
        return Fault(delay=delay, disconnect=not answers)

    def turn(self, value: Any, path: str) -> _TurnDraft:
        raw = self.mapping(value, path, _TURN)
        fault = self.fault(raw, path)
        raw = {k: v for k, v in raw.items() if k not in _FAULT}
        if not raw:
            if fault is not None:  # no answer: built as the error the client ends up with
                return _TurnDraft([], [], None, None, Usage(), None, path, fault)
            self.fail(
                path,
                "an empty turn; give text, thinking, a tool call, an http_error, a delay or "
                "a disconnect",
            )
        draft = self.answer(raw, path)
        draft.fault = fault
        return draft

    def answer(self, raw: Mapping[str, Any], path: str) -> _TurnDraft:
        ending = (
            Ending(self.choice(raw["ending"], f"{path}.ending", "ending", _ENDINGS))
            if "ending" in raw
            else None
        )
        usage = self.usage(raw["usage"], f"{path}.usage") if "usage" in raw else Usage()
        if "http_error" in raw:
            return self.http_error(raw, path, ending, usage)
        for key in ("retry_after", "message"):
            if key in raw:
                self.fail(_join(path, key), "only applies to an http_error turn")
        parts: list[Part] = []
        if "thinking" in raw:
            parts.append(ThinkingPart(text=self.string(raw["thinking"], f"{path}.thinking"),
                                      progress=True))  # fmt: skip
        if "text" in raw:
            text = self.string(raw["text"], f"{path}.text")
            as_refusal = ending is Ending.REFUSED and "refusal" not in raw
            parts.append(RefusalPart(text=text) if as_refusal else TextPart(text=text))
        if "refusal" in raw:
            parts.append(RefusalPart(text=self.string(raw["refusal"], f"{path}.refusal")))
            if ending is None:
                ending = Ending.REFUSED
        calls = self.calls(raw, path)
        detail = None
        if "stop_details" in raw:
            detail = self.string(raw["stop_details"], f"{path}.stop_details")
            if ending not in (Ending.REFUSED, Ending.MALFORMED_TOOL_CALL):
                self.fail(
                    f"{path}.stop_details",
                    "only applies to a refused or a malformed_tool_call turn",
                )
        return _TurnDraft(parts, calls, ending, detail, usage, None, path)

    def calls(self, raw: Mapping[str, Any], path: str) -> list[_CallDraft]:
        if "tool_call" in raw and "tool_calls" in raw:
            self.fail(path, "give tool_call or tool_calls, not both")
        if "tool_calls" in raw:
            for key in ("args", "args_raw", "id"):
                if key in raw:
                    self.fail(_join(path, key), "belongs inside each tool_calls entry")
            items = raw["tool_calls"]
            if not isinstance(items, list) or not items:
                self.fail(f"{path}.tool_calls", f"expected a non-empty list, got {_kind(items)}")
            return [
                self.call(
                    self.mapping(c, f"{path}.tool_calls[{i}]", _CALL),
                    "tool",
                    f"{path}.tool_calls[{i}]",
                )
                for i, c in enumerate(items)
            ]
        if "tool_call" in raw:
            return [self.call(raw, "tool_call", path)]
        for key in ("args", "args_raw", "id"):
            if key in raw:
                self.fail(_join(path, key), "needs a tool_call")
        return []

    def call(self, raw: Mapping[str, Any], name_key: str, path: str) -> _CallDraft:
        if name_key not in raw:
            self.fail(_join(path, name_key), "missing; name the tool called")
        name = self.string(raw[name_key], _join(path, name_key))
        if not name:
            self.fail(_join(path, name_key), "is empty; name the tool called")
        if "args" in raw and "args_raw" in raw:
            self.fail(path, "give args or args_raw, not both")
        args: Mapping[str, Any] | None = None
        args_raw: str | None = None
        if "args_raw" in raw:
            args_raw = self.string(raw["args_raw"], _join(path, "args_raw"))
        else:
            args = raw.get("args", {})
            if not isinstance(args, Mapping):
                self.fail(_join(path, "args"), f"expected a mapping, got {_kind(args)}")
        call_id = self.string(raw["id"], _join(path, "id")) if "id" in raw else None
        if call_id is not None and not call_id:
            self.fail(_join(path, "id"), "is empty")
        return _CallDraft(name, args, args_raw, call_id, path)

    def http_error(
        self, raw: Mapping[str, Any], path: str, ending: Ending | None, usage: Usage
    ) -> _TurnDraft:
        for key in raw:
            if key not in ("http_error", "retry_after", "message", "ending", "usage"):
                self.fail(_join(path, str(key)), "cannot be combined with http_error")
        status = self.integer(raw["http_error"], f"{path}.http_error", minimum=400)
        if status > 599:
            self.fail(
                f"{path}.http_error", f"expected an HTTP error status (400-599), got {status}"
            )
        retry_after = (
            self.number(raw["retry_after"], f"{path}.retry_after") if "retry_after" in raw else None
        )
        message = self.string(raw.get("message", ""), f"{path}.message")
        if ending is None:
            exceeded = status == 413 or context_exceeded_message(message)
            ending = Ending.CONTEXT_EXCEEDED if exceeded else Ending.ERROR
        if ending is Ending.CONTEXT_EXCEEDED and not message:
            message = _CONTEXT_MESSAGE  # so every wire format reads the rendered body back alike
        error = ErrorInfo(status=status, message=message, retry_after=retry_after)
        return _TurnDraft([], [], ending, message or None, usage, error, path)

    def usage(self, value: Any, path: str) -> Usage:
        raw = self.mapping(value, path, _USAGE)
        return Usage(**{k: self.integer(v, f"{path}.{k}") for k, v in raw.items()})

    def build(self, draft: _TurnDraft, ids: Iterator[str]) -> Turn:
        if draft.fault is not None and draft.fault.disconnect:
            return draft.fault.error_turn()
        parts = list(draft.parts)
        for c in draft.calls:
            call_id = c.id if c.id is not None else next(ids)
            if c.args_raw is not None:
                parts.append(ToolCall.from_raw(id=call_id, name=c.name, arguments_raw=c.args_raw))
            else:
                parts.append(ToolCall.from_args(id=call_id, name=c.name, arguments=c.args))
        if draft.error is not None:
            assert draft.ending is not None
            return Turn(
                message=Message(role="assistant", parts=()),
                ending=draft.ending,
                raw_reason=str(draft.error.status),
                detail=draft.detail,
                usage=draft.usage,
                error=draft.error,
            )
        ending, detail = decide(Ending.COMPLETE, parts)
        if draft.ending is not None and draft.ending is not ending:
            ending, detail = draft.ending, None
        return Turn(
            message=Message(role="assistant", parts=tuple(parts)),
            ending=ending,
            detail=draft.detail if draft.detail is not None else detail,
            usage=draft.usage,
        )


def _fresh_ids(taken: set[str]) -> Iterator[str]:
    n = 0
    while True:
        n += 1
        if f"c{n}" not in taken:
            yield f"c{n}"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _names(names: set[str]) -> str:
    return ", ".join(sorted(names)) or "(none)"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})" if len(value) <= 40 else "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__
