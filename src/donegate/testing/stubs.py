"""Tool stubs: scripted tool results, per call, kept apart from the model's turns.

A stub answers its 1st, 2nd, ... call from a list of results (the last repeats) and records the
arguments of every execution, so a test counts executions per tool and varies the results
without touching the turns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from donegate.errors import ToolStubError
from donegate.tools import Tool

__all__ = ["ANY_OBJECT", "StubResult", "StubSpec", "StubTool", "ToolStubError"]

ANY_OBJECT: Mapping[str, Any] = {"type": "object", "additionalProperties": True}
"""The schema stub tools show: any arguments object is accepted."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StubResult:
    """One scripted outcome of a stub call."""

    returns: Any = None
    """The value returned (rendered as JSON for the model) when `raises` is None."""
    raises: str | None = None
    """When set, the call raises `ToolStubError` with this message."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StubSpec:
    """How a stubbed tool behaves, call by call."""

    results: tuple[StubResult, ...]
    """The outcome of the 1st, 2nd, ... call; the last repeats."""
    side_effect: bool = False
    """Marks the tool as side-effecting (the loop keys and never repeats such calls)."""
    description: str = ""
    """What the model is told the tool does."""
    parameters: Mapping[str, Any] = field(default_factory=lambda: dict(ANY_OBJECT))
    """The JSON Schema shown to the model; arguments are never validated against it."""


class _StubFunction:
    """The callable behind a `StubTool`: records each call, answers from the spec."""

    __slots__ = ("calls", "spec")

    def __init__(self, spec: StubSpec) -> None:
        self.spec = spec
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **arguments: Any) -> Any:
        index = min(len(self.calls), len(self.spec.results) - 1)
        self.calls.append(arguments)
        result = self.spec.results[index]
        if result.raises is not None:
            raise ToolStubError(result.raises)
        return result.returns


@dataclass(frozen=True, kw_only=True, slots=True)
class StubTool(Tool):
    """A `Tool` answering from a `StubSpec`; `calls` lists the arguments of every execution."""

    stub: _StubFunction
    """The recording callable (also in `function`)."""

    @classmethod
    def build(cls, name: str, spec: StubSpec) -> StubTool:
        """A fresh stub tool with no calls recorded."""
        function = _StubFunction(spec)
        return cls(
            name=name,
            function=function,
            description=spec.description,
            parameters=spec.parameters,
            side_effect=spec.side_effect,
            stub=function,
        )

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The arguments of every execution, in order."""
        return self.stub.calls
