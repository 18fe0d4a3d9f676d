"""`fast_init`: the same dataclass, built through its slots' descriptors."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from donegate import _frozen
from donegate._frozen import fast_init
from donegate.actions import CallModel, RunTools, Stop, Verdict
from donegate.messages import (
    Ending,
    ErrorInfo,
    Message,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)
from donegate.models.base import ModelRequest
from donegate.results import RunResult, ToolCallRecord

HOT = [
    TextPart,
    ThinkingPart,
    RefusalPart,
    ToolCall,
    ToolResult,
    Usage,
    ErrorInfo,
    Turn,
    ToolCallRecord,
    RunResult,
    CallModel,
    RunTools,
    Stop,
    Verdict,
    ModelRequest,
]


def _pair() -> tuple[type[Any], type[Any]]:
    """One record shape twice: as the dataclass made it, and with `fast_init`."""

    def make() -> type[Any]:
        @dataclasses.dataclass(frozen=True, slots=True)
        class Record:
            first: int
            second: str = "two"
            items: list[int] = dataclasses.field(default_factory=list)
            hidden: dict[str, int] = dataclasses.field(default_factory=dict, init=False)
            fixed: int = dataclasses.field(default=7, init=False)
            named: str = dataclasses.field(default="n", kw_only=True)
            needed: int = dataclasses.field(kw_only=True)

        return Record

    return make(), fast_init(make())


def _values(record: Any) -> dict[str, Any]:
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((1,), {"needed": 2}),
        ((1, "b", [3]), {"needed": 2, "named": "m"}),
        ((), {"first": 5, "second": "s", "items": [1, 2], "needed": 0}),
    ],
)
def test_fields_land_as_the_dataclass_puts_them(args: tuple[Any, ...], kwargs: Any) -> None:
    plain, fast = _pair()
    assert _values(fast(*args, **kwargs)) == _values(plain(*args, **kwargs))
    assert (
        repr(fast(*args, **kwargs)).split("(", 1)[1]
        == repr(plain(*args, **kwargs)).split("(", 1)[1]
    )


def test_signature_errors_and_factories_are_the_dataclasses() -> None:
    plain, fast = _pair()
    assert str(inspect.signature(fast)) == str(inspect.signature(plain))
    for bad_args, bad_kwargs in [((), {"needed": 1}), ((1,), {}), ((1,), {"needed": 1, "x": 2})]:
        with pytest.raises(TypeError) as want:
            plain(*bad_args, **bad_kwargs)
        with pytest.raises(TypeError) as got:
            fast(*bad_args, **bad_kwargs)
        assert str(got.value).split(".", 1)[-1] == str(want.value).split(".", 1)[-1]
    one, two = fast(1, needed=2), fast(1, needed=2)
    assert one.items == [] and one.items is not two.items  # a factory runs per instance
    assert one.hidden == {} and one.hidden is not two.hidden and one.fixed == 7
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.first = 3


def test_refuses_what_it_cannot_build() -> None:
    @dataclasses.dataclass(frozen=True)
    class Unslotted:
        x: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class Passed:
        x: int
        y: dataclasses.InitVar[int]

    for cls in (Unslotted, Checked, Passed):
        with pytest.raises(TypeError, match="fast_init"):
            fast_init(cls)


@pytest.mark.parametrize("cls", HOT, ids=lambda c: c.__name__)
def test_the_records_built_every_turn_use_it(cls: type[Any]) -> None:
    init = cls.__init__
    assert init.__globals__.get("_FACTORY") is _frozen._FACTORY, "built by dataclass, not fast_init"
    params = inspect.signature(cls).parameters
    fields = [f for f in dataclasses.fields(cls) if f.init]
    assert list(params) == [f.name for f in fields]
    for f in fields:
        param = params[f.name]
        assert (param.kind is param.KEYWORD_ONLY) == f.kw_only
        if f.default is not dataclasses.MISSING:
            assert param.default == f.default
        elif f.default_factory is not dataclasses.MISSING:
            assert repr(param.default) == "<factory>"
        else:
            assert param.default is param.empty


def test_a_record_round_trips() -> None:
    turn = Turn(message=Message.user("hi"), ending=Ending.COMPLETE, usage=Usage(input_tokens=3))
    assert pickle.loads(pickle.dumps(turn)) == turn
    assert dataclasses.replace(turn, detail="d").detail == "d"
    assert hash(Usage(input_tokens=1)) == hash(Usage(input_tokens=1))
    assert Turn(message=Message.user("hi"), ending=Ending.COMPLETE).usage == Usage()
