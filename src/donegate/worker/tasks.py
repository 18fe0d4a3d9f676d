"""Between specs and the store: `submit`, the spec a claim runs, and the outcome it records."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from donegate.errors import EffectOutcomeUnknown, UserError
from donegate.harness.escalation import build_report, render_markdown
from donegate.harness.protect import Manifest
from donegate.harness.runner import TaskResult
from donegate.harness.spec import TaskSpec, TaskSpecError, load_task, validate_task
from donegate.records.report import OutcomeUnknown
from donegate.records.status import OUTCOME_UNKNOWN, TaskStatus
from donegate.records.task import TASK_ID
from donegate.results import Spend
from donegate.store import Journal, Lease, RunOutcome, TaskQueue, TaskRecord
from donegate.worker.journal import JournalSink

__all__ = [
    "INSTRUCTIONS_HEADER",
    "baseline_for",
    "failed",
    "outcome_of",
    "outcome_unknown",
    "prepare",
    "spec_data",
    "spec_for",
    "spent_before",
    "submit",
]

INSTRUCTIONS_HEADER = "Instructions from the person who reviewed this task:"
"""Put before a reviewer's requeue instructions in the prompt."""


def spec_data(spec: TaskSpec) -> dict[str, Any]:
    """A spec as the JSON data the store keeps (aliases as a task file writes them)."""
    return spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def prepare(
    spec: TaskSpec | Mapping[str, Any] | str | os.PathLike[str],
    *,
    task_id: str | None = None,
    model: str | None = None,
    base: str | os.PathLike[str] | None = None,
    source: str | None = None,
) -> TaskSpec:
    """The spec `submit` stores: one that runs the same from any worker, wherever it started.

    The workdir becomes an absolute path (none, or a relative one, is taken against `base`: the
    task file's folder for a file, else the current directory), and so does a ``script:FILE``
    model or verifier. `model` overrides the spec's (a relative script against the current
    directory) and `task_id` its id. A spec left with no model is a `TaskSpecError` here, not a
    failure at run time. Preparing a prepared spec changes nothing.
    """
    if isinstance(spec, str | os.PathLike):
        source = source or os.fspath(spec)
        base = base if base is not None else Path(spec).resolve().parent
        spec = load_task(Path(spec))
    elif not isinstance(spec, TaskSpec):
        spec = validate_task(dict(spec), source=source)
    root = Path(base) if base is not None else Path.cwd()
    data = spec_data(spec)
    data["workdir"] = str((root / (spec.workdir or ".")).resolve())
    for field in ("model", "verifier"):
        if isinstance(data.get(field), str):
            data[field] = _anchored(data[field], root)
    if model is not None:
        data["model"] = _anchored(model, Path.cwd())
    if task_id is not None:
        data["id"] = task_id
    spec = validate_task(data, source=source)
    if spec.model is None:
        raise TaskSpecError(
            "no model: set `model` in the task, or pass one (submit --model M)",
            source=source or f"task {spec.id}",
            field="model",
        )
    return spec


def submit(
    spec: TaskSpec | Mapping[str, Any] | str | os.PathLike[str],
    store: TaskQueue,
    *,
    task_id: str | None = None,
    max_attempts: int = 5,
    model: str | None = None,
    base: str | os.PathLike[str] | None = None,
    source: str | None = None,
) -> tuple[TaskRecord, bool]:
    """Queue a task (a `TaskSpec`, its dict, or a task file) as `prepare` makes it.

    Idempotent on the task id: resubmitting an id with the same spec returns the stored task
    and False; with a different spec it is a `UserError`. A malformed task file, or a task
    without a model, raises a one-line `TaskSpecError` before anything is written.
    """
    spec = prepare(spec, task_id=task_id, model=model, base=base, source=source)
    return store.submit(spec.id, spec_data(spec), type=spec.type, max_attempts=max_attempts)


def _anchored(name: str, root: Path) -> str:
    """A ``script:FILE`` model with FILE made absolute against `root`; others as they are."""
    if not name.startswith("script:"):
        return name
    return f"script:{(root / name.removeprefix('script:')).resolve()}"


def spec_for(lease: Lease) -> TaskSpec:
    """The spec a claim runs: a new generation gets fresh idempotency keys and the instructions.

    Generation 0 runs under the task id, so a resumed run finds the effects its predecessor
    recorded (``<task>:<step>:<call>``). A retried or requeued task is a new run that must not be
    answered from the old one's ledger: it runs as ``<task>~<generation>``.

    An id the store would not take today (stored before ids were checked) is refused here,
    before anything runs: names derived from it (keys, certificate files) must not fail after
    its side effects.
    """
    if not TASK_ID.fullmatch(lease.task_id):
        shown = lease.task_id if len(lease.task_id) <= 40 else f"{lease.task_id[:37]}..."
        raise UserError(
            f"task {shown!r}: its id ({len(lease.task_id)} characters) is not 1 to 128 of "
            "A-Z a-z 0-9 . _ -; not run"
        )
    spec = validate_task(dict(lease.spec), source=f"task {lease.task_id}")
    update: dict[str, Any] = {}
    if lease.generation:
        update["id"] = f"{lease.task_id}~{lease.generation}"
    if lease.instructions:
        update["prompt"] = f"{spec.prompt}\n\n{INSTRUCTIONS_HEADER}\n{lease.instructions}"
    return spec.model_copy(update=update) if update else spec


def outcome_of(result: TaskResult, duration_s: float, *, replayed_calls: int = 0) -> RunOutcome:
    """What the store records from a `run_task` result; `replayed_calls` came from the journal."""
    run = result.run
    summary = result.summary()
    summary.pop("escalation", None)
    report = result.escalation
    return RunOutcome(
        status=result.status,
        reason=result.reason,
        ending=run.ending,
        loop_status=run.status,
        model_calls=result.model_calls,
        replayed_calls=replayed_calls,
        continuations=result.continuations,
        input_tokens=run.usage.input_tokens,
        output_tokens=run.usage.output_tokens,
        duration_s=duration_s,
        checklist=[(i.name, i.status, i.note) for i in result.checklist],
        report=report,
        report_md=render_markdown(report) if report is not None else None,
        summary=summary,
    )


def failed(
    reason: str, duration_s: float = 0.0, *, model_calls: int = 0, replayed_calls: int = 0
) -> RunOutcome:
    """The outcome of a task that could not run (a bad spec, an unknown model or tool) or that
    was stopped before acting on a diverged call."""
    return RunOutcome(
        status=TaskStatus.FAILED,
        reason=reason,
        duration_s=duration_s,
        model_calls=model_calls,
        replayed_calls=replayed_calls,
    )


def outcome_unknown(
    lease: Lease,
    spec: TaskSpec,
    error: EffectOutcomeUnknown,
    duration_s: float,
    *,
    model_calls: int = 0,
    replayed_calls: int = 0,
) -> RunOutcome:
    """The escalation of a task whose side effect may or may not have happened.

    An earlier run began the call and died before recording it; its tool neither honours its
    key nor could reconcile it. The report carries the call, so a person can check the world
    and then resolve the task, or requeue it (a new generation, fresh keys).
    """
    unknown = OutcomeUnknown(
        key=error.key,
        tool=error.tool,
        arguments=error.arguments,
        call=error.call,
        why=error.why,
        attempt=lease.attempt,
    )
    report = build_report(
        task_id=lease.task_id,
        reason=str(error),
        prompt=spec.prompt,
        completion_condition=spec.completion_condition,
        model_calls=model_calls,
        extra={"outcome_unknown": unknown},
        outcome_unknown=unknown,
    )
    report_md = render_markdown(report).rstrip() + (
        "\n\n## Outcome unknown\n\n"
        f"- call: `{error.call}`\n- idempotency key: `{error.key}`\n- why: {error.why}\n\n"
        "Check whether the effect happened; then resolve the task, or requeue it to run "
        "again under fresh keys.\n"
    )
    return RunOutcome(
        status=TaskStatus.ESCALATED,
        reason=str(error),
        loop_status=OUTCOME_UNKNOWN,
        model_calls=model_calls,
        replayed_calls=replayed_calls,
        duration_s=duration_s,
        report=report,
        report_md=report_md,
    )


def baseline_for(store: Journal, lease: Lease, journal: JournalSink, taken: Manifest) -> Manifest:
    """The manifest the task's first run took (`taken`, when this is that run): kept in the
    store, so a resumed run judges against the workdir as it was before the agent ran.

    The first claim ever (epoch 1) has nothing stored: `taken` rides with the run's first
    journal write, before any tool runs. A later claim reads (or, if its first run wrote
    nothing, stores) it in a write of its own.
    """
    if lease.epoch == 1:
        journal.baseline(taken.as_data())
        return taken
    try:
        return Manifest.from_data(store.baseline(lease, taken.as_data()), taken.root)
    except ValueError as exc:  # fail closed: the task fails, named, rather than judged afresh
        raise UserError(
            f"task {lease.task_id}: its stored protected-file baseline: {exc}"
        ) from None


def spent_before(store: TaskQueue, lease: Lease) -> Spend | None:
    """What the task spent in its earlier generations (before a requeue or retry), which its
    ``budget:`` counts too: the spend its last finished run recorded (cumulative itself).

    The current generation's own spend is not read here: its journaled turns carry their usage
    and are charged as a resumed run replays them, so a replayed turn is counted once.
    """
    if not lease.generation:
        return None
    record = store.get(lease.task_id)
    result = record.result if record is not None else None
    return Spend.from_data(result.get("spend")) if result else None
