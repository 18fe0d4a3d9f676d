"""Resume from the journal: journaled turns answer a resumed run's first model calls.

Each test kills a worker mid-run (in process: `Killed` escapes the worker without giving the
task back, like SIGKILL) and resumes the task with a live model that fails the test if it is
asked for a step the journal holds. The model of a resumed run would answer differently if it
were asked again: that is the case replay exists for.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from donegate.cli._store import resolve_model
from donegate.messages import Message, ToolCall, ToolResult
from donegate.models.base import Model, ModelRequest
from donegate.store import StoreLedger
from donegate.store.sql import SqlStore
from donegate.testing.player import ScriptedModel
from donegate.testing.script import load_script, parse_script
from donegate.worker import ModelResolver, Worker, submit
from tests.worker.effects import send
from tests.worker.helpers import (
    DATA,
    Killed,
    StepModel,
    effect_counts,
    task,
    text_turn,
    tool_turn,
    truncated_turn,
)


def fixed(model: Model) -> ModelResolver:
    return lambda name, what: model


def killed_at(store: SqlStore, script: StepModel) -> None:
    """Run the task until `script` kills the worker; its lease is left to run out."""
    with pytest.raises(Killed):
        Worker(store, lease_s=0.1, model_resolver=fixed(script.model)).run_one()
    time.sleep(0.15)


def test_a_resumed_task_replays_journaled_turns_instead_of_calling_the_model(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    first = StepModel(
        [
            tool_turn("send", {"to": "ann"}, "c1"),
            tool_turn("send", {"to": "cy"}, "c2"),
            Killed(),  # dies waiting for the third answer; two effects are done
        ]
    )
    killed_at(store, first)
    resumed = StepModel([text_turn("Sent both.")], first=3)
    outcome = Worker(store, model_resolver=fixed(resumed.model)).run_one()
    assert outcome is not None and outcome.status == "done", outcome
    assert (outcome.model_calls, outcome.replayed_calls) == (3, 2)
    [request] = resumed.requests  # one live call, for step 3, on the re-derived transcript
    assert [m.role for m in request.messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool",
    ]  # fmt: skip
    assert [r.content for m in request.messages for r in m.results] == [
        "sent to ann", "sent to cy",
    ]  # fmt: skip
    delivered, executed = effect_counts(effect_log)
    assert delivered == executed == {"t:1:0": 1, "t:2:0": 1}  # the same keys, each run once
    assert [(e.idempotency_key, e.executed) for e in store.evidence("t")] == [
        ("t:1:0", True),  # the first run's step 1 (its step 2 would have ridden with turn 3)
        ("t:1:0", False),  # replayed: answered from the ledger
        ("t:2:0", False),
    ]
    runs = store.runs("t")
    assert [(r.status, r.model_calls, r.replayed_calls) for r in runs] == [
        ("lost", 0, 0),
        ("done", 3, 2),
    ]
    assert [t.ending.value for t in store.turns("t", 0)] == ["tool_use", "tool_use", "complete"]
    assert [m.role for m in store.transcript(runs[-1].id)] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    [row] = store.stop_rows(since=0)
    assert (row.status, row.turns, row.replayed_turns) == ("done", 3, 2)
    record = store.get("t")
    assert record is not None and record.result is not None
    assert record.result["replayed_calls"] == 2


def test_an_in_flight_effect_is_reissued_as_the_journaled_call(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    dead = store.claim("dead-worker", 0.05)
    assert dead is not None
    call = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann"})
    turn = tool_turn("send", {"to": "ann"})
    store.journal(dead, turn=(1, turn))
    StoreLedger(store, dead).begin("t:1:0", call)
    send.function(to="ann", idempotency_key="t:1:0")  # it ran; the worker died before recording
    time.sleep(0.1)
    # Asked for step 1 again, this model would now send to bob under t:1:0; it is not asked.
    resumed = StepModel([text_turn("Sent it.")], first=2)
    outcome = Worker(store, model_resolver=fixed(resumed.model)).run_one()
    assert outcome is not None and outcome.status == "done", outcome
    assert len(resumed.requests) == 1 and outcome.replayed_calls == 1
    delivered, executed = effect_counts(effect_log)
    assert (delivered, executed) == ({"t:1:0": 1}, {"t:1:0": 2})
    assert effect_log.read_text() == "t:1:0 ann\n"
    [effect] = store.effects("t")
    assert (effect["state"], effect["issues"], effect["call"]["arguments"]) == (
        "done", 2, {"to": "ann"},
    )  # fmt: skip


def test_a_truncated_then_retried_step_replays_under_the_same_step_numbers(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent), store)
    first = StepModel(
        [
            tool_turn("send", {"to": "ann"}, "c1"),
            truncated_turn("I will now sen"),  # step 2: retried with a doubled output limit
            tool_turn("send", {"to": "bob"}, "c3"),  # step 3
            Killed(),
        ]
    )
    killed_at(store, first)
    assert first.requests[2].settings.max_tokens == 8192
    resumed = StepModel([text_turn("Sent both.")], first=4)
    outcome = Worker(store, model_resolver=fixed(resumed.model)).run_one()
    assert outcome is not None and outcome.status == "done", outcome
    assert (outcome.model_calls, outcome.replayed_calls) == (4, 3)
    [request] = resumed.requests
    assert request.settings.max_tokens == 8192  # the replayed truncation doubled it again
    assert [t.ending.value for t in store.turns("t", 0)] == [
        "tool_use", "truncated", "tool_use", "complete",
    ]  # fmt: skip
    delivered, executed = effect_counts(effect_log)
    assert delivered == executed == {"t:1:0": 1, "t:3:0": 1}  # step 3's key, not step 2's


def test_a_call_that_diverges_from_its_key_fails_the_task_and_runs_nothing(
    store: SqlStore, effect_log: Path
) -> None:
    """A journal without turns (written before they were journaled, say): the live model asks
    another call at step 1 than the one its key holds, recorded or in flight."""
    for name in ("recorded", "in-flight"):
        submit(task(name, effect_log.parent), store)
        # this task by name: the first one's 0.05 s lease may already have run out on a busy
        # machine, and a plain claim would hand it out again
        dead = store.claim_task(name, "dead-worker", 0.05)
        assert dead is not None and dead.task_id == name
        call = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann"})
        ledger = StoreLedger(store, dead)
        ledger.begin(f"{name}:1:0", call)
        if name == "recorded":
            ledger.record(f"{name}:1:0", ToolResult(call_id="c1", name="send", content="sent"))
    time.sleep(0.1)
    bob = StepModel([tool_turn("send", {"to": "bob"})])
    worker = Worker(store, model_resolver=lambda name, what: StepModel(bob.turns).model)
    assert worker.run(until_idle=True).finished == {"failed": 2}
    for name in ("recorded", "in-flight"):
        record = store.get(name)
        assert record is not None and record.status == "failed"
        assert record.reason is not None and "\n" not in record.reason
        assert record.reason.startswith(f"effect {name}:1:0: the ledger holds send(")
        assert '{"to":"ann"}' in record.reason and '{"to":"bob"}' in record.reason
        assert [r.status for r in store.runs(name)] == ["lost", "failed"]
        [effect] = store.effects(name)
        assert effect["issues"] == 1 and effect["call"]["arguments"] == {"to": "ann"}
    assert effect_counts(effect_log) == ({}, {})  # nothing ran under a reused key
    assert sorted(r.status for r in store.stop_rows(since=0)) == ["failed", "failed"]


def test_a_script_player_resumes_after_the_turns_the_journal_played(
    store: SqlStore, effect_log: Path
) -> None:
    """A player answers by position: it is told which requests the journal answered, retried
    error turns included, so the resumed run goes on with the script's next turn."""
    faults = DATA / "faults.yaml"  # 429, 500, send (step 1); 503, text (step 2)
    submit(task("t", effect_log.parent, model=f"script:{faults}"), store)
    dead = store.claim("dead-worker", 0.05)
    assert dead is not None
    sent = load_script(faults).turns[2]
    store.journal(dead, turn=(1, sent))
    call = ToolCall.from_args(id="x", name="send", arguments={"to": "ann"})
    StoreLedger(store, dead).begin("t:1:0", call)
    StoreLedger(store, dead).record("t:1:0", ToolResult(call_id="x", name="send", content="sent"))
    time.sleep(0.1)
    players: list[ScriptedModel] = []

    def resolve(name: str, what: str) -> Model:
        model = resolve_model(name, what)
        assert isinstance(model, ScriptedModel)
        players.append(model)
        return model

    outcome = Worker(store, model_resolver=resolve).run_one()
    assert outcome is not None and outcome.status == "done", outcome
    assert (outcome.model_calls, outcome.replayed_calls) == (2, 1)
    [player] = players
    assert player.calls == 5 and player.unused_turns == ()  # 3 played by the journal, 2 live
    assert effect_counts(effect_log) == ({}, {})


def test_a_player_counts_the_fault_and_error_turns_a_replayed_step_retried() -> None:
    send_ann = {"tool_call": "send", "args": {"to": "ann"}}
    script = parse_script(
        {
            "prompt": "p",
            "tools": {"send": {"returns": "sent", "side_effect": True}},
            "turns": [
                {"delay": 1.5, **send_ann},  # a timeout at once without HTTP: retried
                send_ann,  # what step 1 returned, and the journal holds
                {"http_error": 503, "message": "busy"},  # retried by step 2
                {"text": "Sent."},
            ],
        }
    )
    request = ModelRequest(model="m", messages=(Message.user("p"),))
    player = ScriptedModel(script)
    player.replayed(request, script.turns[1])
    assert player.calls == 2
    assert player.request(request).text == "Sent."
    assert player.unused_turns == ()
    stray = ScriptedModel(script)
    stray.replayed(request, text_turn("not in this script"))
    assert stray.calls == 1  # counted as one call; the player stays strict about the rest


def test_a_new_generation_does_not_replay_the_old_one(store: SqlStore, effect_log: Path) -> None:
    submit(task("t", effect_log.parent, escalate=True), store)
    first = StepModel([tool_turn("send", {"to": "ann"}), text_turn("Done.")])
    assert Worker(store, model_resolver=fixed(first.model)).run_one() is not None
    [entry] = store.escalations()
    store.resolve(entry.id, requeue=True, instructions="try again")
    again = StepModel([tool_turn("send", {"to": "ann"}), text_turn("Done.")])
    outcome = Worker(store, model_resolver=fixed(again.model)).run_one()
    assert outcome is not None and outcome.replayed_calls == 0 and len(again.requests) == 2
    assert len(store.turns("t", 0)) == len(store.turns("t", 1)) == 2
    delivered, _ = effect_counts(effect_log)
    assert delivered == {"t:1:0": 1, "t~1:1:0": 1}
