"""The task store on SQLite and PostgreSQL: submit, claim, fence, journal, ledger, human queue."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from donegate.errors import EffectDivergence, UserError
from donegate.messages import Ending, Message, TextPart, ToolCall, ToolResult, Turn, Usage
from donegate.records.report import EscalationReport
from donegate.results import ToolCallRecord
from donegate.store import LeaseLost, RunOutcome, StoreLedger
from donegate.store.sql import SqlStore, open_store


def spec(task_id: str, **extra: object) -> dict[str, object]:
    return {"id": task_id, "prompt": f"do {task_id}", **extra}


def test_submit_is_idempotent_on_the_client_id(store: SqlStore) -> None:
    first, created = store.submit("a", spec("a"), type="mail")
    again, created_again = store.submit("a", spec("a"), type="mail")
    assert (created, created_again) == (True, False)
    assert again == first
    assert first.status == "pending" and first.type == "mail" and first.attempts == 0
    with pytest.raises(UserError, match="'a' was already submitted with a different spec"):
        store.submit("a", spec("a", prompt="something else"), type="mail")
    assert store.get("a") == first  # nothing stored was lost


def test_claims_are_exclusive_and_oldest_first(store: SqlStore) -> None:
    for name in ("one", "two"):
        store.submit(name, spec(name), type=None)
    first = store.claim("w1", 30)
    second = store.claim("w2", 30)
    assert first is not None and second is not None
    assert (first.task_id, second.task_id) == ("one", "two")
    assert (first.epoch, first.attempt, first.worker_id) == (1, 1, "w1")
    assert store.claim("w3", 30) is None
    record = store.get("one")
    assert record is not None
    assert (record.status, record.lease_owner, record.attempts) == ("running", "w1", 1)


def test_concurrent_claimers_never_share_a_task(store: SqlStore) -> None:
    for i in range(60):
        store.submit(f"t{i:02}", spec(f"t{i:02}"), type=None)
    claimed: list[str] = []
    lock = threading.Lock()

    def work(worker: str) -> None:
        while (lease := store.claim(worker, 30)) is not None:
            with lock:
                claimed.append(lease.task_id)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == [f"t{i:02}" for i in range(60)]


def test_an_expired_lease_is_reclaimed_and_the_old_holder_is_fenced_out(store: SqlStore) -> None:
    now = [time.time()]
    store.clock = lambda: now[0]  # the store's own clock: no race with the machine's load
    store.submit("t", spec("t"), type=None)
    old = store.claim("w1", 0.05)
    assert old is not None
    assert store.claim("w2", 30) is None  # not expired yet
    now[0] += 0.1
    new = store.claim("w2", 30)
    assert new is not None and new.epoch == old.epoch + 1 and new.attempt == 2
    assert [r.status for r in store.runs("t")] == ["lost", "running"]
    call = ToolCall.from_args(id="c1", name="send", arguments={})
    with pytest.raises(LeaseLost):
        store.append_messages(old, 1, [Message.user("late")])
    with pytest.raises(LeaseLost):
        store.effect_begin(old, "t:1:0", call)
    with pytest.raises(LeaseLost):
        store.finish(old, RunOutcome(status="done"))
    assert store.heartbeat([old, new], 30) == {"t"}
    store.finish(new, RunOutcome(status="done", reason="ok"))
    record = store.get("t")
    assert record is not None and record.status == "done" and record.lease_owner is None


def test_heartbeats_keep_a_lease(store: SqlStore) -> None:
    now = [time.time()]
    store.clock = lambda: now[0]
    store.submit("t", spec("t"), type=None)
    lease = store.claim("w1", 0.3)
    assert lease is not None
    for _ in range(4):
        now[0] += 0.2
        assert store.heartbeat([lease], 0.3) == set()
    now[0] += 0.2  # 1.0 s after the claim, 0.2 s after the last heartbeat
    assert store.claim("w2", 30) is None
    now[0] += 0.2
    assert store.claim("w2", 30) is not None  # no heartbeat for 0.4 s: the lease ran out


def test_the_transcript_is_journaled_step_by_step(store: SqlStore) -> None:
    store.submit("t", spec("t", checklist=["send", "log"]), type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    call = ToolCall.from_raw(id="c1", name="send", arguments_raw='{"to": "ann"}')
    result = ToolResult(call_id="c1", name="send", content="sent")
    first = [Message.system("sys"), Message.user("go"), Message(role="assistant", parts=(call,))]
    store.append_messages(lease, 1, first)
    evidence = ToolCallRecord(
        step=1, call=call, result=result, executed=True, idempotency_key="t:1:0"
    )
    store.append_messages(
        lease, 1, [Message.tool_results([result])], [evidence], [("send", "done", "")]
    )
    assert store.transcript(lease.run_id) == [*first, Message.tool_results([result])]
    assert store.evidence("t") == [evidence]
    assert store.checklist("t") == [("log", "open", ""), ("send", "done", "")]


def test_the_effects_ledger_replays_results_and_reissues_begun_calls(store: SqlStore) -> None:
    store.submit("t", spec("t"), type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    ledger = StoreLedger(store, lease)
    call = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann"})
    assert ledger.lookup("t:1:0", call) is None
    ledger.begin("t:1:0", call)
    assert ledger.lookup("t:1:0", call) is None  # begun, not done: must be re-issued
    ledger.begin("t:1:0", call)  # the re-issue, same key
    result = ToolResult(call_id="c1", name="send", content="sent")
    ledger.record("t:1:0", result)
    assert ledger.lookup("t:1:0", call) == result
    assert ledger.replayed == ["t:1:0"]
    [row] = store.effects("t")
    assert (row["state"], row["issues"], row["call"]["arguments"]) == ("done", 2, {"to": "ann"})


def test_a_key_answers_only_the_call_it_was_begun_for(store: SqlStore) -> None:
    store.submit("t", spec("t"), type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    ledger = StoreLedger(store, lease)
    ann = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann", "cc": ["x", "y"]})
    same = ToolCall.from_raw(
        id="other-id", name="send", arguments_raw='{"cc":["x","y"],"to":"ann"}'
    )
    bob = ToolCall.from_args(id="c1", name="send", arguments={"to": "bob", "cc": ["x", "y"]})
    renamed = ToolCall.from_args(id="c1", name="page", arguments={"to": "ann", "cc": ["x", "y"]})
    ledger.begin("t:1:0", ann)
    for other in (bob, renamed):  # begun for ann: neither re-issued nor answered for another
        with pytest.raises(EffectDivergence) as info:
            ledger.begin("t:1:0", other)
        assert info.value.key == "t:1:0" and '"to":"ann"' in info.value.recorded
        assert "\n" not in str(info.value)
        with pytest.raises(EffectDivergence):
            ledger.lookup("t:1:0", other)
    ledger.begin("t:1:0", same)  # ids differ between responses; the call is the same
    ledger.record("t:1:0", ToolResult(call_id="c1", name="send", content="sent to ann"))
    with pytest.raises(EffectDivergence, match="t:1:0: the ledger holds send"):
        ledger.lookup("t:1:0", bob)
    result = ledger.lookup("t:1:0", same)
    assert result is not None and result.content == "sent to ann"
    [row] = store.effects("t")
    assert (row["state"], row["issues"], row["call"]["arguments"]["to"]) == ("done", 2, "ann")


def test_a_batch_is_looked_up_in_one_write_and_answered_call_by_call(store: SqlStore) -> None:
    store.submit("t", spec("t"), type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    ann, bob, cat = (
        ToolCall.from_args(id=f"c{i}", name="send", arguments={"to": who})
        for i, who in enumerate(("ann", "bob", "cat"))
    )
    first = StoreLedger(store, lease)
    assert first.lookup("t:1:0", ann) is None and first.begin("t:1:0", ann)
    sent = ToolResult(call_id="c0", name="send", content="sent to ann")
    first.record("t:1:0", sent)
    assert first.lookup("t:1:2", cat) is None  # begun for cat, never recorded
    commits: list[object] = []
    count = commits.append  # one bound method, so that it can be removed
    sa.event.listen(store._db.engine, "commit", count)
    try:
        ledger = StoreLedger(store, lease)
        ledger.lookup_batch([("t:1:0", ann), ("t:1:1", bob), ("t:1:2", bob)])
        assert len(commits) == 1  # three keys, one write
        assert ledger.lookup("t:1:0", ann) == sent and ledger.replayed == ["t:1:0"]
        assert ledger.lookup("t:1:1", bob) is None and ledger.begin("t:1:1", bob)
        with pytest.raises(EffectDivergence, match="t:1:2"):  # held for cat, asked for bob
            ledger.lookup("t:1:2", bob)
        assert len(commits) == 1  # each call was answered from the batch's write
        assert ledger.lookup("t:1:1", bob) is None  # asked again: read again (begun, not done)
        assert len(commits) == 2
    finally:
        sa.event.remove(store._db.engine, "commit", count)
    states = {row["key"]: row["state"] for row in store.effects("t")}
    assert states == {"t:1:0": "done", "t:1:1": "begun", "t:1:2": "begun"}


def test_turns_are_journaled_by_step_and_replayed_per_generation(store: SqlStore) -> None:
    store.submit("t", spec("t"), type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    call = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann"})
    first = Turn(
        message=Message(role="assistant", parts=(call,)),
        ending=Ending.TOOL_USE,
        usage=Usage(input_tokens=7, output_tokens=3),
    )
    cut = Turn(
        message=Message(role="assistant", parts=(TextPart(text="Sen"),)),
        ending=Ending.TRUNCATED,
        raw_reason="max_tokens",
    )
    prompt = [(0, Message.system("sys")), (0, Message.user("go"))]
    store.journal(lease, turn=(1, first), messages=prompt)
    store.journal(lease, turn=(2, cut), messages=[(1, first.message)])
    assert store.turns("t", 0) == [first, cut]
    assert store.turns("t", 1) == []  # a new generation starts afresh
    assert store.transcript(lease.run_id) == [m for _, m in prompt] + [first.message]
    with pytest.raises(sa.exc.IntegrityError):  # a step is journaled once
        store.journal(lease, turn=(2, cut))
    store.cancel("t")
    with pytest.raises(LeaseLost):
        store.journal(lease, turn=(3, first))
    assert len(store.turns("t", 0)) == 2


def test_cancel_fences_a_running_worker(store: SqlStore) -> None:
    store.submit("t", spec("t"), type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    assert store.cancel("t", "not needed").status == "cancelled"
    with pytest.raises(LeaseLost):
        store.finish(lease, RunOutcome(status="done"))
    with pytest.raises(UserError, match="already ended cancelled"):
        store.cancel("t")
    with pytest.raises(UserError, match="no task 'nope'"):
        store.cancel("nope")


def test_retry_starts_a_new_generation(store: SqlStore) -> None:
    store.submit("t", spec("t"), type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    with pytest.raises(UserError, match="only failed, escalated or cancelled"):
        store.retry("t")
    store.finish(lease, RunOutcome(status="failed", reason="truncated"))
    record = store.retry("t", instructions="use the backup server")
    assert (record.status, record.generation, record.attempts) == ("pending", 1, 0)
    again = store.claim("w", 30)
    assert again is not None
    assert (again.generation, again.instructions) == (1, "use the backup server")


def test_escalations_are_resolved_or_requeued(store: SqlStore) -> None:
    left = {"left": {"open_items": [{"item": "tests", "status": "open"}]}}
    for name in ("a", "b"):
        store.submit(name, spec(name), type="ops")
        lease = store.claim("w", 30)
        assert lease is not None
        store.finish(
            lease,
            RunOutcome(
                status="escalated",
                reason="checks still fail",
                report=EscalationReport.from_data(left),
                report_md="# stuck",
            ),
        )
    first, second = store.escalations()
    assert (first.task_id, first.reason, first.report.as_data()) == (
        "a",
        "checks still fail",
        left,
    )
    done = store.resolve(first.id, note="fixed by hand")
    assert (done.status, done.note) == ("resolved", "fixed by hand")
    requeued = store.resolve(second.id, requeue=True, instructions="skip the flaky test")
    assert requeued.status == "requeued"
    task = store.get("b")
    assert task is not None
    assert (task.status, task.generation, task.instructions) == (
        "pending", 1, "skip the flaky test",
    )  # fmt: skip
    assert store.escalations() == []
    assert len(store.escalations(status=None)) == 2
    with pytest.raises(UserError, match="already resolved"):
        store.resolve(first.id)
    with pytest.raises(UserError, match="only go with --requeue"):
        store.resolve(second.id, instructions="x")


def test_a_task_whose_workers_keep_dying_is_escalated(store: SqlStore) -> None:
    store.submit("t", spec("t"), type="flaky", max_attempts=2)
    for _ in range(2):
        assert store.claim("w", 0.01) is not None
        time.sleep(0.03)
    assert store.claim("w", 30) is None
    task = store.get("t")
    assert task is not None and task.status == "escalated"
    [entry] = store.escalations()
    assert "lost 2 times" in entry.reason
    [row] = store.stop_rows(since=0)
    assert (row.status, row.task_type) == ("escalated", "flaky")


def test_release_requeues_with_a_delay_then_fails(store: SqlStore) -> None:
    store.submit("t", spec("t"), type=None, max_attempts=2)
    lease = store.claim("w", 30)
    assert lease is not None
    store.release(lease, "worker error: boom", delay_s=0.2)
    assert store.claim("w", 30) is None  # backing off
    time.sleep(0.25)
    lease = store.claim("w", 30)
    assert lease is not None
    store.release(lease, "worker error: boom again")
    task = store.get("t")
    assert task is not None and (task.status, task.reason) == ("failed", "worker error: boom again")


def test_stop_rows_and_counts(store: SqlStore) -> None:
    for name, status in (("a", "done"), ("b", "failed")):
        store.submit(name, spec(name, checklist=["x"]), type="mail")
        lease = store.claim("w", 30)
        assert lease is not None
        store.finish(
            lease,
            RunOutcome(
                status=status,  # type: ignore[arg-type]
                ending="truncated" if status == "failed" else "complete",
                loop_status="truncated" if status == "failed" else "complete",
                model_calls=3,
                checklist=[("x", "open" if status == "failed" else "done", "")],
            ),
        )
    store.submit("c", spec("c"), type=None)
    rows = store.stop_rows(since=0)
    assert [(r.task_id, r.status, r.ending, r.open_items, r.turns) for r in rows] == [
        ("a", "done", "complete", 0, 3),
        ("b", "failed", "truncated", 1, 3),
    ]
    assert store.counts() == {"done": 1, "failed": 1, "pending": 1}
    assert store.stop_rows(since=time.time() + 10) == []


def test_reopening_keeps_everything(store_url: str) -> None:
    first = open_store(store_url)
    first.submit("t", spec("t"), type=None)
    first.close()
    second = open_store(store_url)
    assert [t.id for t in second.list_tasks()] == ["t"]
    second.close()
