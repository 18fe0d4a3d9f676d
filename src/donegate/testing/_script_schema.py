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

from typing import Annotated, Any, ClassVar, Self

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

from donegate.errors import ScriptError, UserError
from donegate.finish import FinishTool, as_finish_tool
from donegate.messages import Ending
from donegate.records.status import Status
from donegate.testing._script_errors import Loc, kind, located, path, problem
from donegate.testing.stubs import ANY_OBJECT

__all__ = [
    "ENDINGS",
    "FAULT_KEYS",
    "TIMING_KEYS",
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
TIMING_KEYS = ("latency",)
"""The keys of a turn that say when its answer comes, not what it is."""
_HTTP_ERROR_KEYS = ("http_error", "retry_after", "message", "ending", "usage")


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
    _keys: ClassVar[tuple[str, ...]] = ()
    _names: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # computed once per class: a recorded session validates these per turn
        cls._names = tuple(cls.model_fields)
        cls._keys = tuple(info.alias or name for name, info in cls.model_fields.items())

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        """Refuse the first unknown key, naming the keys this mapping may hold."""
        if isinstance(data, dict):
            for key in data:
                if key not in cls._keys:
                    raise problem(
                        f"unknown key {str(key)!r}; expected one of: {', '.join(cls._keys)}",
                        str(key),
                    )
        return data

    def given(self, *keys: str) -> list[str]:
        """Those of `keys` the file gave (every given field when none), in declaration order."""
        given = self.model_fields_set
        return [k for k in keys or self._names if k in given]


class UsageData(_Strict):
    """``usage:``, token counts a turn reports."""

    input_tokens: Count = 0
    """Tokens of the request."""
    output_tokens: Count = 0
    """Tokens of the answer."""
    cache_read_tokens: Count = 0
    """Request tokens read from the provider's prompt cache."""
    cache_write_tokens: Count = 0
    """Request tokens written to it."""
    reasoning_tokens: Count = 0
    """Answer tokens spent thinking."""


class CallData(_Strict):
    """One entry of a turn's ``tool_calls``."""

    tool: str
    """The tool called (any name: models call tools they were not given)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments, as a mapping."""
    args_raw: str = ""
    """The arguments as the model wrote them, maybe not JSON (a cut or malformed call)."""
    id: str = ""
    """The call id; ``c1``, ``c2``, ... (skipping the ids given) when left out."""

    @model_validator(mode="after")
    def _named(self) -> Self:
        _check_call(self, self.tool, "tool")
        return self


def _check_call(call: CallData | TurnData, name: str, name_key: str) -> None:
    if not name:
        raise problem("is empty; name the tool called", name_key)
    if len(call.given("args", "args_raw")) == 2:
        raise problem("give args or args_raw, not both")
    if "id" in call.model_fields_set and not call.id:
        raise problem("is empty", "id")


class TurnData(_Strict):
    """One model turn: an answer (text, calls, an HTTP error), a transport fault, or both."""

    text: str = ""
    """The answer's text (a refusal's explanation when the ending is ``refused``)."""
    thinking: str = ""
    """Reasoning shown before the answer."""
    refusal: str = ""
    """A refusal beside the text; the ending is ``refused`` unless stated."""
    tool_call: str = ""
    """One call's tool, with `args` (or `args_raw`) and `id` beside it."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments of `tool_call`."""
    args_raw: str = ""
    """The raw arguments of `tool_call`."""
    id: str = ""
    """The id of `tool_call`."""
    tool_calls: list[CallData] = Field(default_factory=list, min_length=1)
    """Several calls in one turn, in order."""
    ending: EndingName = ""
    """The turn's ending when it is not the one its parts imply."""
    stop_details: str = ""
    """A refused or malformed_tool_call turn's detail (the refusal category, say)."""
    usage: UsageData = Field(default_factory=UsageData)
    """Token counts."""
    http_error: int = Field(default=0, ge=400, le=599)
    """The turn is this HTTP error status instead of an answer."""
    retry_after: Number = 0.0
    """An http_error's ``retry-after`` seconds."""
    message: str = ""
    """An http_error's message."""
    delay: Delay = 0.0
    """Seconds the answer comes late (a fault)."""
    disconnect: bool = False
    """The connection is dropped without an answer (a fault)."""
    latency: Delay = 0.0
    """Seconds the model takes to answer (not a fault: the answer comes, that late)."""

    @property
    def answers(self) -> list[str]:
        """The given keys that answer (all but the fault and timing keys), in declaration order."""
        return [k for k in self.given() if k not in FAULT_KEYS and k not in TIMING_KEYS]

    @property
    def stated_ending(self) -> Ending | None:
        """The ending the file states: ``ending``, else refused for a ``refusal``, else None."""
        if "ending" in self.model_fields_set:
            return Ending(self.ending)
        return Ending.REFUSED if "refusal" in self.model_fields_set else None

    def calls(self) -> list[tuple[Loc, CallData]]:
        """The turn's tool calls, each with its place below the turn."""
        if "tool_calls" in self.model_fields_set:
            return [(("tool_calls", i), call) for i, call in enumerate(self.tool_calls)]
        if "tool_call" not in self.model_fields_set:
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
        if "latency" in self.model_fields_set:
            faults = self.given(*FAULT_KEYS)
            if faults:
                raise problem(
                    "cannot be combined with latency: latency is a slow answer, "
                    f"{faults[0]} a fault",
                    faults[0],
                )
            if not answers:
                raise problem(
                    "needs an answer: give text, thinking, a tool call or an http_error",
                    "latency",
                )
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
        elif "http_error" in self.model_fields_set:
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
        if "stop_details" in self.model_fields_set and self.stated_ending not in (
            Ending.REFUSED,
            Ending.MALFORMED_TOOL_CALL,
        ):
            raise problem("only applies to a refused or a malformed_tool_call turn", "stop_details")
        loose = self.given("args", "args_raw", "id")
        if "tool_calls" in self.model_fields_set and loose:
            raise problem("belongs inside each tool_calls entry", loose[0])
        if "tool_call" in self.model_fields_set:
            _check_call(self, self.tool_call, "tool_call")
        elif loose and "tool_calls" not in self.model_fields_set:
            raise problem("needs a tool_call", loose[0])


class ResultData(_Strict):
    """One scripted outcome of a stub call: ``returns: VALUE`` or ``raises: MESSAGE``."""

    returns: Any = None
    """The value returned."""
    raises: str = ""
    """The message of the `ToolStubError` raised instead."""

    @model_validator(mode="after")
    def _one(self) -> Self:
        if len(self.given()) != 1:
            raise problem("give exactly one of returns, raises")
        return self


class StubData(_Strict):
    """A tool stub: one outcome (``returns``, ``raises``) or one per call (``results``)."""

    returns: Any = None
    """The value every call returns."""
    raises: str = ""
    """The message every call raises."""
    results: list[ResultData] = Field(default_factory=list, min_length=1)
    """The outcome of the 1st, 2nd, ... call; the last repeats."""
    side_effect: bool = False
    """The tool changes the world (the loop keys and never repeats its calls)."""
    description: str = ""
    """What the model is told the tool does."""
    parameters: dict[str, Any] = Field(default_factory=lambda: dict(ANY_OBJECT))
    """The JSON Schema shown to the model (arguments are not validated against it)."""

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
    """The tool's name."""
    schema_: dict[str, Any] = Field(default_factory=lambda: {"type": "object"}, alias="schema")
    """The JSON Schema of the answer (written ``schema:``)."""
    description: str = ""
    """What the model is told the tool is for."""
    _tool: FinishTool | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _builds(self) -> Self:
        try:
            tool = as_finish_tool(self.schema_, name=self.name)
        except UserError as exc:
            raise problem(str(exc).removeprefix("finish_tool: "), "schema") from None
        assert tool is not None
        if "description" in self.model_fields_set:
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
    """The run's status."""
    model_calls: Count = 0
    """Requests the model received."""
    tool_calls: dict[ToolName, Count] = Field(default_factory=dict)
    """Executions per tool name."""
    text: str = ""
    """The run's final text."""
    output: dict[str, Any] | None = None
    """The finish tool's arguments."""
    ending: EndingName = ""
    """The last turn's ending."""
    unused_turns: Count = 0
    """Turns left unplayed."""


class ScriptFile(_Strict):
    """A whole script file, validated; `donegate.testing.script` builds the `Script`."""

    prompt: str = ""
    """The user message (left out: a run uses its task's)."""
    system: str = ""
    """The system message."""
    max_steps: int = Field(default=8, ge=1)
    """The loop's step limit."""
    finish_tool: FinishData = Field(default_factory=FinishData)
    """The structured-answer tool."""
    tools: dict[ToolName, StubData] = Field(default_factory=dict)
    """Tool stubs by name."""
    turns: list[TurnData] = Field(min_length=1)
    """What the model returns, in order."""
    expect: ExpectData = Field(default_factory=ExpectData)
    """What a replay should produce."""

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if "finish_tool" in self.model_fields_set and self.finish_tool.name in self.tools:
            raise problem(
                f"{self.finish_tool.name!r} is also a stubbed tool", "finish_tool", "name"
            )
        seen: dict[str, Loc] = {}
        known = set(self.tools)
        for i, turn in enumerate(self.turns):
            for where, call in turn.calls():
                known.add(call.tool)
                if "id" not in call.model_fields_set:
                    continue
                at = ("turns", i, *where, "id")
                if call.id in seen:
                    raise problem(f"duplicate id {call.id!r} (see {path(seen[call.id])})", *at)
                seen[call.id] = at
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
        field, message = located(exc.errors(include_url=False)[0])
        raise ScriptError(message, source=source, field=field or None) from None
