"""The emulator's conversations: one script served each, and which one answers a request.

A request names its conversation with the ``x-donegate-conversation`` header (an index or the
script file's stem); else a conversation whose script ``prompt`` is the text of one of the
request's user messages answers (the latest such message wins, so a subagent with its own prompt
gets its own script); else the first conversation with turns left. The user texts are read only
when there is more than one conversation to choose from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from donegate.errors import UserError
from donegate.models.base import ModelRequest
from donegate.testing import _routes
from donegate.testing.player import Responder, ScriptedModel
from donegate.testing.script import describe_turn

__all__ = ["CONVERSATION_HEADER", "Conversation", "select"]

CONVERSATION_HEADER = "x-donegate-conversation"
"""Request header naming the conversation (an index or a script file's stem) to answer from."""


@dataclass(kw_only=True, slots=True)
class Conversation:
    """One script being served: its player, and a handler per wire format asked for."""

    name: str
    """The script file's stem, or ``conversation<N>``."""
    model: ScriptedModel
    """The player; its `requests` are every request this conversation answered."""
    handlers: dict[str, Responder] = field(default_factory=dict)

    @property
    def used(self) -> bool:
        """True once every turn has been served."""
        return self.model.calls >= len(self.model.turns)

    def status(self, index: int) -> dict[str, Any]:
        """The turn count for ``/_donegate/status``."""
        unused = self.model.unused_turns
        first = len(self.model.turns) - len(unused)
        return {
            "index": index,
            "name": self.name,
            "source": self.model.source,
            "turns": len(self.model.turns),
            "served": self.model.calls,
            "unused": [
                f"turns[{first + i}]: {describe_turn(t, self.model.faults.get(first + i))}"
                for i, t in enumerate(unused)
            ],
            "errors": [str(e) for e in self.model.errors],
            "warnings": list(self.model.warnings),
        }


def select(
    convs: Sequence[Conversation], wanted: str | None, request: ModelRequest | None = None
) -> tuple[int, Conversation]:
    """The conversation to answer from: by `wanted` (the header), by prompt, else in order."""
    if not convs:
        raise UserError("no script loaded: start the emulator with a script, or call load()")
    if wanted is not None:
        wanted = wanted.strip()
        if wanted.isdigit() and int(wanted) < len(convs):
            return int(wanted), convs[int(wanted)]
        for i, conv in enumerate(convs):
            if conv.name == wanted:
                return i, conv
        names = ", ".join(f"{i} ({c.name})" for i, c in enumerate(convs))
        raise UserError(f"{CONVERSATION_HEADER}: no conversation {wanted!r}; have {names}")
    candidates = list(enumerate(convs))
    if len(convs) > 1 and request is not None:  # one conversation answers all: no reading
        said = _routes.user_texts(request)
        where = {text: n for n, text in enumerate(said)}  # said twice: its latest place
        prompted = [(where[p], i, c) for i, c in candidates if (p := _prompt(c)) in where]
        if prompted:
            latest = max(n for n, _, _ in prompted)
            candidates = [(i, c) for n, i, c in prompted if n == latest]
    for i, conv in candidates:
        if not conv.used:
            return i, conv
    return candidates[-1]  # every candidate used: the last one reports the extra call


def _prompt(conv: Conversation) -> str | None:
    script = conv.model.script
    return script.prompt.strip() if script is not None and script.prompt else None
