"""Side effects whose outcome is unknown: a key begun by a run that died and never recorded.

A tool that honours its key (``idempotent=True``) is re-issued under it (tests/worker/
test_resume.py). One that does not is asked `reconcile(key)` when it has one: the effect
happened (its answer is the call's result; the tool does not run) or did not (it runs now);
with no reconcile, or one that cannot tell, the task is escalated "outcome unknown" with the
call and the tool never runs again. Executions are counted by the tools' own logs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from donegate.errors import EffectOutcomeUnknown
from donegate.messages import ToolCall, ToolResult
from donegate.run import run
from donegate.store import StoreLedger
from donegate.store.sql import SqlStore
from donegate.tools import MemoryLedger, Tool, begin_effect, tool
from donegate.worker import Worker, submit
from tests.worker.effects import send_blind, send_checked
from tests.worker.helpers import (
    BLIND_TOOL,
    CHECKED_TOOL,
    StepModel,
    effect_counts,
    task,
    text_turn,
    tool_turn,
)

CALL = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann"})


def died_inside(store: SqlStore, workdir: Path, spec_tool: dict[str, Any], *, ran: bool) -> None:
    """A worker journaled step 1, began ``t:1:0`` and died inside the effect (`ran`: after it
    took effect, else before)."""
    submit(task("t", workdir, tools=[spec_tool]), store)
    dead = store.claim("dead-worker", 0.05)
    assert dead is not None
    store.journal(dead, turn=(1, tool_turn("send", {"to": "ann"})))
    assert StoreLedger(store, dead).begin("t:1:0", CALL, reissue=False)
    if ran:
        send_blind.function(to="ann", idempotency_key="t:1:0")
    time.sleep(0.1)


def resume(store: SqlStore) -> tuple[Worker, StepModel]:
    live = StepModel([text_turn("Sent it.")], first=2)
    worker = Worker(store, model_resolver=lambda name, what: live.model)
    return worker, live


@pytest.mark.parametrize("ran", [True, False])
def test_a_blind_effect_in_flight_escalates_and_never_runs_again(
    store: SqlStore, effect_log: Path, ran: bool
) -> None:
    died_inside(store, effect_log.parent, BLIND_TOOL, ran=ran)
    worker, live = resume(store)
    outcome = worker.run_one()
    assert outcome is not None and outcome.status == "escalated", outcome
    assert live.requests == []  # stopped before the next model call
    delivered, executed = effect_counts(effect_log)
    assert executed == ({"t:1:0": 1} if ran else {})  # never a second execution
    assert delivered == executed
    record = store.get("t")
    assert record is not None and record.status == "escalated"
    assert record.reason is not None and "\n" not in record.reason
    assert record.reason.startswith('outcome unknown: send({"to":"ann"}) under key t:1:0: ')
    assert record.reason.endswith("not run again")
    [entry] = store.escalations()
    assert entry.reason == record.reason
    assert entry.report.as_data()["outcome_unknown"] == {
        "key": "t:1:0",
        "tool": "send",
        "arguments": {"to": "ann"},
        "call": 'send({"to":"ann"})',
        "why": "an earlier run began it and died before recording it, and send neither honours "
        "its key (idempotent) nor has a reconcile",
        "attempt": 2,
    }
    assert "## Outcome unknown" in entry.report_md and '`send({"to":"ann"})`' in entry.report_md
    [effect] = store.effects("t")
    assert (effect["state"], effect["issues"]) == ("begun", 1)
    assert [r.status for r in store.runs("t")] == ["lost", "escalated"]
    [row] = store.stop_rows(since=0)
    assert (row.status, row.loop_status, row.replayed_turns) == ("escalated", "outcome_unknown", 1)


@pytest.mark.parametrize("ran", [True, False])
def test_a_reconciled_effect_runs_only_if_it_did_not_happen(
    store: SqlStore, effect_log: Path, ran: bool
) -> None:
    died_inside(store, effect_log.parent, CHECKED_TOOL, ran=ran)
    worker, live = resume(store)
    outcome = worker.run_one()
    assert outcome is not None and outcome.status == "done", outcome
    assert len(live.requests) == 1
    delivered, executed = effect_counts(effect_log)
    assert delivered == {"t:1:0": 1}  # once either way
    assert executed == {"t:1:0": 1}  # ran before the crash, or after reconcile said it had not
    [effect] = store.effects("t")
    expected = "already sent under t:1:0" if ran else "sent to ann"
    assert (effect["state"], effect["issues"], effect["result"]["content"]) == (
        "done", 1 if ran else 2, expected,
    )  # fmt: skip
    replayed = [e for e in store.evidence("t") if e.idempotency_key == "t:1:0"]
    assert [(e.executed, e.result.content) for e in replayed] == [(not ran, expected)]


def test_a_reconcile_that_cannot_tell_escalates(
    store: SqlStore, effect_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    died_inside(store, effect_log.parent, CHECKED_TOOL, ran=False)

    def down(key: str) -> None:
        raise ConnectionError("the mail API is down")

    monkeypatch.setattr("tests.worker.effects.send_checked", send_checked_with(down))
    worker, _ = resume(store)
    outcome = worker.run_one()
    assert outcome is not None and outcome.status == "escalated"
    assert outcome.reason.endswith(
        "send's reconcile could not tell (ConnectionError: the mail API is down); not run again"
    )
    assert effect_counts(effect_log) == ({}, {})


def send_checked_with(reconcile: Any) -> Tool:
    return Tool.from_function(
        send_checked.function, name="send_checked", side_effect=True, reconcile=reconcile
    )


def test_the_decorator_and_the_memory_ledger_declare_and_settle_the_same_way() -> None:
    answers: list[str] = []

    async def happened(key: str) -> str:  # an async reconcile is awaited
        answers.append(key)
        return "delivered before"

    @tool(side_effect=True, reconcile=happened)
    def mail(to: str) -> str:
        """Mail someone."""
        raise AssertionError("reconciled: must not run")

    @tool(side_effect=True, idempotent=True)
    def keyed(to: str) -> str:
        """Mail someone, deduplicated by key."""
        return "ok"

    assert (mail.idempotent, keyed.idempotent, keyed.reconcile) == (False, True, None)
    ledger = MemoryLedger()
    call = ToolCall.from_args(id="c9", name="mail", arguments={"to": "ann"})
    assert begin_effect(ledger, mail, "r:1:0", call) is None  # a first begin: run it
    result = begin_effect(ledger, mail, "r:1:0", call)  # begun, never recorded
    assert result == ToolResult(call_id="c9", name="mail", content="delivered before")
    assert answers == ["r:1:0"] and ledger.results["r:1:0"] == result
    assert begin_effect(ledger, keyed, "r:2:0", call) is None
    assert begin_effect(ledger, keyed, "r:2:0", call) is None  # idempotent: re-issued

    @tool(side_effect=True)
    def blind(to: str) -> str:
        """Mail someone, no key honoured."""
        return "sent"

    ledger.begin("blind:1:0", ToolCall.from_args(id="x", name="blind", arguments={"to": "ann"}))
    with pytest.raises(EffectOutcomeUnknown, match=r"^outcome unknown: blind\("):
        run("mail ann", model=_calls_blind(), tools=[blind], run_id="blind", ledger=ledger)


def _calls_blind() -> Any:
    from donegate.models.function import FunctionModel

    turns = iter([tool_turn("blind", {"to": "ann"}), text_turn("done")])
    return FunctionModel(lambda request: next(turns), name="function:blind")
