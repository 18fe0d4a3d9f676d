"""A checklist item and an update to it: the one shape of each (the harness's checklist, the
worker's journal, reports, certificates and the hooks' todo lists carry these)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from donegate.messages import ToolCall, ToolResult
from donegate.records.status import ItemStatus

__all__ = ["CHECKLIST_TOOL", "ChecklistItem", "ChecklistUpdate", "TodoItem"]

CHECKLIST_TOOL = "update_checklist"
"""The tool name the model calls; its own calls never count as evidence for an item."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChecklistUpdate:
    """One ``update_checklist`` call's arguments, validated: the one reading of them (the tool
    applies it, the worker's journal stores what a successful call applied)."""

    item: str
    """The item's name, stripped."""
    status: ItemStatus
    """Its new status."""
    note: str = ""
    """The model's note (a ``blocked`` item's blocker)."""

    @classmethod
    def parse(cls, arguments: Mapping[str, object]) -> ChecklistUpdate:
        """Validate the tool's arguments; a `ValueError` names what is wrong."""
        item, status, note = arguments.get("item"), arguments.get("status"), arguments.get("note")
        name = item.strip() if isinstance(item, str) else ""
        if not name:
            raise ValueError("item is empty")
        known = next((s for s in ItemStatus if s == status), None)
        if known is None:
            raise ValueError(f"status must be open, done or blocked, not {status!r}")
        text = str(note or "")
        if known == "blocked" and not text.strip():
            raise ValueError("a blocked item needs a note saying what blocks it")
        return cls(item=name, status=known, note=text)

    @classmethod
    def applied(cls, call: ToolCall, result: ToolResult) -> ChecklistUpdate | None:
        """The update a successful checklist call made; None for any other call."""
        if call.name != CHECKLIST_TOOL or result.is_error:
            return None
        try:
            return cls.parse(call.arguments or {})
        except ValueError:
            return None


@dataclass(frozen=True, kw_only=True, slots=True)
class ChecklistItem:
    """One part of the task."""

    name: str
    """The item as written in the task or by the model."""
    status: ItemStatus = ItemStatus.OPEN
    """``open`` until ticked ``done``; ``blocked`` carries the blocker in `note`."""
    note: str = ""
    """The model's note with its last update."""
    since_step: int = 1
    """The model call from which evidence counts for it (when it was opened or last nudged)."""
    updated_step: int | None = None
    """The model call that last changed it (the step that ticked it, for a ``done`` item)."""
    added_by_model: bool = False
    """True for an item the model added itself."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TodoItem:
    """One item of the agent's own todo list or goal: the model's account, never proof."""

    text: str
    status: ItemStatus
    """Normalised: ``done`` (completed, cancelled), ``blocked`` (a blocker stated), ``open``."""
    raw_status: str
    """The status as the CLI stores it."""
    source: str
    """Where it was read (``claude tasks``, ``TodoWrite``, ``codex goal``, ``write_todos``)."""

    def as_data(self) -> dict[str, str]:
        """Plain values for state records and reports."""
        return {
            "text": self.text,
            "status": self.status,
            "raw_status": self.raw_status,
            "source": self.source,
        }

    @classmethod
    def read(
        cls, text: str, raw_status: object, statuses: Mapping[str, ItemStatus], source: str
    ) -> TodoItem:
        """An item as a CLI stores it: `statuses` maps its status words (others are open),
        and both strings are bounded (they come from files the agent writes)."""
        raw = str(raw_status)
        return cls(text=text[:300], status=statuses.get(raw, ItemStatus.OPEN), raw_status=raw[:40],
                   source=source)  # fmt: skip
