"""The embedded worker: journal per step, resume from the ledger, fencing, failures, escalation."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import cast

import pytest

from donegate.cli._store import resolve_model
from donegate.harness.spec import TaskSpecError
from donegate.messages import Ending, ErrorInfo, Message, ToolCall, ToolResult, Turn
from donegate.models.base import Model, ModelRequest
from donegate.models.function import FunctionModel
from donegate.store import StoreLedger, TaskStore
from donegate.store.sql import SqlStore
from donegate.worker import ModelResolver, Worker, submit
from donegate.worker.tasks import INSTRUCTIONS_HEADER
from tests.worker.effects import send
from tests.worker.helpers import (
    SpyStore,
    effect_counts,
    send_then_claim,
    task,
    text_turn,
    tool_turn,
)


def fixed(model: Model) -> ModelResolver:
    return lambda name, what: model


def test_submit_is_idempotent_and_a_malformed_file_is_one_line(
    store: SqlStore, tmp_path: Path
) -> None:
    first, created = submit(task("a", tmp_path), store)
    again, created_again = submit(task("a", tmp_path), store)
    assert (created, created_again, again.id) == (True, False, first.id)
    renamed, _ = submit(task("a", tmp_path), store, task_id="b")
    assert renamed.spec["id"] == "b"  # the stored spec carries the id its keys will use
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\nprompt: p\nchecks: [{nope: 1}]\n")
    with pytest.raises(TaskSpecError) as info:
        submit(bad, store)
    assert str(info.value).startswith(f"{bad}: checks[0]") and "\n" not in str(info.value)
    bad.write_text("id: [unclosed\n")
    with pytest.raises(TaskSpecError, match="not valid YAML"):
        submit(bad, store)
    assert sorted(t.id for t in store.list_tasks()) == ["a", "b"]


def test_each_turn_is_journaled_before_its_tools_run(store: SqlStore, effect_log: Path) -> None:
    submit(task("t", effect_log.parent), store)
    seen: list[list[str]] = []

    def check(n: int, request: ModelRequest) -> None:
        if n == 2:  # the first turn is stored; its step's messages ride with the second
            seen.append([t.ending.value for t in store.turns("t", 0)])

    spy = SpyStore(store)
    worker = Worker(cast(TaskStore, spy), model_resolver=fixed(send_then_claim(check)))
    outcome = worker.run_one()
    assert outcome is not None and outcome.status == "done"
    assert seen == [["tool_use"]]
    assert spy.writes == [
        ("journal+begin", (1, "t:1:0")),  # the prompt and turn 1 with the begin of its effect
        ("record", "t:1:0"),
        ("journal", 2),  # step 1's messages and evidence, and turn 2: one write per model call
        ("finish", "done"),  # with what the last step appended
    ]
    run = store.runs("t")[-1]
    assert [m.role for m in store.transcript(run.id)] == [
        "system", "user", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert [t.ending.value for t in store.turns("t", 0)] == ["tool_use", "complete"]
    assert (run.status, run.model_calls, run.replayed_calls) == ("done", 2, 0)
    delivered, executed = effect_counts(effect_log)
    assert delivered == executed == {"t:1:0": 1}


def test_a_resumed_task_never_reruns_a_recorded_effect(store: SqlStore, effect_log: Path) -> None:
    submit(task("t", effect_log.parent), store)
    dead = store.claim("dead-worker", 0.05)
    assert dead is not None
    ledger = StoreLedger(store, dead)
    call = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann"})
    ledger.begin("t:1:0", call)
    ledger.record("t:1:0", ToolResult(call_id="c1", name="send", content="sent (recorded)"))
    time.sleep(0.1)  # the dead worker's lease runs out
    worker = Worker(store, model_resolver=resolve_model)
    outcome = worker.run_one()
    assert outcome is not None and outcome.status == "done"
    assert effect_counts(effect_log) == ({}, {})  # the tool never ran again
    [evidence] = store.evidence("t")
    assert (evidence.executed, evidence.result.content) == (False, "sent (recorded)")
    assert [r.status for r in store.runs("t")] == ["lost", "done"]


def test_an_in_flight_effect_is_reissued_with_the_same_key(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    dead = store.claim("dead-worker", 0.05)
    assert dead is not None
    call = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann"})
    StoreLedger(store, dead).begin("t:1:0", call)
    send.function(to="ann", idempotency_key="t:1:0")  # it ran; the worker died before recording
    time.sleep(0.1)
    outcome = Worker(store, model_resolver=resolve_model).run_one()
    assert outcome is not None and outcome.status == "done"
    delivered, executed = effect_counts(effect_log)
    assert (delivered, executed) == ({"t:1:0": 1}, {"t:1:0": 2})
    [effect] = store.effects("t")
    assert (effect["state"], effect["issues"]) == ("done", 2)


def test_a_stale_worker_is_fenced_out_when_another_claims(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    thief: list[object] = []

    def steal(n: int, request: ModelRequest) -> None:
        if n == 1:
            time.sleep(0.15)  # no heartbeat under run_one: the 0.1 s lease runs out
            thief.append(store.claim("other-worker", 30))

    worker = Worker(store, lease_s=0.1, model_resolver=fixed(send_then_claim(steal)))
    assert worker.run_one() is None
    assert worker.stats.lost == 1 and thief and thief[0] is not None
    assert effect_counts(effect_log) == ({}, {})  # fenced before the side effect began
    record = store.get("t")
    assert record is not None and (record.status, record.lease_owner) == ("running", "other-worker")


def test_cancel_stops_a_running_task_without_recording(store: SqlStore, effect_log: Path) -> None:
    submit(task("t", effect_log.parent), store)

    def cancel(n: int, request: ModelRequest) -> None:
        if n == 1:
            store.cancel("t", "not needed any more")

    worker = Worker(store, model_resolver=fixed(send_then_claim(cancel)))
    assert worker.run_one() is None
    record = store.get("t")
    assert record is not None and (record.status, record.reason) == (
        "cancelled", "not needed any more",
    )  # fmt: skip
    assert effect_counts(effect_log) == ({}, {})


def test_heartbeats_keep_a_slow_task_leased(store: SqlStore, effect_log: Path) -> None:
    submit(task("t", effect_log.parent), store)
    rivals: list[object] = []

    def slow(n: int, request: ModelRequest) -> None:
        if n == 1:
            for _ in range(4):
                time.sleep(0.2)
                rivals.append(store.claim("rival", 30))

    worker = Worker(store, lease_s=0.3, model_resolver=fixed(send_then_claim(slow)))
    stats = worker.run(until_idle=True)
    assert stats.finished == {"done": 1} and rivals == [None] * 4
    record = store.get("t")
    assert record is not None and record.attempts == 1


def test_an_unknown_tool_or_model_fails_the_task_in_one_line(
    store: SqlStore, effect_log: Path
) -> None:
    workdir = effect_log.parent
    submit(
        task("tool", workdir, tools=[{"import": "tests.worker.nope:send", "side_effect": True}]),
        store,
    )
    submit(task("model", workdir, model="nowhere:model-x"), store)
    stats = Worker(store, model_resolver=resolve_model).run(until_idle=True)
    assert stats.finished == {"failed": 2}
    tool_task, model_task = store.get("tool"), store.get("model")
    assert tool_task is not None and model_task is not None
    assert tool_task.reason == "tool tests.worker.nope:send: no module named 'tests.worker.nope'"
    assert model_task.reason is not None and "unknown model 'nowhere:model-x'" in model_task.reason
    assert "\n" not in tool_task.reason + model_task.reason


def test_worker_errors_are_retried_with_backoff_then_fail(
    store: SqlStore, effect_log: Path
) -> None:
    store.submit("t", task("t", effect_log.parent), type="mail", max_attempts=2)

    def boom(request: ModelRequest) -> Turn:
        raise RuntimeError("provider exploded")

    model = FunctionModel(boom)
    worker = Worker(store, model_resolver=fixed(model), error_backoff_s=0.0)
    assert worker.run_one() is None
    record = store.get("t")
    assert record is not None and record.status == "pending"
    assert worker.run_one() is None
    record = store.get("t")
    assert record is not None and record.status == "failed"
    assert record.reason == "worker error: RuntimeError: provider exploded"
    assert worker.stats.errors == 2


def test_escalations_reach_people_and_requeue_with_instructions(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent, escalate=True), store)
    prompts: list[str] = []

    def capture(n: int, request: ModelRequest) -> None:
        if n == 1:
            prompts.append(request.messages[1].text)

    worker = Worker(store, model_resolver=lambda name, what: send_then_claim(capture))
    assert worker.run(until_idle=True).finished == {"escalated": 1}
    [entry] = store.escalations()
    assert entry.task_id == "t" and "never-there.txt" in entry.report_md
    assert entry.report.left.failed_checks[0].name == "file_exists: never-there.txt"
    store.resolve(entry.id, requeue=True, instructions="create never-there.txt first")
    assert worker.run(until_idle=True).finished == {"escalated": 2}
    assert INSTRUCTIONS_HEADER not in prompts[0]
    assert prompts[1].endswith(f"{INSTRUCTIONS_HEADER}\ncreate never-there.txt first")
    delivered, _ = effect_counts(effect_log)
    assert delivered == {"t:1:0": 1, "t~1:1:0": 1}  # a requeue is a new run with new keys
    assert [r.status for r in store.escalations(status=None)] == ["requeued", "open"]


def test_several_slots_share_the_queue(store: SqlStore, effect_log: Path) -> None:
    for i in range(24):
        submit(task(f"t{i:02}", effect_log.parent, escalate=i % 4 == 0), store)
    stop = threading.Event()
    stats = Worker(store, concurrency=4, model_resolver=resolve_model).run(
        stop=stop, until_idle=True
    )
    assert stats.finished == {"done": 18, "escalated": 6}
    delivered, executed = effect_counts(effect_log)
    assert delivered == executed == {f"t{i:02}:1:0": 1 for i in range(24)}
    assert store.counts() == {"done": 18, "escalated": 6}


def test_provider_faults_are_retried(store: SqlStore, effect_log: Path) -> None:
    faults = Path(__file__).parent / "data" / "faults.yaml"
    submit(task("t", effect_log.parent, model=f"script:{faults}"), store)
    outcome = Worker(store, model_resolver=resolve_model).run_one()
    assert outcome is not None and (outcome.status, outcome.model_calls) == ("done", 2)
    assert effect_counts(effect_log) == ({"t:1:0": 1}, {"t:1:0": 1})


def test_a_provider_outage_puts_the_task_back_without_repeating_effects(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    attempts: list[int] = []
    calls: list[int] = []

    def model(name: str, what: str) -> Model:
        attempts.append(1)

        def respond(request: ModelRequest) -> Turn:
            calls.append(len(attempts))
            if not any(m.role == "tool" for m in request.messages):
                return tool_turn("send", {"to": "ann"})
            if len(attempts) == 1:  # the provider is down for the whole first attempt
                return Turn(
                    message=Message(role="assistant", parts=()),
                    ending=Ending.ERROR,
                    error=ErrorInfo(status=503, message="overloaded"),
                )
            return text_turn("Sent it.")

        return FunctionModel(respond)

    worker = Worker(store, model_resolver=model, error_backoff_s=0.0)
    assert worker.run_one() is None
    record = store.get("t")
    assert record is not None and record.status == "pending"
    assert record.reason is not None and record.reason.startswith("provider_error")
    outcome = worker.run_one()
    assert outcome is not None and outcome.status == "done"
    assert effect_counts(effect_log) == ({"t:1:0": 1}, {"t:1:0": 1})  # replayed, not re-sent
    assert [r.status for r in store.runs("t")] == ["error", "done"]
    # the error turn was not journaled: the retry replayed step 1 and asked again at step 2
    assert calls == [1, 1, 2] and (outcome.model_calls, outcome.replayed_calls) == (2, 1)
