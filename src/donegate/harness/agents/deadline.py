"""Checks run against the hook's deadline: a check still running then is a failed check.

Every CLI kills a hook that outlives its timeout (Gemini CLI after 60 s by default) and a killed
hook lets the agent stop, so the hook must answer before that, whatever its checks do. The
checks run on a worker thread as the gate runs them (`checks.run_checks`: adjacent ``run:``
checks together, bounded, any other check alone and in order); each gets the smaller of its own
timeout and the time left when it starts. The caller waits for the worker until the deadline
(plus a short grace for the kill); whatever has not finished by then is reported failed and
named as such, never a silent pass.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from donegate.harness.checks import run_check, run_checks
from donegate.harness.protect import Manifest
from donegate.harness.spec import CheckSpec
from donegate.records.check import CheckResult

__all__ = ["GRACE_S", "run_checks_by"]

GRACE_S = 2.0
"""Seconds past the deadline the worker gets to kill a timed-out check and report it."""

_EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()


def run_checks_by(
    specs: Sequence[CheckSpec],
    workdir: Path,
    *,
    deadline: float,
    check_timeout: float = 120.0,
    label_s: float | None = None,
    snapshot_of: Manifest | None = None,
    freeze: Sequence[int] = (),
) -> list[CheckResult]:
    """Run every check before `deadline` (a `time.monotonic()` value); one result per check.

    `label_s` is the deadline as the user set it, for the failure details (default: the time
    left now). `snapshot_of` and `freeze` go to the clean room (`checks.run_checks`).
    """
    budget = max(0.0, deadline - time.monotonic()) if label_s is None else label_s
    finished: list[CheckResult | None] = [None] * len(specs)
    started: set[int] = set()
    queued: dict[int, list[int]] = {}  # id(spec) -> its indexes, in order (a spec may repeat)
    for index, spec in enumerate(specs):
        queued.setdefault(id(spec), []).append(index)
    lock = threading.Lock()

    def one(spec: CheckSpec) -> CheckResult:
        with lock:
            index = queued[id(spec)].pop(0)
        left = deadline - time.monotonic()
        if left <= 0:
            return _failed(spec, _not_run(budget))  # stays unreported: not in `started`
        own = spec.timeout or check_timeout
        limit = min(own, left)
        with lock:
            started.add(index)
        result = _run_one(spec, workdir, limit)
        if limit < own and not result.passed and "timed out" in result.detail:
            result = replace(result, detail=_still_running(budget))
        with lock:
            finished[index] = result
        return result

    worker = threading.Thread(
        target=run_checks, args=(specs, workdir), daemon=True,
        kwargs={"runner": one, "snapshot_of": snapshot_of, "freeze": freeze},
        name="donegate-hook-checks",
    )  # fmt: skip
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()) + GRACE_S)
    with lock:
        done = list(finished)
        running = set(started)
    out = []
    for index, spec in enumerate(specs):
        result = done[index]
        if result is None:
            detail = _still_running(budget) if index in running else _not_run(budget)
            result = _failed(spec, detail)
        out.append(result)
    return out


def _run_one(spec: CheckSpec, workdir: Path, limit: float) -> CheckResult:
    capped = spec.model_copy(update={"timeout": limit})
    try:
        return run_check(capped, workdir=workdir, timeout=limit)
    except Exception as exc:  # a check that cannot run is a failed check, named
        return _failed(spec, f"the check could not run: {exc}")


def _still_running(budget: float) -> str:
    return f"still running at the hook's deadline ({budget:g}s); stopped"


def _not_run(budget: float) -> str:
    return f"not run: the hook's deadline ({budget:g}s) was reached"


def _failed(spec: CheckSpec, detail: str) -> CheckResult:
    return CheckResult(
        name=spec.name, kind=spec.kind, passed=False, detail=detail, output_digest=_EMPTY_DIGEST
    )
