"""`AsyncWorker`: the worker holding many tasks in flight as coroutines on one event loop.

A real agent task spends nearly all its life waiting on the model: a thread per task then costs
a stack, a switch per wake-up and a share of the GIL that grows with the count (the thread
worker's CPU per task grew 2.4x from 200 to 1,000 in flight). Here each task is a coroutine
running `arun_task`, the loop's async driver: a model call is awaited (`Model.arequest`), so
thousands of tasks wait side by side for the price of their frames. Everything else is the
thread worker's, unchanged: the lease, the journal written before any tool of a step runs, the
effects ledger, the outcome written under the lease, the heartbeat and outbox threads, the
faults that stop it (`Worker.halt`), and `until_idle`.

Threads are kept where they pay: the gate's checks and verifier, and tool calls made side by
side, run on the default executor (`drive_async`); the heartbeat keeps its own thread, so a
busy event loop never lets a lease expire. The store's writes are made on the loop's thread:
they are short, and the store serialises them anyway.

1. While fewer than `concurrency` tasks are in hand (and `max_tasks` allows), claim one and
   start its coroutine; when none is claimable, wait `poll_s` or until a task ends.
2. Each coroutine is `Worker.execute` with `arun_task` in place of `run_task`.
3. With `until_idle`, stop once nothing is claimable, nothing is in hand and the store holds no
   task waiting on this worker; on `stop` or a fault, claim nothing more and let the tasks in
   hand end (a fault halts each at its next event and puts it back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from donegate.errors import UserError
from donegate.harness.runner import arun_task
from donegate.store import Lease, RunOutcome
from donegate.worker.runsetup import RunSetup
from donegate.worker.service import Worker, WorkerStats, _Budget, _fault, _unexpected

if TYPE_CHECKING:
    from donegate.worker.journal import JournalSink

__all__ = ["AsyncWorker"]

log = logging.getLogger("donegate.worker")


class AsyncWorker(Worker):
    """A `Worker` whose tasks are coroutines on one event loop; `concurrency` may be thousands."""

    max_threads = 64
    """Threads for the blocking parts of runs (checks, tools called side by side)."""

    def run(
        self,
        *,
        stop: threading.Event | None = None,
        until_idle: bool = False,
        max_tasks: int | None = None,
    ) -> WorkerStats:
        """Work until `stop` is set (or, with `until_idle`, until no task is runnable)."""
        if max_tasks is not None and (
            isinstance(max_tasks, bool) or not isinstance(max_tasks, int) or max_tasks < 1
        ):
            raise UserError(f"max_tasks must be a whole number >= 1, got {max_tasks!r}")
        stop = stop or threading.Event()
        self.store.keep_reserve()
        beat = self.start_heartbeat(stop)
        courier = None
        if self.deliver_outbox and hasattr(self.store, "outbox_due"):
            courier = self.courier()
            courier_thread = courier.start(stop)
        try:
            asyncio.run(self._serve(stop, until_idle, _Budget(max_tasks)))
            if courier is not None and until_idle and self.fault is None:
                courier.drain()
        finally:
            stop.set()
            beat.join()
            if courier is not None:
                courier_thread.join()
        return self.stats

    async def _serve(self, stop: threading.Event, until_idle: bool, budget: _Budget) -> None:
        # the gate's checks and side-by-side tool calls wait on programs: enough threads that
        # a wave of claims is not judged six at a time (the default executor's size here)
        threads = min(self.concurrency, self.max_threads)
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(threads, thread_name_prefix="donegate-run")
        )
        running: set[asyncio.Task[RunOutcome | None]] = set()
        ended = asyncio.Event()

        def done(task: asyncio.Task[RunOutcome | None]) -> None:
            running.discard(task)
            ended.set()

        while not stop.is_set() and self.fault is None:
            if len(running) >= self.concurrency or not budget.take():
                if not running:
                    break  # max_tasks reached and every task ended
                await self._wait(ended, self.poll_s)
                continue
            try:
                lease = self.store.claim(self.id, self.lease_s)
                idle = lease is None and until_idle and not running and self._idle()
            except Exception as exc:
                budget.give_back()
                self.halt(_fault(exc) or _unexpected("claiming", exc))
                break
            if lease is None:
                budget.give_back()
                if idle:
                    break
                await self._wait(ended, self.poll_s)
                continue
            task = asyncio.create_task(self.aexecute(lease), name=lease.task_id)
            running.add(task)
            task.add_done_callback(done)
            await asyncio.sleep(0)  # let the new run start before the next claim
        if running:
            await asyncio.wait(running)

    @staticmethod
    async def _wait(ended: asyncio.Event, timeout: float) -> None:
        """Until a task ends or `timeout` passes."""
        ended.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ended.wait(), timeout)

    async def aexecute(self, lease: Lease) -> RunOutcome | None:
        """`Worker.execute`, awaiting the run: other tasks go on while it waits."""
        journal = self._hold(lease)
        started = time.monotonic()
        try:
            try:
                outcome = await self._arun(lease, journal, started)
            except Exception as exc:
                self._given_up(lease, exc)
                return None
            return self._record(lease, journal, outcome)
        finally:
            self._let_go(lease)

    async def _arun(self, lease: Lease, journal: JournalSink, started: float) -> RunOutcome:
        with RunSetup(self, lease, journal, started) as setup:
            setup.prepare()
            try:
                result = await arun_task(setup.task, **setup.options)
            finally:
                setup.close()
            return setup.outcome(result)
        return setup.ended
