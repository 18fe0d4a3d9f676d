"""The gate's one decision (`donegate.harness.decision.decide`), driven with values.

Both hosts take it: `CompletionGate.judge` (tests/harness/test_gate.py) and the agent-CLI hooks
(tests/harness/agents); this pins the rule itself, branch by branch.
"""

from __future__ import annotations

import pytest

from donegate.harness.decision import decide, nudge_text
from donegate.records.checklist import TodoItem
from donegate.records.judgement import Judgement
from donegate.records.status import ItemStatus


def _found(*problems: str, todos: tuple[ItemStatus, ...] = ()) -> Judgement:
    items = tuple(
        TodoItem(text=f"item {n}", status=s, raw_status=s, source="test")
        for n, s in enumerate(todos)
    )
    return Judgement(checks=(), todos=items, problems=problems)


def test_no_problem_accepts_whatever_was_spent() -> None:
    verdict = decide(_found(), spent=9, budget=1)
    assert (verdict.action, verdict.reason) == ("accept", "every gate passed")


def test_a_problem_within_the_budget_continues_with_the_nudge() -> None:
    verdict = decide(_found("failed checks: t", "open: x"), spent=1, budget=2)
    assert verdict.action == "continue"
    assert verdict.message == nudge_text(["failed checks: t", "open: x"]) == verdict.reason
    assert verdict.message.startswith("Not done yet: failed checks: t; open: x.")


def test_the_budget_spent_stops() -> None:
    verdict = decide(_found("failed checks: t"), spent=2, budget=2)
    assert verdict.action == "stop"
    assert verdict.reason == "not done after 2 continuation(s): failed checks: t"


@pytest.mark.parametrize("spent", [0, 5])
def test_a_stated_blocker_stops_before_the_budget(spent: int) -> None:
    verdict = decide(_found("open: x", todos=("blocked", "done")), spent=spent, budget=3)
    assert (verdict.action, verdict.reason) == ("stop", "the agent stated a blocker: open: x")


def test_one_open_item_beside_a_blocked_one_is_no_stated_blocker() -> None:
    verdict = decide(_found("open: x", todos=("blocked", "open")), spent=0, budget=3)
    assert verdict.action == "continue"
