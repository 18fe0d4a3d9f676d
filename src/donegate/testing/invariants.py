"""Transcript invariants of seed 004, as problem lists (empty when the transcript holds).

1. Every client tool call is answered exactly once, by a result carrying its id, after the
   assistant message that asked and before the next assistant message; call ids equal result ids
   in order (catches a missing, duplicated, misattached or early result).
2. The user's message appears exactly once, first (after any system message).
"""

from __future__ import annotations

from collections.abc import Sequence

from donegate.messages import Message

__all__ = ["call_ids", "result_ids", "transcript_problems"]


def call_ids(transcript: Sequence[Message]) -> list[str]:
    """Ids of every client tool call, in order."""
    return [c.id for m in transcript if m.role == "assistant" for c in m.tool_calls]


def result_ids(transcript: Sequence[Message]) -> list[str]:
    """Ids every tool result answers, in order."""
    return [r.call_id for m in transcript if m.role == "tool" for r in m.results]


def transcript_problems(transcript: Sequence[Message], *, prompt: str | None = None) -> list[str]:
    """What is wrong with `transcript` (an empty list when every invariant holds)."""
    problems: list[str] = []
    calls, results = call_ids(transcript), result_ids(transcript)
    if calls != results:
        problems.append(f"call ids {calls} differ from result ids {results}")
    pending: list[str] = []
    for i, m in enumerate(transcript):
        if m.role == "assistant":
            if pending:
                problems.append(f"message {i}: calls {pending} unanswered before the next turn")
            pending = [c.id for c in m.tool_calls]
        elif m.role == "tool":
            for r in m.results:
                if r.call_id not in pending:
                    problems.append(f"message {i}: result for {r.call_id!r} answers no open call")
                else:
                    pending.remove(r.call_id)
    if pending:
        problems.append(f"calls {pending} never answered")
    users = [i for i, m in enumerate(transcript) if m.role == "user"]
    first = next((i for i, m in enumerate(transcript) if m.role != "system"), None)
    if not users or users[0] != first:
        problems.append("the user message is not the first message after the system prompt")
    elif prompt is not None:
        repeats = [i for i in users if transcript[i].text == prompt]
        if len(repeats) != 1:
            problems.append(f"the user message appears {len(repeats)} times")
    return problems
