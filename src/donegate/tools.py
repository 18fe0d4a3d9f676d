"""Tools: a Python function plus the JSON Schema the model sees, executed into `ToolResult`s.

The schema comes from the signature's type hints through pydantic; the same pydantic model
validates the model's arguments before the function runs. A tool that raises becomes an error
result, never an exception out of the loop.

A side-effecting tool's calls are journaled in an `EffectLedger` by idempotency key. When a run
died inside an effect (begun, never recorded), what happens next is the tool's to say:
``idempotent=True`` (it honours its key) re-issues the call under the same key; otherwise its
``reconcile(key)`` is asked whether the effect happened, and a tool with neither is not run
again: `EffectOutcomeUnknown` (`begin_effect`).
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, get_type_hints, overload

from donegate.codec import canonical_json
from donegate.errors import EffectDivergence, EffectOutcomeUnknown
from donegate.messages import ToolCall, ToolResult
from donegate.models.base import ToolSpec

if TYPE_CHECKING:  # imported where used (a tool made from a function, an async tool): the
    import pydantic  # root and the paths that make no tool from a signature stay light

__all__ = [
    "IDEMPOTENCY_KEY",
    "BatchLedger",
    "EffectLedger",
    "MemoryLedger",
    "Tool",
    "as_tool",
    "begin_effect",
    "ensure_same_call",
    "error_result",
    "render_output",
    "tool",
]

IDEMPOTENCY_KEY = "idempotency_key"
"""A tool parameter of this name gets the call's idempotency key; the model never sees it."""


def _inline_enums(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each enum parameter's ``$ref`` replaced by its values: pydantic puts an
    `Enum` in ``$defs``, and a tool's parameters read plainest (to a model and to every
    provider's schema dialect) as ``{"type": "string", "enum": [...]}`` in place."""
    defs = schema.get("$defs", {})
    enums = {f"#/$defs/{k}": v for k, v in defs.items() if isinstance(v, dict) and "enum" in v}
    if not enums:
        return schema

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref in enums:
                found = {k: v for k, v in enums[ref].items() if k not in ("title", "description")}
                return {**found, **{k: inline(v) for k, v in node.items() if k != "$ref"}}
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    out: dict[str, Any] = inline({k: v for k, v in schema.items() if k != "$defs"})
    rest = {k: v for k, v in defs.items() if f"#/$defs/{k}" not in enums}
    if rest:
        out["$defs"] = rest
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Tool:
    """A callable the model may ask for."""

    name: str
    """The name the model calls."""
    function: Callable[..., Any]
    """Plain or async; called with the validated arguments as keywords."""
    description: str = ""
    """What the tool does, for the model."""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON Schema of the arguments."""
    side_effect: bool = False
    """True when running it twice would repeat an effect (an email, a payment)."""
    validator: type[pydantic.BaseModel] | None = None
    """Validates arguments before the call; None passes them as given."""
    takes_key: bool = False
    """The function accepts ``idempotency_key``."""
    idempotent: bool = False
    """The effect honours its idempotency key: a call re-issued under a key it already ran
    under does not repeat the effect. Only then is a call whose run died mid-effect re-issued."""
    reconcile: Callable[[str], Any] | None = None
    """For a side effect that is not idempotent: ``reconcile(key)`` says whether a call begun
    under `key` by a run that died actually happened. None or False: it did not (the call runs
    now); anything else: it did, and the value (True, or what the tool would have returned) is
    the call's result. Raising means it cannot tell (the task is escalated)."""
    _spec: ToolSpec = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # made once: every run offers the same spec object, so adapters that keep a rendering
        # while the same specs come back (`models/_cache.LastRendered`) render a tool once
        spec = ToolSpec(name=self.name, description=self.description, parameters=self.parameters)
        object.__setattr__(self, "_spec", spec)

    @property
    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return self._spec

    @property
    def is_async(self) -> bool:
        """True for coroutine functions."""
        return inspect.iscoroutinefunction(self.function)

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        side_effect: bool = False,
        idempotent: bool = False,
        reconcile: Callable[[str], Any] | None = None,
    ) -> Tool:
        """Build a tool from a typed function; its docstring's first paragraph describes it."""
        signature = inspect.signature(function)
        hints = get_type_hints(function)
        fields: dict[str, Any] = {}
        takes_key = False
        for pname, param in signature.parameters.items():
            if pname == IDEMPOTENCY_KEY:
                takes_key = True
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            annotation = hints.get(pname, Any)
            default = ... if param.default is param.empty else param.default
            fields[pname] = (annotation, default)
        tool_name = name or function.__name__
        import pydantic

        model = pydantic.create_model(f"{tool_name}_arguments", **fields)
        schema = _inline_enums(model.model_json_schema())
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        doc = inspect.getdoc(function) or ""
        return cls(
            name=tool_name,
            function=function,
            description=description if description is not None else doc.split("\n\n")[0],
            parameters=schema,
            side_effect=side_effect,
            validator=model,
            takes_key=takes_key,
            idempotent=idempotent,
            reconcile=reconcile,
        )

    def prepare(
        self, call: ToolCall, idempotency_key: str | None = None
    ) -> dict[str, Any] | ToolResult:
        """Validated keyword arguments for `call`, or the error result to answer it with."""
        if self.validator is None:
            args = dict(call.arguments or {})
        else:
            try:
                model = self.validator.model_validate(call.arguments or {})
            except Exception as exc:
                # imported here, not on every call (a function-level import runs each time)
                from pydantic import ValidationError  # loaded already: the validator is a model

                if not isinstance(exc, ValidationError):
                    raise
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                    for e in exc.errors()
                )
                return error_result(call, f"invalid arguments for {self.name}: {problems}")
            # what `dict(model)` gives (fields in order, then any extras), without its generator
            args = model.__dict__.copy()
            if model.__pydantic_extra__:
                args.update(model.__pydantic_extra__)
        if self.takes_key:
            args[IDEMPOTENCY_KEY] = idempotency_key
        return args

    def run_sync(self, call: ToolCall, idempotency_key: str | None = None) -> ToolResult:
        """Execute synchronously (async tools run on a private event loop)."""
        args = self.prepare(call, idempotency_key)
        if isinstance(args, ToolResult):
            return args
        try:
            value = self.function(**args)
            if type(value) not in _PLAIN and inspect.isawaitable(value):
                import asyncio

                value = asyncio.run(_await(value))
        except Exception as exc:
            return error_result(call, f"{self.name} raised {type(exc).__name__}: {exc}")
        return ToolResult(call_id=call.id, name=call.name, content=render_output(value))

    async def run_async(self, call: ToolCall, idempotency_key: str | None = None) -> ToolResult:
        """Execute; plain functions run inline (or in a thread when `threaded`)."""
        args = self.prepare(call, idempotency_key)
        if isinstance(args, ToolResult):
            return args
        try:
            value = self.function(**args)
            if type(value) not in _PLAIN and inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return error_result(call, f"{self.name} raised {type(exc).__name__}: {exc}")
        return ToolResult(call_id=call.id, name=call.name, content=render_output(value))


async def _await(value: Awaitable[Any]) -> Any:
    return await value


def error_result(call: ToolCall, message: str) -> ToolResult:
    """An error result answering `call`."""
    return ToolResult(call_id=call.id, name=call.name, content=message, is_error=True)


def render_output(value: Any) -> str:
    """A tool's return value as the text the model reads."""
    if isinstance(value, str):
        return value
    loaded = sys.modules.get("pydantic")  # not imported: `value` cannot be a pydantic model
    if (
        loaded is not None
        and not isinstance(value, (dict, list))
        and isinstance(value, loaded.BaseModel)
    ):
        return str(value.model_dump_json())
    if _output is not None:
        try:
            return "".join(_output(value, 0))
        except RecursionError:
            pass  # a cycle (or a tree too deep): the encoder below says which
    return _OUTPUT.encode(value)


_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})
"""What tools usually return: never awaitable, so `inspect.isawaitable` (an ABC check for a
`dict`) is not asked about them."""

_OUTPUT = json.JSONEncoder(default=str, ensure_ascii=False)
"""`render_output`'s encoder, made once (`json.dumps` with options builds one per call)."""
_c_encoder = getattr(json.encoder, "c_make_encoder", None)  # not in the stubs; None without _json
# `JSONEncoder.encode` builds a C encoder anew on every call; this is `_OUTPUT`'s, built once,
# without its cycle check (a shared check would be a race between tools on threads): a cycle
# ends in RecursionError, and then `_OUTPUT` reports it as it always did.
_output: Any = (
    _c_encoder(None, str, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    if _c_encoder is not None
    else None
)


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    side_effect: bool = False,
    idempotent: bool = False,
    reconcile: Callable[[str], Any] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    side_effect: bool = False,
    idempotent: bool = False,
    reconcile: Callable[[str], Any] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator: ``@tool`` or ``@tool(side_effect=True, idempotent=True)`` makes a `Tool`.

    A side effect that is not idempotent may pass ``reconcile=`` (see `Tool.reconcile`).
    """
    if function is not None:
        return Tool.from_function(function)

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            f,
            name=name,
            description=description,
            side_effect=side_effect,
            idempotent=idempotent,
            reconcile=reconcile,
        )

    return wrap


def as_tool(value: Tool | Callable[..., Any]) -> Tool:
    """A `Tool` as given, or one built from a plain function."""
    if isinstance(value, Tool):
        return value
    if callable(value):
        return Tool.from_function(value)
    raise TypeError(f"not a tool or a function: {value!r}")


class EffectLedger(Protocol):
    """Where side-effecting calls are journaled by idempotency key (the store implements it).

    A call whose key already has a result is answered from the ledger and not run again. A
    call begun but never recorded (a crash mid-effect) has an unknown outcome: `begin` re-issues
    it under the same key only when asked to (`reissue`, for a tool that honours its key); see
    `begin_effect`. Either way only for the same call: a key held by a different call (another
    name or other arguments) raises `EffectDivergence`.
    """

    def lookup(self, key: str, call: ToolCall) -> ToolResult | None:
        """The recorded result for `key`, if any; `EffectDivergence` if `key` is another call's."""
        ...

    def begin(self, key: str, call: ToolCall, *, reissue: bool = True) -> bool:
        """Note that `call` is about to run under `key`; True when it may run.

        False, noting nothing, when an earlier run began `key` and never recorded it and
        `reissue` is False: its outcome is unknown. `EffectDivergence` as for `lookup`.
        """
        ...

    def record(self, key: str, result: ToolResult) -> None:
        """Record the result of the call run under `key`."""
        ...


class BatchLedger(EffectLedger, Protocol):
    """A ledger that looks up the side-effecting calls of one batch in one write.

    The calls of a batch run side by side, so they are begun together: `lookup_batch` writes
    what each `lookup` would (each key begun unless it is held), in one transaction instead of
    one per call, and each call's `lookup` that follows is answered from it, with the same
    checks (`EffectDivergence` is raised there, for that call).
    """

    def lookup_batch(self, calls: Sequence[tuple[str, ToolCall]]) -> None:
        """Look up the distinct keys `calls` name, as one write."""
        ...


def _signature(call: ToolCall) -> str:
    args = call.arguments
    if args is None:
        return f"{call.name}({call.arguments_raw})"
    return f"{call.name}({canonical_json(args)})"


def ensure_same_call(key: str, recorded: ToolCall, asking: ToolCall) -> None:
    """Raise `EffectDivergence` unless `asking` is the call `key` holds: same name, same arguments.

    Call ids are not compared: a model names its calls afresh on every response.
    """
    held, asked = _signature(recorded), _signature(asking)
    if held != asked:
        raise EffectDivergence(key, _short(held), _short(asked))


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class MemoryLedger:
    """An in-memory `EffectLedger` (tests, single-process runs)."""

    def __init__(self) -> None:
        self.results: dict[str, ToolResult] = {}
        self.begun: dict[str, ToolCall] = {}

    def lookup(self, key: str, call: ToolCall) -> ToolResult | None:
        if key in self.begun:
            ensure_same_call(key, self.begun[key], call)
        return self.results.get(key)

    def begin(self, key: str, call: ToolCall, *, reissue: bool = True) -> bool:
        if key in self.begun:
            ensure_same_call(key, self.begun[key], call)
            if not reissue and key not in self.results:
                return False
        self.begun[key] = call
        return True

    def record(self, key: str, result: ToolResult) -> None:
        self.results[key] = result


def begin_effect(ledger: EffectLedger, tool: Tool, key: str, call: ToolCall) -> ToolResult | None:
    """Journal `call` under `key` before it runs: None to run it, or the result answering it.

    A key an earlier run began and never recorded (it died inside the effect) is settled by
    the tool: an idempotent tool is re-issued under the same key; otherwise ``reconcile(key)``
    says whether the effect happened (its answer is recorded as the call's result and the tool
    does not run) or not (it runs now). A tool with no reconcile, or whose reconcile raises,
    raises `EffectOutcomeUnknown` and is not run.
    """
    if ledger.begin(key, call, reissue=tool.idempotent):
        return None
    if tool.reconcile is None:
        raise _unknown(
            key,
            call,
            f"an earlier run began it and died before recording it, and {tool.name} neither "
            "honours its key (idempotent) nor has a reconcile",
        )
    try:
        happened = _settled(tool.reconcile(key))
    except Exception as exc:
        why = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise _unknown(key, call, f"{tool.name}'s reconcile could not tell ({why})") from exc
    if happened is None or happened is False:
        ledger.begin(key, call, reissue=True)  # it did not happen: run it now
        return None
    content = (
        f"{tool.name} had already run under {key} (reconciled)"
        if happened is True
        else render_output(happened)
    )
    result = ToolResult(call_id=call.id, name=call.name, content=content)
    ledger.record(key, result)
    return result


def _unknown(key: str, call: ToolCall, why: str) -> EffectOutcomeUnknown:
    arguments = call.arguments if call.arguments is not None else call.arguments_raw
    return EffectOutcomeUnknown(
        key, _short(_signature(call)), _short(why, 300), tool=call.name, arguments=arguments
    )


def _settled(value: Any) -> Any:
    """A reconcile's answer; an awaitable one is awaited (on a thread inside a running loop)."""
    if not inspect.isawaitable(value):
        return value
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(value))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _await(value)).result()
