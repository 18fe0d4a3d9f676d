"""What a run produced: its `Status`, its `RunResult` and one `ToolCallRecord` per answered call.

These are the bottom-layer records every other layer carries (events, the harness's evidence,
the store's evidence rows, telemetry spans), so one fact has one type: a tool call is measured
once, where it runs, and its duration travels with the record.

The run's `Status` and every other status vocabulary live in `donegate.records.status`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from donegate._frozen import fast_init
from donegate.messages import NO_USAGE, Ending, Message, ToolCall, ToolResult, Turn, Usage
from donegate.records.status import Status

__all__ = [
    "RunResult",
    "Spend",
    "SpendLine",
    "ToolCallRecord",
]


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRecord:
    """One tool call and how it was answered, measured where it ran."""

    step: int
    """The model call that asked for it."""
    call: ToolCall
    """The call."""
    result: ToolResult
    """Its answer in the transcript."""
    executed: bool
    """False when the harness answered without running the tool (limit, malformed, replayed)."""
    idempotency_key: str | None = None
    """The key a side-effecting call ran under."""
    duration_s: float = 0.0
    """Wall time answering it took (monotonic clock); 0.0 when it was answered without a wait."""
    started_at: float | None = None
    """Unix time answering it began; None when not measured (answered by the loop itself)."""
    ended_at: float | None = None
    """Unix time it was answered; None when not measured."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SpendLine:
    """What one model spent in one role (``agent`` or ``verifier``)."""

    model: str
    """``provider:model``."""
    role: str
    """``agent`` or ``verifier``."""
    calls: int = 0
    """Model calls charged."""
    usage: Usage = NO_USAGE
    """Their usage, summed."""
    usd: float | None = 0.0
    """Their cost; None when the model has no known price."""

    def as_data(self) -> dict[str, Any]:
        """A JSON-ready object (certificates, reports, the store)."""
        u = self.usage
        return {
            "model": self.model,
            "role": self.role,
            "calls": self.calls,
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
            "usd": None if self.usd is None else round(self.usd, 8),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SpendLine:
        """The inverse of `as_data`."""
        usd = data.get("usd")
        return cls(
            model=str(data.get("model", "")),
            role=str(data.get("role", "agent")),
            calls=int(data.get("calls", 0)),
            usage=Usage(
                input_tokens=int(data.get("input_tokens", 0)),
                output_tokens=int(data.get("output_tokens", 0)),
                cache_read_tokens=int(data.get("cache_read_tokens", 0)),
                cache_write_tokens=int(data.get("cache_write_tokens", 0)),
            ),
            usd=None if usd is None else float(usd),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Spend:
    """A task's spend so far, by model and role."""

    lines: tuple[SpendLine, ...] = ()
    """One line per (model, role), in first-charged order."""

    @property
    def tokens(self) -> int:
        """Input plus output tokens over every line."""
        return sum(line.usage.total_tokens for line in self.lines)

    @property
    def usd(self) -> float:
        """USD over every priced line."""
        return sum(line.usd or 0.0 for line in self.lines)

    @property
    def calls(self) -> int:
        """Model calls over every line."""
        return sum(line.calls for line in self.lines)

    def by_role(self, role: str) -> Spend:
        """The lines of one role."""
        return Spend(lines=tuple(line for line in self.lines if line.role == role))

    def __add__(self, other: Spend) -> Spend:
        lines = {(line.model, line.role): line for line in self.lines}
        for line in other.lines:
            had = lines.get((line.model, line.role))
            if had is None:
                lines[(line.model, line.role)] = line
            else:
                usd = None if had.usd is None or line.usd is None else had.usd + line.usd
                lines[(line.model, line.role)] = replace(
                    had, calls=had.calls + line.calls, usage=had.usage + line.usage, usd=usd
                )
        return Spend(lines=tuple(lines.values()))

    def as_data(self) -> dict[str, Any]:
        """A JSON-ready object: totals and the lines."""
        return {
            "tokens": self.tokens,
            "usd": round(self.usd, 8),
            "calls": self.calls,
            "lines": [line.as_data() for line in self.lines],
        }

    @classmethod
    def from_data(cls, data: Any) -> Spend:
        """The inverse of `as_data`; anything unreadable is no spend."""
        if not isinstance(data, Mapping) or not isinstance(data.get("lines"), list):
            return cls()
        return cls(
            lines=tuple(SpendLine.from_data(x) for x in data["lines"] if isinstance(x, Mapping))
        )

    def render(self) -> str:
        """A few lines for a person: one per model and role, then the total."""
        rows = [
            f"- {line.role} {line.model}: {line.calls} call(s), "
            f"{line.usage.input_tokens} in / {line.usage.output_tokens} out tokens"
            + (f" (cache {line.usage.cache_read_tokens} read, "
               f"{line.usage.cache_write_tokens} written)"
               if line.usage.cache_read_tokens or line.usage.cache_write_tokens else "")
            + (", price unknown" if line.usd is None else f", ${line.usd:.6f}")
            for line in self.lines
        ]  # fmt: skip
        rows.append(f"- total: {self.calls} call(s), {self.tokens} tokens, ${self.usd:.6f}")
        return "\n".join(rows)


NO_SPEND = Spend()
"""Nothing spent (shared: a `Spend` is frozen)."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class RunResult:
    """What a run produced and why it stopped."""

    status: Status
    """How the run ended; only `complete` means the answer is usable."""
    text: str
    """The last turn's visible text (partial when the run did not complete)."""
    output: Any = None
    """The finish tool's validated arguments, when it ended the run."""
    transcript: tuple[Message, ...] = ()
    """Every message, the system and user messages first."""
    model_calls: int = 0
    """Model calls made, each counted once."""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    """Every call answered, in order."""
    usage: Usage = field(default_factory=Usage)
    """Summed token usage."""
    ending: Ending | None = None
    """The last turn's ending."""
    reason: str = ""
    """Why the run ended, for people."""
    turns: tuple[Turn, ...] = ()
    """Every classified turn, in order."""
    spend: Spend = NO_SPEND
    """The spend of the task budget this run charged (every role's, earlier runs' included);
    empty when the run had none."""

    @property
    def complete(self) -> bool:
        """True only for `Status.COMPLETE`."""
        return self.status is Status.COMPLETE

    @property
    def tool_counts(self) -> dict[str, int]:
        """Executions per tool name (calls answered without running are not counted)."""
        counts: dict[str, int] = {}
        for r in self.tool_calls:
            if r.executed:
                counts[r.call.name] = counts.get(r.call.name, 0) + 1
        return counts
