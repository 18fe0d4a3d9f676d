"""Commits per task: a task's journal, ledger and outcome writes share transactions.

A two-turn task with one side-effecting call (the worker bench's task) commits five times:
the claim; turn 1 (with the prompt) and its effect's begin, in one; the effect's result; turn 2
with step 1's messages and evidence; the outcome with its run row, stop row, the certificate's
path in the task's result and the outbox rows. Before, it was seven: turn 1 alone, a ledger
read, and the begin apart. Two side-effecting calls in one step add one commit, not two: their
begins ride with the turn in one write, and each result is its own.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import cast

import sqlalchemy as sa

from donegate.messages import Ending, Message, ToolCall, Turn
from donegate.models.base import Model, ModelRequest
from donegate.models.function import FunctionModel
from donegate.store import RunOutcome, TaskStore
from donegate.store.sql import SqlStore
from donegate.tools import tool
from donegate.worker import ModelResolver, Worker, submit
from tests.worker.helpers import (
    SEND_TOOL,
    SpyStore,
    effect_counts,
    send_then_claim,
    task,
    text_turn,
    tool_turn,
)


def fixed(model: Model) -> ModelResolver:
    return lambda name, what: model


def _caller() -> str:
    """The store method that committed (the outermost donegate.store frame)."""
    frames = [
        f
        for f in traceback.extract_stack()
        if "/donegate/store/_" in f.filename and not f.filename.endswith("_db.py")
    ]
    return frames[0].name if frames else "?"


def _run_one(store: SqlStore, model: Model) -> tuple[RunOutcome | None, list[str]]:
    """Run one task with `model`; its outcome, and the store method behind each commit."""
    commits: list[str] = []

    def on_commit(conn: object) -> None:
        commits.append(_caller())

    sa.event.listen(store._db.engine, "commit", on_commit)
    try:
        return Worker(store, model_resolver=fixed(model)).run_one(), commits
    finally:
        sa.event.remove(store._db.engine, "commit", on_commit)


def test_a_task_with_one_side_effect_commits_five_times(store: SqlStore, effect_log: Path) -> None:
    submit(task("t", effect_log.parent), store)
    outcome, commits = _run_one(store, send_then_claim())
    assert outcome is not None and outcome.status == "done", outcome
    assert commits == ["claim", "effect_open", "effect_record", "journal", "finish"], commits
    delivered, executed = effect_counts(effect_log)
    assert delivered == executed == {"t:1:0": 1}
    [row] = store.stop_rows(since=0)
    assert row.status == "done" and row.turns == 2
    [run] = store.runs("t")
    assert (run.status, run.model_calls) == ("done", 2)
    assert [t.ending.value for t in store.turns("t", 0)] == ["tool_use", "complete"]


_PEEKING: list[SqlStore] = []
_SEEN: list[list[str]] = []


@tool
def peek() -> str:
    """A tool without side effects: it notes which turns are journaled while it runs."""
    _SEEN.append([t.ending.value for t in _PEEKING[0].turns("t", 0)])
    return "looked"


def _turns(*turns: Turn) -> Callable[[ModelRequest], Turn]:
    answers = iter(turns)
    return lambda request: next(answers)


def test_a_turn_without_an_effect_is_journaled_before_its_tools_run(
    store: SqlStore, effect_log: Path
) -> None:
    peek_tool = {"import": "tests.worker.test_transactions:peek", "side_effect": False}
    submit(task("t", effect_log.parent, tools=[SEND_TOOL, peek_tool]), store)
    _PEEKING[:] = [store]
    _SEEN.clear()
    model = FunctionModel(_turns(tool_turn("peek", {}), text_turn("Looked.")), name="function:p")
    outcome = Worker(store, model_resolver=fixed(model)).run_one()
    assert outcome is not None and outcome.status == "done", outcome
    assert _SEEN == [["tool_use"]]  # written at its model call, not after its tool


def _send_both() -> FunctionModel:
    calls = (
        ToolCall.from_args(id="c1", name="send", arguments={"to": "ann"}),
        ToolCall.from_args(id="c2", name="send", arguments={"to": "bob"}),
    )
    both = Turn(message=Message(role="assistant", parts=calls), ending=Ending.TOOL_USE)
    return FunctionModel(_turns(both, text_turn("Sent both.")), name="function:two")


def test_effects_of_one_step_begin_with_their_turn_in_one_write(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    spy = SpyStore(store)
    outcome = Worker(cast(TaskStore, spy), model_resolver=fixed(_send_both())).run_one()
    assert outcome is not None and outcome.status == "done", outcome
    opens = [w for w in spy.writes if w[0].startswith("journal+begin")]
    assert opens == [("journal+begins", (1, ("t:1:0", "t:1:1")))], spy.writes
    records = sorted(cast(str, key) for kind, key in spy.writes if kind == "record")
    assert records == ["t:1:0", "t:1:1"], spy.writes
    delivered, executed = effect_counts(effect_log)
    assert delivered == executed == {"t:1:0": 1, "t:1:1": 1}
    assert [t.ending.value for t in store.turns("t", 0)] == ["tool_use", "complete"]


def test_a_task_with_two_side_effects_in_one_step_commits_six_times(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    outcome, commits = _run_one(store, _send_both())
    assert outcome is not None and outcome.status == "done", outcome
    assert commits == [
        "claim", "effects_open", "effect_record", "effect_record", "journal", "finish",
    ], commits  # fmt: skip
