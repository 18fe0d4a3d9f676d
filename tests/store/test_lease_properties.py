"""The lease state machine under random schedules: a write lands iff its lease is current.

Hypothesis drives claims, heartbeats, journal writes, finishes, cancels and the passing of
time (a fake clock the store is opened with) across a few workers and tasks, and checks every
answer against a model of who holds what.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from donegate.messages import Message
from donegate.store import Lease, LeaseLost, RunOutcome
from donegate.store.sql import open_store

LEASE_S = 10.0
TASKS = ("a", "b", "c")
WORKERS = ("w1", "w2", "w3")


class Clock:
    """The store's clock: time passes only when a rule says so."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def time(self) -> float:
        return self.now


class Leases(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.dir = tempfile.TemporaryDirectory()
        self.store = open_store(Path(self.dir.name) / "p.db", clock=self.clock.time)
        for t in TASKS:
            self.store.submit(t, {"id": t, "prompt": t}, type=None, max_attempts=100)
        self.leases: list[Lease] = []
        self.current: dict[str, tuple[int, float]] = {}  # task -> (epoch, expires)
        self.ended: set[str] = set()

    def teardown(self) -> None:
        self.store.close()
        self.dir.cleanup()

    def _valid(self, lease: Lease) -> bool:
        held = self.current.get(lease.task_id)
        return lease.task_id not in self.ended and held is not None and held[0] == lease.epoch

    @rule(worker=st.sampled_from(WORKERS))
    def claim(self, worker: str) -> None:
        runnable = [
            t
            for t in TASKS
            if t not in self.ended
            and (t not in self.current or self.current[t][1] < self.clock.now)
        ]
        lease = self.store.claim(worker, LEASE_S)
        if not runnable:
            assert lease is None
            return
        assert lease is not None and lease.task_id in runnable
        previous = self.current.get(lease.task_id, (0, 0.0))[0]
        assert lease.epoch > previous
        self.current[lease.task_id] = (lease.epoch, self.clock.now + LEASE_S)
        self.leases.append(lease)

    @rule(seconds=st.sampled_from([1.0, 4.0, 11.0]))
    def advance(self, seconds: float) -> None:
        self.clock.now += seconds

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.leases))
        lost = self.store.heartbeat([lease], LEASE_S)
        assert (lease.task_id not in lost) == self._valid(lease)
        if self._valid(lease):
            self.current[lease.task_id] = (lease.epoch, self.clock.now + LEASE_S)

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def write(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.leases))
        try:
            self.store.append_messages(lease, 1, [Message.user("step")])
            landed = True
        except LeaseLost:
            landed = False
        assert landed == self._valid(lease)

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.leases))
        valid = self._valid(lease)
        try:
            self.store.finish(lease, RunOutcome(status="done"))
            landed = True
        except LeaseLost:
            landed = False
        assert landed == valid
        if landed:
            self.ended.add(lease.task_id)

    @rule(task=st.sampled_from(TASKS))
    def cancel(self, task: str) -> None:
        if task in self.ended:
            return
        self.store.cancel(task)
        self.ended.add(task)

    @invariant()
    def statuses_match(self) -> None:
        for t in TASKS:
            record = self.store.get(t)
            assert record is not None
            if t in self.ended:
                assert record.status in ("done", "cancelled")
            elif t in self.current:
                assert record.status == "running"
                assert record.lease_epoch == self.current[t][0]


Leases.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
test_leases = Leases.TestCase
