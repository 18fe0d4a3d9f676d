"""The gate's one decision, for both hosts: accept a claim, continue with a nudge, or stop.

`decide` holds the rule every completion gate follows once it has looked (`Judgement`):
```
no problems                         -> accept
every open item is a stated blocker -> stop (a person decides)
continuations spent < budget        -> continue, with the nudge naming the problems
otherwise                           -> stop (not done after the budget)
```
Its two hosts keep the count differently and nothing else: `CompletionGate.judge` (the loop's
gate) in memory, the agent-CLI hooks (`donegate.harness.agents.core`) in their signed state.
Pure: no I/O, no clock, so a test drives every branch with values.
"""

from __future__ import annotations

from collections.abc import Sequence

from donegate.actions import Verdict
from donegate.records.judgement import Judgement

__all__ = ["decide", "nudge_text"]


def nudge_text(problems: Sequence[str]) -> str:
    """The continuation message for these problems."""
    return f"Not done yet: {'; '.join(problems)}. Continue, or state the blocker."


def decide(judgement: Judgement, spent: int, budget: int) -> Verdict:
    """What to tell the agent about its claim, given what the gate found and the continuations
    `spent` of its `budget` (``max_continuations``)."""
    if not judgement.problems:
        return Verdict(action="accept", reason="every gate passed")
    problems = "; ".join(judgement.problems)
    if judgement.stated_blocker:
        return Verdict(action="stop", reason=f"the agent stated a blocker: {problems}")
    if spent < budget:
        message = nudge_text(judgement.problems)
        return Verdict(action="continue", message=message, reason=message)
    return Verdict(action="stop", reason=f"not done after {spent} continuation(s): {problems}")
