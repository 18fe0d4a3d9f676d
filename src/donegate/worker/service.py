"""`Worker`: claim tasks with leases, run them behind the completion gate, record the outcome.

1. A slot (one of `concurrency` threads) claims the oldest runnable task: pending, or running
   under a lease that expired because its worker died.
2. It runs `run_task` with the store's effects ledger scoped to the lease and a `JournalSink`
   that persists each classified turn before any tool of its step runs. A task that was running
   elsewhere resumes from the journal under the same run id: its journaled turns answer the
   first model calls (no call, no cost) and the loop re-derives the transcript from them, so
   each side-effecting call comes back with the same key: recorded ones are answered from the
   ledger and never run again; one begun but not recorded is re-issued with the same key. A
   key held by a different call (`EffectDivergence`) fails the task instead.
3. A heartbeat thread extends every held lease each ``lease_s / 3``; a lease found lost marks
   its run, whose next event or write raises `LeaseLost`, so the run stops without recording.
4. The outcome (done, escalated, failed) is written under the lease. A worker error, or a
   provider that still fails after the transport's own retries (``provider_error``), puts the
   task back with a backoff (failed once its attempts are spent); a `UserError` (bad spec,
   unknown tool or model) fails the task at once with that one line. A side effect found begun
   by a dead run whose tool cannot say what became of it (`EffectOutcomeUnknown`) escalates the
   task with the call: it is never run again blindly.
5. Faults of the worker, not of the task, stop it (`Worker.fault`): the store gone or replaced
   (`StoreGone`), a full disk (`DiskFull`, or ``ENOSPC`` from any write), a store that did not
   answer for its patience (`StoreUnavailable`; the store retries with backoff until then). It
   stops claiming, every run in hand stops at its next event, and each task it held is put back
   uncharged where the store can still be written; the caller exits non-zero.
6. With `until_idle` a slot ends only when nothing is claimable and the store holds no pending
   task (a delayed retry included) and no running task under this worker's lease that is not in
   hand (a run whose outcome it has not recorded).
"""

from __future__ import annotations

import errno
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from donegate.errors import UserError
from donegate.events import EventSink
from donegate.harness.runner import run_task
from donegate.harness.spec import TaskSpec
from donegate.models.base import Model
from donegate.models.infer import infer_model
from donegate.records.status import Status, TaskStatus
from donegate.spend import load_prices
from donegate.store import (
    DiskFull,
    Lease,
    LeaseLost,
    RunOutcome,
    StoreError,
    StoreGone,
    StoreUnavailable,
    WorkerStore,
)
from donegate.worker.journal import Halted, JournalSink
from donegate.worker.outbox import Courier, Delivery, compose
from donegate.worker.runsetup import RunSetup

if TYPE_CHECKING:
    from donegate.store._outbox import OutboxStore

__all__ = ["ModelResolver", "Observer", "SinkFactory", "Worker", "WorkerStats", "default_resolver"]

log = logging.getLogger("donegate.worker")

ModelResolver = Callable[[str, str], Model]
"""``(name, what)`` -> a `Model`; `what` is ``model`` or ``verifier``, for messages."""

Observer = Callable[[str | None, RunOutcome], None]
"""Called with the task type and every recorded outcome (metrics)."""

SinkFactory = Callable[[TaskSpec, Lease], EventSink | None]
"""Builds an extra event sink per run (tracing)."""


def default_resolver(name: str, what: str) -> Model:
    """``provider:model`` through `infer_model` (``script:FILE`` needs the CLI's resolver)."""
    return infer_model(name)


@dataclass(kw_only=True)
class WorkerStats:
    """What one worker did."""

    claimed: int = 0
    """Tasks claimed."""
    finished: dict[str, int] = field(default_factory=dict)
    """Outcomes recorded, by status."""
    lost: int = 0
    """Runs abandoned because their lease was lost."""
    errors: int = 0
    """Runs given back after a worker error."""
    put_back: int = 0
    """Tasks in hand given back, uncharged, when the worker stopped on a fault."""
    stranded: int = 0
    """Tasks in hand it could not give back (the store gone or not answering); their leases
    expire and another worker resumes them."""


class Worker:
    """Runs queued tasks from a store (`WorkerStore`); several slots share one heartbeat."""

    def __init__(
        self,
        store: WorkerStore,
        *,
        concurrency: int = 1,
        lease_s: float = 30.0,
        model_resolver: ModelResolver = default_resolver,
        worker_id: str | None = None,
        poll_s: float = 0.5,
        output_dir: str | os.PathLike[str] | None = None,
        error_backoff_s: float = 5.0,
        observers: Sequence[Observer] = (),
        sink_factory: SinkFactory | None = None,
        notify: Sequence[Mapping[str, Any]] = (),
        delivery: Delivery | None = None,
        deliver_outbox: bool = True,
    ) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise UserError(f"concurrency must be a whole number >= 1, got {concurrency!r}")
        _positive("lease_s", lease_s)
        _positive("poll_s", poll_s)
        _positive("error_backoff_s", error_backoff_s, zero=True)
        self.store = store
        self.concurrency = concurrency
        self.lease_s = lease_s
        self.resolve = model_resolver
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.poll_s = poll_s
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.error_backoff_s = error_backoff_s
        self.observers = list(observers)
        self.sink_factory = sink_factory
        self.stats = WorkerStats()
        self.fault: Exception | None = None
        """Why the worker stopped on its own (a `StoreError`), else None."""
        self.notify = [dict(t) for t in notify]
        """Targets notified of every task's end, after the spec's own ``notify:``."""
        self.delivery = delivery or Delivery()
        self.deliver_outbox = deliver_outbox
        """Run a `Courier` beside the slots (the outbox of the whole store, not only ours)."""
        self._held: dict[str, tuple[Lease, JournalSink]] = {}
        self._lock = threading.Lock()

    # -- the service ---------------------------------------------------------------------------

    def run(
        self,
        *,
        stop: threading.Event | None = None,
        until_idle: bool = False,
        max_tasks: int | None = None,
    ) -> WorkerStats:
        """Work until `stop` is set (or, with `until_idle`, until no task is runnable).

        Check `fault` afterwards: set when the worker stopped on a fault rather than by
        `stop`, idleness or `max_tasks`.
        """
        if max_tasks is not None and (
            isinstance(max_tasks, bool) or not isinstance(max_tasks, int) or max_tasks < 1
        ):
            raise UserError(f"max_tasks must be a whole number >= 1, got {max_tasks!r}")
        stop = stop or threading.Event()
        budget = _Budget(max_tasks)
        load_prices()  # the run path's slow import, paid before the first claim, not in a lease
        self.store.keep_reserve()  # disk for putting tasks back should the disk fill
        beat = self.start_heartbeat(stop)
        courier = None
        if self.deliver_outbox and hasattr(self.store, "outbox_due"):
            courier = self.courier()
            courier_thread = courier.start(stop)
        slots = [
            threading.Thread(target=self._slot, args=(stop, until_idle, budget), daemon=True)
            for _ in range(self.concurrency)
        ]
        for t in slots:
            t.start()
        try:
            for t in slots:
                while t.is_alive():
                    t.join(0.2)
            if courier is not None and until_idle and self.fault is None:
                courier.drain()  # what is due now goes out before an idle worker exits
        finally:
            stop.set()
            beat.join()
            if courier is not None:
                courier_thread.join()
        return self.stats

    def run_one(self) -> RunOutcome | None:
        """Claim and run one task; None when nothing was runnable or the lease was lost."""
        lease = self.store.claim(self.id, self.lease_s)
        if lease is None:
            return None
        return self.execute(lease)

    def _slot(self, stop: threading.Event, until_idle: bool, budget: _Budget) -> None:
        while not stop.is_set() and self.fault is None and budget.take():
            try:
                lease = self.store.claim(self.id, self.lease_s)
                idle = lease is None and until_idle and self._idle()
            except Exception as exc:
                budget.give_back()
                self.halt(_fault(exc) or _unexpected("claiming", exc))
                return
            if lease is None:
                budget.give_back()
                if idle:
                    return
                stop.wait(self.poll_s)
                continue
            self.execute(lease)

    def _idle(self) -> bool:
        """Nothing pending in the store, and no run of this worker's left unrecorded."""
        with self._lock:
            in_hand = set(self._held)
        return not [t for t in self.store.waiting(self.id) if t not in in_hand]

    def halt(self, fault: Exception) -> None:
        """Stop on `fault`: claim nothing more; runs in hand stop at their next event."""
        with self._lock:
            if self.fault is None:
                self.fault = fault
                log.debug("worker %s stops: %s", self.id, fault)
            held = list(self._held.values())
        for _, sink in held:
            sink.halted = self.fault

    def courier(self) -> Courier:
        """This worker's outbox delivery; a store fault it meets stops the worker (one line)."""

        def ends_delivery(exc: Exception) -> bool:
            fault = _fault(exc)
            if fault is None:
                return False
            self.halt(fault)
            return True

        return Courier(cast("OutboxStore", self.store), self.delivery, ends_delivery=ends_delivery)

    def start_heartbeat(self, stop: threading.Event) -> threading.Thread:
        """Start the thread that keeps every held lease alive until `stop` is set."""
        beat = threading.Thread(
            target=self._heartbeat, args=(stop,), daemon=True, name="donegate-heartbeat"
        )
        beat.start()
        return beat

    def _heartbeat(self, stop: threading.Event) -> None:
        interval = self.lease_s / 3
        while not stop.wait(interval):
            with self._lock:
                held = list(self._held.values())
            if not held:
                continue
            try:
                lost = self.store.heartbeat([lease for lease, _ in held], self.lease_s)
            except Exception as exc:
                fault = _fault(exc)
                if fault is not None:  # the store retried for its patience, or is gone
                    self.halt(fault)
                else:  # a hiccup; the leases are still good until they expire
                    log.exception("heartbeat failed")
                continue
            for lease, sink in held:
                if lease.task_id in lost:
                    sink.lost.set()

    # -- one task ------------------------------------------------------------------------------

    def execute(self, lease: Lease) -> RunOutcome | None:
        """Run a claimed task and record its outcome; None when the lease was lost."""
        journal = self._hold(lease)
        started = time.monotonic()
        try:
            try:
                outcome = self._run(lease, journal, started)
            except Exception as exc:
                self._given_up(lease, exc)
                return None
            return self._record(lease, journal, outcome)
        finally:
            self._let_go(lease)

    def _hold(self, lease: Lease) -> JournalSink:
        """The claimed task is in hand: counted, and reachable by the heartbeat and `halt`."""
        self.stats.claimed += 1
        log.info("task %s: claimed (attempt %d)", lease.task_id, lease.attempt)
        journal = JournalSink(self.store, lease)
        with self._lock:
            self._held[lease.task_id] = (lease, journal)
            journal.halted = self.fault
        return journal

    def _let_go(self, lease: Lease) -> None:
        with self._lock:
            self._held.pop(lease.task_id, None)

    def _record(self, lease: Lease, journal: JournalSink, outcome: RunOutcome) -> RunOutcome | None:
        """Write the run's `outcome` under its lease (or give the task back), then report it."""
        try:
            if outcome.loop_status == Status.PROVIDER_ERROR:
                journal.flush()  # the last step's messages and evidence; the task goes back
                raise _ProviderDown(outcome.reason)
            outcome = compose(lease, outcome, self.notify, self.delivery)
            journal.finish(outcome)  # the outbox rows commit with it
        except Exception as exc:
            self._given_up(lease, exc)
            return None
        self.stats.finished[outcome.status] = self.stats.finished.get(outcome.status, 0) + 1
        log.info(
            "task %s: %s in %.1f s: %s",
            lease.task_id, outcome.status, outcome.duration_s, " ".join(outcome.reason.split()),
        )  # fmt: skip
        task_type = lease.spec.get("type")
        for observe in self.observers:
            try:
                observe(task_type if isinstance(task_type, str) else None, outcome)
            except Exception:
                log.exception("an outcome observer failed")
        return outcome

    def _given_up(self, lease: Lease, exc: Exception) -> None:
        """A run that raised: lost (left to its new holder), a fault, or given back to retry."""
        if isinstance(exc, LeaseLost):
            log.warning("task %s: lease lost; another worker resumes it", lease.task_id)
            self.stats.lost += 1
            return
        fault = _fault(exc)
        if fault is not None:
            self.halt(fault)
            self._put_back(lease, fault)
            return
        if isinstance(exc, _ProviderDown):
            log.warning("task %s: %s; it will be retried", lease.task_id, exc)
        else:
            log.error("task %s: worker error", lease.task_id, exc_info=exc)
        self.stats.errors += 1
        try:
            reason = f"worker error: {type(exc).__name__}: {exc}"
            if isinstance(exc, _ProviderDown):
                reason = str(exc)
            failed = compose(
                lease,
                RunOutcome(status=TaskStatus.FAILED, reason=reason),
                self.notify,
                self.delivery,
            )
            self.store.release(lease, reason, delay_s=self.error_backoff_s, notify=failed.notify)
        except Exception:  # lost, or the store is down: the lease expires and it resumes
            log.exception("task %s: could not give it back", lease.task_id)

    def _put_back(self, lease: Lease, fault: Exception) -> None:
        """Give a task in hand back, uncharged, after a fault; leave it to expire if it can't."""
        # A full disk fails the first try if the store still held its reserve: that failure
        # frees it, and the second try fits. A store gone or not answering takes no writes.
        tries = 0 if isinstance(fault, StoreGone | StoreUnavailable) else 2
        for _ in range(tries):
            try:
                self.store.release(lease, f"put back: {fault}", charge=False)
            except DiskFull:
                continue
            except Exception as exc:
                log.debug("task %s: not put back: %s", lease.task_id, exc)
                break
            self.stats.put_back += 1
            return
        self.stats.stranded += 1

    def _run(self, lease: Lease, journal: JournalSink, started: float) -> RunOutcome:
        with RunSetup(self, lease, journal, started) as setup:
            setup.prepare()
            try:
                result = run_task(setup.task, **setup.options)
            finally:
                setup.close()
            return setup.outcome(result)
        return setup.ended


_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _fault(exc: BaseException) -> Exception | None:
    """The worker's own fault behind `exc` (a `StoreError`, a full disk), or None.

    The cause chain is searched: a full disk met writing a certificate is an `OSError` the
    harness let through; a store fault may arrive wrapped.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, Halted):
            return current.fault
        if isinstance(current, StoreError):
            return current
        if isinstance(current, OSError) and current.errno in _DISK_FULL:
            where = f"{current.filename}: " if current.filename else ""
            return DiskFull(f"disk full: {where}{current.strerror or current}")
        current = current.__cause__ or current.__context__
    return None


def _unexpected(doing: str, exc: Exception) -> StoreError:
    log.error("%s failed", doing, exc_info=exc)
    return StoreError(f"{doing} failed: {type(exc).__name__}: {' '.join(str(exc).split())}")


def _positive(name: str, value: float, *, zero: bool = False) -> None:
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and (value >= 0 if zero else value > 0)
    )
    if not ok:
        bound = ">= 0" if zero else "> 0"
        raise UserError(f"{name} must be a finite number {bound}, got {value!r}")


class _ProviderDown(Exception):
    """The provider still failed after the transport's retries: try the task again later.

    Side effects already recorded are not repeated on the retry (the ledger answers them); once
    the task's attempts are spent it fails with the provider's reason.
    """


class _Budget:
    """How many more tasks the slots may claim (unlimited when None)."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.left is None:
                return True
            if self.left <= 0:
                return False
            self.left -= 1
            return True

    def give_back(self) -> None:
        with self._lock:
            if self.left is not None:
                self.left += 1
