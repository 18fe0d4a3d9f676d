"""The agent loop's tagged values: the actions it yields, the gate's verdict, a handler's step.

`donegate.loop.agent_loop` yields an `Action`; `donegate.run` carries it out with plain or async
I/O and sends the outcome back (a `Turn`, the `ToolCallRecord`s, a `Verdict`). Inside the loop
each ending's handler returns a `Step`: `Continue` or `Stop`. Each union is matched exhaustively
(`assert_never`), so a new variant is a type error where it is not handled. Kept apart from the
algorithm so a driver reads only the protocol it implements.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from donegate._frozen import fast_init
from donegate.messages import Message, ToolCall, Turn
from donegate.records.status import Status

if TYPE_CHECKING:  # annotations only: the hooks' decision imports `Verdict` without them
    from donegate.models.base import Model, ModelRequest
    from donegate.tools import Tool

__all__ = ["Action", "CallModel", "Gate", "Judge", "RunTools", "Verdict"]


@fast_init
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


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class CallModel:
    """Call `model` with `request`; send back the classified `Turn`."""

    model: Model
    """The model to call (the fallback after a refusal)."""
    request: ModelRequest
    """The request."""
    step: int
    """1-based model-call number."""


@fast_init
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


# -- what a handler decides --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Continue:
    """Go round again: the handler appended what the next call needs (or changed the request)."""


@fast_init
@dataclass(frozen=True, slots=True)
class Stop:
    """End the run with this status."""

    status: Status
    """How the run ended."""
    reason: str
    """Why, for people."""
    output: Any = None
    """The finish tool's validated arguments, when it ended the run."""


Step: TypeAlias = Continue | Stop
Steps: TypeAlias = Generator[Action, Any, Step]
"""A handler that may yield actions (run tools, ask the gate) before it decides."""

CONTINUE = Continue()
