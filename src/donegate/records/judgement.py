"""What one look at the world found when an agent claimed it was done: the gate's `Judgement`.

The hooks (`donegate.harness.agents.judge.look`) build it from the checks' results, the
protected files and the agent's todo list; the decision (block, pass, escalate) is taken from
it, and reports and the hooks' signed state carry it. `TranscriptRef` is where the session's
transcript was, and what it held, when the gate looked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from donegate.records.check import CheckResult
from donegate.records.checklist import TodoItem

__all__ = ["Judgement", "TranscriptRef"]


@dataclass(frozen=True, kw_only=True, slots=True)
class TranscriptRef:
    """Where a session's transcript is, and what it held when the gate looked."""

    path: str | None
    """The path the CLI named (None: it named none)."""
    readable: bool = False
    """True when it lies under an allowed folder and is a regular file."""
    resolved: str | None = None
    """The path with symlinks followed (allowed transcripts only)."""
    sha256: str | None = None
    """SHA-256 hex of the whole file (allowed transcripts up to `DIGEST_CAP` only)."""
    size: int | None = None
    """Bytes (allowed transcripts only)."""
    note: str = ""
    """Why it was not read, when it was not."""

    def as_data(self) -> dict[str, Any]:
        """The pointer as plain values (what reports and certificates hold)."""
        return {
            "path": self.path,
            "resolved": self.resolved,
            "sha256": self.sha256,
            "bytes": self.size,
            "read": self.readable,
            "note": self.note,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Judgement:
    """What one look at the world found: checks, protected files, the agent's todo state."""

    checks: tuple[CheckResult, ...]
    """Every check's result (protected files and poisoned checks first)."""
    todos: tuple[TodoItem, ...]
    """The agent CLI's todo list (done items too), or the loop's unfinished checklist items."""
    problems: tuple[str, ...]
    """Empty when the stop may pass."""
    transcript: TranscriptRef | None = None
    """The session's transcript, when an agent CLI's hook looked (None for the loop's gate)."""

    @property
    def stated_blocker(self) -> bool:
        """Every open item is one the agent marked blocked (and at least one is)."""
        open_items = [t for t in self.todos if t.status != "done"]
        return bool(open_items) and all(t.status == "blocked" for t in open_items)
