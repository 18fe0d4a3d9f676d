"""The script file's schema: pydantic models of what a YAML or JSON script may say.

`donegate.testing.script` builds canonical turns from a validated `ScriptFile`; this module only
decides whether the data is a script and, when it is not, which field is wrong and why, in one
line (``turns[3].ending: unknown ending 'done'; expected one of: ...``), as `harness.spec` does
for task files. Pydantic does the type checks, strictly (``"2"`` is not an integer, ``true`` is
not a number); the rules between keys that a type cannot say (a dropped connection answers
nothing, ``stop_details`` needs a refusal) are the validators below, each raising at the field
it names. Presence matters in a script (``returns: null`` is a stub that returns null), so the
builder reads `model_fields_set`, and the defaults here are only placeholders of the right type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from donegate.errors import ScriptError, UserError
from donegate.finish import FinishTool, as_finish_tool
from donegate.loop import Status
from donegate.messages import Ending
from donegate.testing.stubs import ANY_OBJECT

__all__ = [
    "ENDINGS",
    "FAULT_KEYS",
    "CallData",
    "ExpectData",
    "FinishData",
    "ResultData",
    "ScriptFile",
    "StubData",
    "TurnData",
    "UsageData",
    "validate_script",
]

ENDINGS = tuple(e.value for e in Ending)
STATUSES = tuple(s.value for s in Status)
FAULT_KEYS = ("delay", "disconnect")
"""The keys of a turn that inject a transport fault rather than answer."""
_HTTP_ERROR_KEYS = ("http_error", "retry_after", "message", "ending", "usage")
Loc = tuple[str | int, ...]


def problem(message: str, *at: str | int) -> PydanticCustomError:
    """A located problem: `at` is the field below the model raising it (empty: the model)."""
    return PydanticCustomError("script", "{message}", {"message": message, "at": at})


def _one_of(what: str, options: tuple[str, ...]) -> AfterValidator:
    def check(value: str) -> str:
        if value not in options:
            raise ValueError(f"unknown {what} {value!r}; expected one of: {', '.join(options)}")
        return value

    return AfterValidator(check)


def _seconds(value: float) -> float:
    if value == 0:
        raise ValueError(f"expected a number of seconds > 0, got {kind(value)}")
    return value


EndingName = Annotated[str, _one_of("ending", ENDINGS)]
StatusName = Annotated[str, _one_of("status", STATUSES)]
Count = Annotated[int, Field(ge=0)]
Number = Annotated[float, Field(ge=0.0)]
Delay = Annotated[float, Field(ge=0.0), AfterValidator(_seconds)]
ToolName = Annotated[str, Field(min_length=1)]


class _Strict(BaseModel):
    # strict: YAML's `true` is no number and "2" no integer; nan and inf are no delay or count
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        """Refuse the first unknown key, naming the keys this mapping may hold."""
        if isinstance(data, dict):
            keys = [info.alias or name for name, info in cls.model_fields.items()]
            for key in data:
                if key not in keys:
                    raise problem(
                        f"unknown key {str(key)!r}; expected one of: {', '.join(keys)}", str(key)
                    )
        return data

    def given(self, *keys: str) -> list[str]:
        """Those of `keys` the file gave (every given field when none), in declaration order."""
        names = keys or tuple(type(self).model_fields)
        return [k for k in names if k in self.model_fields_set]


class UsageData(_Strict):
    """``usage:``, token counts a turn reports."""

    input_tokens: Count = 0
    output_tokens: Count = 0
    cache_read_tokens: Count = 0
    cache_write_tokens: Count = 0
    reasoning_tokens: Count = 0


class CallData(_Strict):
    """One entry of a turn's ``tool_calls``."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    args_raw: str = ""
    id: str = ""

    @model_validator(mode="after")
    def _named(self) -> Self:
        _check_call(self, self.tool, "tool")
        return self


def _check_call(call: CallData | TurnData, name: str, name_key: str) -> None:
    if not name:
        raise problem("is empty; name the tool called", name_key)
    if len(call.given("args", "args_raw")) == 2:
        raise problem("give args or args_raw, not both")
    if call.given("id") and not call.id:
        raise problem("is empty", "id")


class TurnData(_Strict):
    """One model turn: an answer (text, calls, an HTTP error), a transport fault, or both."""

    text: str = ""
    thinking: str = ""
    refusal: str = ""
    tool_call: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    args_raw: str = ""
    id: str = ""
    tool_calls: list[CallData] = Field(default_factory=list, min_length=1)
    ending: EndingName = ""
    stop_details: str = ""
    usage: UsageData = Field(default_factory=UsageData)
    http_error: int = Field(default=0, ge=400, le=599)
    retry_after: Number = 0.0
    message: str = ""
    delay: Delay = 0.0
    disconnect: bool = False

    @property
    def answers(self) -> list[str]:
        """The given keys that answer (all but the fault keys), in declaration order."""
        return [k for k in self.given() if k not in FAULT_KEYS]

    @property
    def stated_ending(self) -> Ending | None:
        """The ending the file states: ``ending``, else refused for a ``refusal``, else None."""
        if self.given("ending"):
            return Ending(self.ending)
        return Ending.REFUSED if self.given("refusal") else None

    def calls(self) -> list[tuple[Loc, CallData]]:
        """The turn's tool calls, each with its place below the turn."""
        if self.given("tool_calls"):
            return [(("tool_calls", i), call) for i, call in enumerate(self.tool_calls)]
        if not self.given("tool_call"):
            return []
        own = {"tool", *self.given("args", "args_raw", "id")}
        call = CallData.model_construct(
            _fields_set=own, tool=self.tool_call, args=self.args, args_raw=self.args_raw, id=self.id
        )
        return [((), call)]

    @model_validator(mode="before")
    @classmethod
    def _one_call_key(cls, data: Any) -> Any:
        """Both call keys is one mistake, whatever their values (checked before those)."""
        if isinstance(data, dict) and "tool_call" in data and "tool_calls" in data:
            raise problem("give tool_call or tool_calls, not both")
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        answers = self.answers
        if self.disconnect and answers:
            raise problem(
                "cannot be combined with disconnect: a dropped connection answers nothing",
                answers[0],
            )
        if not answers:
            if not (self.delay or self.disconnect):
                raise problem(
                    "an empty turn; give text, thinking, a tool call, an http_error, a delay or "
                    "a disconnect"
                )
        elif self.given("http_error"):
            other = [k for k in answers if k not in _HTTP_ERROR_KEYS]
            if other:
                raise problem("cannot be combined with http_error", other[0])
        else:
            self._check_answer()
        return self

    def _check_answer(self) -> None:
        misplaced = self.given("retry_after", "message")
        if misplaced:
            raise problem("only applies to an http_error turn", misplaced[0])
        if self.given("stop_details") and self.stated_ending not in (
            Ending.REFUSED,
            Ending.MALFORMED_TOOL_CALL,
        ):
            raise problem("only applies to a refused or a malformed_tool_call turn", "stop_details")
        loose = self.given("args", "args_raw", "id")
        if self.given("tool_calls") and loose:
            raise problem("belongs inside each tool_calls entry", loose[0])
        if self.given("tool_call"):
            _check_call(self, self.tool_call, "tool_call")
        elif loose and not self.given("tool_calls"):
            raise problem("needs a tool_call", loose[0])


class ResultData(_Strict):
    """One scripted outcome of a stub call: ``returns: VALUE`` or ``raises: MESSAGE``."""

    returns: Any = None
    raises: str = ""

    @model_validator(mode="after")
    def _one(self) -> Self:
        if len(self.given()) != 1:
            raise problem("give exactly one of returns, raises")
        return self


class StubData(_Strict):
    """A tool stub: one outcome (``returns``, ``raises``) or one per call (``results``)."""

    returns: Any = None
    raises: str = ""
    results: list[ResultData] = Field(default_factory=list, min_length=1)
    side_effect: bool = False
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: dict(ANY_OBJECT))

    @model_validator(mode="after")
    def _one_behaviour(self) -> Self:
        given = self.given("returns", "raises", "results")
        if len(given) > 1:
            raise problem(f"give one of returns, raises, results; got {', '.join(given)}")
        if not given:
            raise problem("missing behaviour; give returns, raises or results")
        return self


class FinishData(_Strict):
    """``finish_tool:``, the structured-answer tool; `tool` is the one built from it."""

    name: str = "submit_answer"
    schema_: dict[str, Any] = Field(default_factory=lambda: {"type": "object"}, alias="schema")
    description: str = ""
    _tool: FinishTool | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _builds(self) -> Self:
        try:
            tool = as_finish_tool(self.schema_, name=self.name)
        except UserError as exc:
            raise problem(str(exc).removeprefix("finish_tool: "), "schema") from None
        assert tool is not None
        if self.given("description"):
            tool = FinishTool(schema=tool.schema, name=self.name, description=self.description)
        self._tool = tool
        return self

    @property
    def tool(self) -> FinishTool:
        """The finish tool this section describes."""
        assert self._tool is not None, "a validated FinishData has its tool"
        return self._tool


class ExpectData(_Strict):
    """``expect:``, what a replay should produce; its field names are `Expect`'s."""

    status: StatusName = ""
    model_calls: Count = 0
    tool_calls: dict[ToolName, Count] = Field(default_factory=dict)
    text: str = ""
    output: dict[str, Any] | None = None
    ending: EndingName = ""
    unused_turns: Count = 0


class ScriptFile(_Strict):
    """A whole script file, validated; `donegate.testing.script` builds the `Script`."""

    prompt: str = ""
    system: str = ""
    max_steps: int = Field(default=8, ge=1)
    finish_tool: FinishData = Field(default_factory=FinishData)
    tools: dict[ToolName, StubData] = Field(default_factory=dict)
    turns: list[TurnData] = Field(min_length=1)
    expect: ExpectData = Field(default_factory=ExpectData)

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.given("finish_tool") and self.finish_tool.name in self.tools:
            raise problem(
                f"{self.finish_tool.name!r} is also a stubbed tool", "finish_tool", "name"
            )
        seen: dict[str, Loc] = {}
        for i, turn in enumerate(self.turns):
            for where, call in turn.calls():
                if not call.given("id"):
                    continue
                at = ("turns", i, *where, "id")
                if call.id in seen:
                    raise problem(f"duplicate id {call.id!r} (see {_path(seen[call.id])})", *at)
                seen[call.id] = at
        known = set(self.tools) | {c.tool for t in self.turns for _, c in t.calls()}
        for name, count in self.expect.tool_calls.items():
            if name not in known and count > 0:
                raise problem(
                    f"unknown tool {name!r}: no turn calls it and no stub defines it; "
                    f"known tools: {', '.join(sorted(known)) or '(none)'}",
                    "expect",
                    "tool_calls",
                    name,
                )
        return self


def validate_script(data: Any, *, source: str | None = None) -> ScriptFile:
    """`ScriptFile.model_validate`, raising a `ScriptError` that names the field of the first
    problem (a script is fixed one error at a time, as before pydantic)."""
    try:
        return ScriptFile.model_validate(data)
    except ValidationError as exc:
        field, message = _located(exc.errors(include_url=False)[0])
        raise ScriptError(message, source=source, field=field or None) from None


# -- one-line messages -----------------------------------------------------------------------

_MISSING = {"turns": "a script needs at least one model turn", "tool": "name the tool called"}
"""What to add when a required key is missing, by key."""
_MAPPING = {
    "tools": "a mapping of tool names to stubs",
    "schema": "a JSON Schema mapping",
    "parameters": "a JSON Schema mapping",
}
"""What a mapping-valued key holds, where "a mapping" says too little."""


def _located(error: ErrorDetails) -> tuple[str, str]:
    """A pydantic error as (field path, message), in the words the script format uses."""
    loc: Loc = error["loc"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    if error["type"] == "script":
        return _path((*loc, *ctx["at"])), str(ctx["message"])
    if loc and loc[-1] == "[key]":
        return _path(loc[:-2]), f"a tool name must be a non-empty string, got {kind(loc[-2])}"
    return _path(loc), _message(error["type"], error["input"], loc, ctx) or error["msg"]


def _message(kind_of: str, value: Any, loc: Loc, ctx: dict[str, Any]) -> str | None:
    last = loc[-1] if loc else ""
    got = kind(value)
    simple = {
        "string_type": "a string",
        "int_type": "an integer",
        "float_type": "a number >= 0",  # every number in a script is a count of seconds
        "bool_type": "true or false",
        "dict_type": _MAPPING.get(str(last), "a mapping"),
        "model_type": _MAPPING.get(str(last), "a mapping"),
        "list_type": "a non-empty list of turns" if loc == ("turns",) else "a non-empty list",
        "too_short": "a non-empty list of turns" if loc == ("turns",) else "a non-empty list",
        "finite_number": "a finite number",
    }
    if kind_of in simple:
        return f"expected {simple[kind_of]}, got {got}"
    if kind_of == "missing":
        hint = _MISSING.get(str(last))
        return f"missing; {hint}" if hint else "missing"
    if kind_of in ("greater_than_equal", "less_than_equal"):
        bound = ctx.get("ge", ctx.get("le"))
        what = "a number" if isinstance(bound, float) else "an integer"
        sign = ">=" if kind_of == "greater_than_equal" else "<="
        return f"expected {what} {sign} {bound:g}, got {value}"
    if kind_of == "value_error":
        return str(ctx["error"])
    return None


def _path(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def kind(value: Any) -> str:
    """What `value` is, for "expected X, got Y": ``a string ('hi')``, ``a number (5)``."""
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
