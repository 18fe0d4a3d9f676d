"""`RunSetup`: what one leased run is given, and how the ends of a run become outcomes.

Both workers run a claimed task through it, the thread one with `run_task` and the async one
with `arun_task`, so the model (replaying the journal on resume), the ledger, the event sinks
and the mapping of a run's errors to recorded outcomes are one code path.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import TYPE_CHECKING, Any, Self

from donegate.errors import EffectDivergence, EffectOutcomeUnknown, UserError
from donegate.events import EventSink, fan_out
from donegate.harness.gate import GateRound
from donegate.harness.runner import TaskResult
from donegate.harness.spec import TaskSpec
from donegate.harness.task_tools import side_effect_tools
from donegate.store import Lease, RunOutcome, StoreLedger
from donegate.worker.journal import JournaledModel, JournalSink
from donegate.worker.tasks import (
    baseline_for,
    failed,
    outcome_of,
    outcome_unknown,
    spec_for,
    spent_before,
)

if TYPE_CHECKING:
    from donegate.worker.service import Worker

__all__ = ["RunSetup"]

log = logging.getLogger("donegate.worker")


class RunSetup:
    """What one leased run is given (`spec`, `options`), and the run's ends mapped to outcomes.

    Shared by the thread worker (`run_task`) and the async one (`arun_task`): `prepare`, inside
    the ``with``, builds the model (replaying the journal on resume) and the run's options; a
    `UserError`, an `EffectDivergence` or an `EffectOutcomeUnknown` raised inside is suppressed
    and becomes `ended`, the outcome the task records; anything else propagates.
    """

    def __init__(self, worker: Worker, lease: Lease, journal: JournalSink, started: float) -> None:
        self.worker, self.lease, self.journal, self.started = worker, lease, journal, started
        self.model: JournaledModel | None = None
        self.spec: TaskSpec | None = None
        self.options: dict[str, Any] = {}
        self.extra: EventSink | None = None
        self.ended: RunOutcome = failed("the run did not end", 0.0)
        """The outcome when the run ended in an error the task records."""

    def __enter__(self) -> Self:
        return self

    def prepare(self) -> None:
        """Build the model and the options (inside the ``with``: its errors map too)."""
        worker, lease, journal = self.worker, self.lease, self.journal
        spec = self.spec = spec_for(lease)
        journal.effect_tools = side_effect_tools(spec)  # their turns ride with their begins
        if spec.model is None:
            raise UserError(f"task {lease.task_id}: no model: set `model` in the task")
        # The task's first claim ever (epoch 1) has nothing journaled; any later one may
        # (a lost lease, a put-back whose attempt was handed back): it replays the journal.
        replay = worker.store.turns(lease.task_id, lease.generation) if lease.epoch > 1 else []
        if replay:
            log.info(
                "task %s: resumed from step %d (%d journaled turns replayed)",
                lease.task_id, len(replay) + 1, len(replay),
            )  # fmt: skip
        self.model = JournaledModel(worker.resolve(spec.model, "model"), journal, replay)
        verifier = worker.resolve(spec.verifier, "verifier") if spec.verifier else None
        extra = self.extra = (
            worker.sink_factory(spec, lease) if worker.sink_factory is not None else None
        )
        self.options = {
            "model": self.model,
            "verifier_model": verifier,
            "ledger": StoreLedger(worker.store, lease, journal),
            "events": fan_out(journal, extra),
            "output_dir": worker.output_dir,
            "on_round": functools.partial(_log_round, lease.task_id),
            "baseline": functools.partial(baseline_for, worker.store, lease, journal),
            "spent": spent_before(worker.store, lease),
        }

    @property
    def task(self) -> TaskSpec:
        """The task's spec (entered: read)."""
        assert self.spec is not None
        return self.spec

    def close(self) -> None:
        """End what the run opened (a tracing sink's span)."""
        close = getattr(self.extra, "close", None)
        if callable(close):
            close()

    def outcome(self, result: TaskResult) -> RunOutcome:
        """The outcome of a run that ended."""
        assert self.model is not None
        elapsed = time.monotonic() - self.started
        return outcome_of(result, elapsed, replayed_calls=self.model.replayed_calls)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> bool:
        elapsed = time.monotonic() - self.started
        model, lease = self.model, self.lease
        if isinstance(exc, UserError):
            self.ended = failed(" ".join(str(exc).split()), elapsed)
            return True
        if isinstance(exc, EffectDivergence):  # the task's failure, never retried blind
            log.error("task %s: %s", lease.task_id, exc)
            assert model is not None
            self.ended = failed(
                str(exc), elapsed, model_calls=model.replayed_calls + model.live_calls,
                replayed_calls=model.replayed_calls,
            )  # fmt: skip
            return True
        if isinstance(exc, EffectOutcomeUnknown):  # a person decides; not run again
            log.warning("task %s: %s", lease.task_id, exc)
            assert model is not None and self.spec is not None
            self.ended = outcome_unknown(
                lease, self.spec, exc, elapsed,
                model_calls=model.replayed_calls + model.live_calls,
                replayed_calls=model.replayed_calls,
            )  # fmt: skip
            return True
        return False


def _log_round(task_id: str, round_: GateRound) -> None:
    """One line per gate judgement: the checks' results and what the gate decided."""
    checks = round_.checks
    failed_names = [c.name for c in checks if not c.passed]
    passed = f"checks {len(checks) - len(failed_names)}/{len(checks)} passed"
    if failed_names:
        passed += f", failed: {'; '.join(failed_names)}"
    log.info(
        "task %s: claim %d at step %d: %s; gate: %s",
        task_id, round_.number, round_.step, passed, round_.verdict.action,
    )  # fmt: skip
