"""The checklist the model keeps: the task's parts, each ``open``, ``done`` or ``blocked``.

The model changes it only through the ``update_checklist(item, status, note="")`` tool; the
harness reads it at every claimed completion (open items block it) and checks each tick against
the evidence it recorded itself: an item ticked ``done`` with no executed tool call since it was
opened (or last nudged) that relates to it is *flagged* and shown to the verifier. The check is a
heuristic that feeds the verifier, never a gate on its own: a tick is the model's account.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace

from donegate.events import Event, ModelCalled
from donegate.records.checklist import CHECKLIST_TOOL, ChecklistItem, ChecklistUpdate
from donegate.records.evidence import EvidenceRecord
from donegate.records.status import ItemStatus
from donegate.tools import Tool

__all__ = ["Checklist"]

# fmt: off
_STOPWORDS = frozenset([
    "the", "and", "all", "for", "with", "that", "this", "from", "into", "each", "are", "was",
    "were", "has", "have", "its", "then", "than", "when", "what", "which", "your", "their",
    "them", "they", "any", "add", "make", "sure", "use", "using",
])
# fmt: on


class Checklist:
    """Checklist state, shared by the tool (which writes it) and the gate (which reads it)."""

    def __init__(self, items: Iterable[str] = ()) -> None:
        self._items: dict[str, ChecklistItem] = {n: ChecklistItem(name=n) for n in items}
        self._step = 0
        self._lock = threading.Lock()  # parallel tool calls run on threads

    # -- reading -------------------------------------------------------------------------------

    @property
    def items(self) -> tuple[ChecklistItem, ...]:
        """Every item, in the order they were added."""
        return tuple(self._items.values())

    def unfinished(self) -> list[ChecklistItem]:
        """Items not ``done`` (open or blocked)."""
        return [i for i in self._items.values() if i.status != "done"]

    def render(self) -> str:
        """The checklist as the model and the verifier read it."""
        if not self._items:
            return "(the checklist is empty)"
        marks = {"done": "[x]", "open": "[ ]", "blocked": "[!]"}
        lines = []
        for item in self._items.values():
            line = f"{marks[item.status]} {item.name}"
            if item.note:
                line += f" - {item.note}"
            lines.append(line)
        return "\n".join(lines)

    def as_data(self) -> list[dict[str, object]]:
        """The state as plain JSON-ready values (reports, certificates)."""
        return [
            {
                "item": i.name,
                "status": i.status,
                "note": i.note,
                "since_step": i.since_step,
                "updated_step": i.updated_step,
                "added_by_model": i.added_by_model,
            }
            for i in self._items.values()
        ]

    def unsupported(self, evidence: Sequence[EvidenceRecord]) -> list[tuple[str, str]]:
        """``(item, why)`` for each ``done`` item without supporting evidence.

        Evidence supports an item when it is an executed, successful tool call (not a checklist
        update) made between the item's `since_step` and the step that ticked it, and it
        mentions one of the item's words in its tool name, arguments or output (any such call
        counts when the item has no distinctive words).
        """
        flagged = []
        for item in self._items.values():
            if item.status != "done" or item.updated_step is None:
                continue
            window = [
                r
                for r in evidence
                if r.executed
                and not r.is_error
                and r.tool != CHECKLIST_TOOL
                and item.since_step <= r.step <= item.updated_step
            ]
            if not window:
                flagged.append((item.name, "ticked done with no tool call since it was opened"))
                continue
            words = _keywords(item.name)
            if words and not any(_mentions(r, words) for r in window):
                flagged.append(
                    (item.name, "ticked done, but no tool call since it was opened relates to it")
                )
        return flagged

    # -- writing -------------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        """An `EventSink`: follows the step number so ticks know which model call made them."""
        if isinstance(event, ModelCalled):
            self._step = event.step

    def nudged(self) -> None:
        """The gate continued the run: evidence for unfinished items counts from the next call."""
        with self._lock:
            for name, item in self._items.items():
                if item.status != "done":
                    self._items[name] = replace(item, since_step=self._step + 1)

    def update_checklist(self, item: str, status: ItemStatus, note: str = "") -> str:
        """Record progress on the task's checklist. Mark an item done only after doing it.

        Args:
            item: The item's name as listed; a new name adds the item.
            status: ``done``, ``open``, or ``blocked`` (a blocked item needs a note saying why).
            note: What was done, or the blocker.
        """
        update = ChecklistUpdate.parse({"item": item, "status": status, "note": note})
        name, status, note = update.item, update.status, update.note
        with self._lock:
            step = max(self._step, 1)
            old = self._items.get(name)
            if old is None:
                new = ChecklistItem(
                    name=name,
                    status=status,
                    note=note,
                    since_step=step,
                    updated_step=step,
                    added_by_model=True,
                )
            else:
                since = step if old.status == "done" and status != "done" else old.since_step
                new = replace(old, status=status, note=note, since_step=since, updated_step=step)
            self._items[name] = new
            return f"{'added' if old is None else 'updated'} {name!r}\n{self.render()}"

    def tool(self) -> Tool:
        """The ``update_checklist`` tool bound to this checklist (its schema computed once)."""
        return replace(_checklist_template(), function=self.update_checklist)


@functools.cache
def _checklist_template() -> Tool:
    """The ``update_checklist`` tool's schema, once per process (it is the same for all)."""
    return Tool.from_function(object.__new__(Checklist).update_checklist, name=CHECKLIST_TOOL)


def _keywords(text: str) -> set[str]:
    """The distinctive words of an item, lowercased, a plural ``s`` dropped."""
    words = set()
    for word in re.findall(r"[a-z0-9_]+", text.lower()):
        if len(word) < 3 or word in _STOPWORDS:
            continue
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return words


def _mentions(record: EvidenceRecord, words: set[str]) -> bool:
    haystack = f"{record.tool} {record.arguments_raw} {record.output}".lower()
    return any(w in haystack for w in words)
