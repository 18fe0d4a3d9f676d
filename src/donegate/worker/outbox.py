"""Delivering the outbox: a task's final outcome to its webhooks and commands, at least once.

1. When a run ends, `compose` turns the outcome into a notice (the idempotency key, the JSON
   body, the targets from the task spec's ``notify:`` plus the worker's own) and the store
   writes it to the outbox in the transaction that records the outcome.
2. A `Courier` thread polls the outbox for due rows, takes one (counting the attempt), sends it
   and records delivered, pending again after an exponential backoff, or failed once the
   attempts are spent, with the last error.
3. A webhook is a POST with ``Idempotency-Key``; a command runs through the harness's bounded
   process runner with ``DONEGATE_IDEMPOTENCY_KEY`` set and the body on stdin.

Nothing the model says reaches a target: the spec and the worker's config name them, and the
body is built from the recorded outcome and the signed certificate file.
"""

from __future__ import annotations

import json
import logging
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from donegate.config import IDEMPOTENCY_KEY_ENV
from donegate.errors import UserError
from donegate.harness._process import run as run_process
from donegate.records.status import TaskStatus
from donegate.store._outbox import certificate_json
from donegate.store.base import Lease, RunOutcome

if TYPE_CHECKING:
    from donegate.store._outbox import Notification, OutboxStore

__all__ = ["Courier", "Delivery", "compose", "deliver", "final_key"]

log = logging.getLogger("donegate.worker.outbox")

NOTIFIED = ("done", "escalated", "awaiting_review", "failed")


def final_key(task_id: str, generation: int) -> str:
    """``<task>:final``, or ``<task>~<generation>:final`` once a task was requeued."""
    return f"{task_id}:final" if generation == 0 else f"{task_id}~{generation}:final"


@dataclass(frozen=True, kw_only=True, slots=True)
class Delivery:
    """How hard a worker tries: attempts, backoff (doubling from `backoff_s` up to `cap_s`)."""

    max_attempts: int = 8
    backoff_s: float = 1.0
    cap_s: float = 300.0
    timeout_s: float = 10.0
    """A webhook's or command's time limit per attempt."""
    poll_s: float = 0.5

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or self.max_attempts < 1:
            raise UserError(f"max_attempts must be a whole number >= 1, got {self.max_attempts!r}")
        for name in ("backoff_s", "cap_s", "timeout_s", "poll_s"):
            if not getattr(self, name) > 0:
                raise UserError(f"{name} must be > 0, got {getattr(self, name)!r}")

    def retry_at(self, attempts: int, now: float) -> float | None:
        """When to try again after `attempts` failed ones; None when they are spent."""
        if attempts >= self.max_attempts:
            return None
        return now + min(self.cap_s, self.backoff_s * 2.0 ** (attempts - 1))


def compose(
    lease: Lease,
    outcome: RunOutcome,
    defaults: Sequence[Mapping[str, Any]] = (),
    delivery: Delivery | None = None,
) -> RunOutcome:
    """The outcome with its notice, when the task ends notified and names a target."""
    spec_targets = lease.spec.get("notify") or []
    targets = [dict(t) for t in [*spec_targets, *defaults] if isinstance(t, Mapping)]
    if outcome.status not in NOTIFIED or not targets:
        return outcome
    key = final_key(lease.task_id, lease.generation)
    body: dict[str, Any] = {
        "task_id": lease.task_id,
        "status": outcome.status,
        "reason": outcome.reason,
        "continuations": outcome.continuations,
        "idempotency_key": key,
    }
    if outcome.status in ("done", "awaiting_review"):
        body["certificate"] = _certificate(outcome.summary.get("certificate"))
    if outcome.status == TaskStatus.ESCALATED:
        body["escalation"] = outcome.report.as_data() if outcome.report is not None else None
    attempts = (delivery or Delivery()).max_attempts
    return replace(
        outcome, notify={"key": key, "body": body, "targets": targets, "max_attempts": attempts}
    )


def _certificate(path: object) -> Any:
    """The signed certificate the harness wrote (JSON), or None when there is none."""
    cert = certificate_json(path)
    if cert is None and isinstance(path, str):
        log.warning("certificate %s could not be read for the notification", path)
    return cert


def deliver(n: Notification, timeout_s: float) -> str | None:
    """Send `n` once; None when the target took it, else the error in one line."""
    data = json.dumps(n.body, sort_keys=True).encode()
    if "webhook" in n.target:
        hook = n.target["webhook"]
        headers = {str(k): str(v) for k, v in (hook.get("headers") or {}).items()}
        headers.update({"Content-Type": "application/json", "Idempotency-Key": n.key})
        request = urllib.request.Request(hook["url"], data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                status = int(response.status)
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code} from {hook['url']}"
        except (OSError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc} ({hook['url']})"
        return None if 200 <= status < 300 else f"HTTP {status} from {hook['url']}"
    with tempfile.TemporaryDirectory(prefix="donegate-notice-") as folder:
        argv = [_fill(a, n, Path(folder)) for a in n.target["command"]]
        try:
            done = run_process(
                ["env", f"{IDEMPOTENCY_KEY_ENV}={n.key}", *argv],
                cwd=Path(tempfile.gettempdir()),
                timeout=timeout_s,
                stdin=data,
            )
        except OSError as exc:
            return f"{argv[0]}: {exc}"
    if done.timed_out:
        return f"{argv[0]}: no answer within {timeout_s:g} s"
    if done.returncode != 0:
        tail = done.output.tail.decode(errors="replace").strip().splitlines()
        return f"{argv[0]} exited {done.returncode}" + (f": {tail[-1]}" if tail else "")
    return None


def _fill(arg: str, n: Notification, folder: Path) -> str:
    """Replace the placeholders in one argument (plain text, never a format string). A document
    (certificate, report) is handed as a file in `folder`, never as argument text: a large one
    would break the command with E2BIG and the notice would never arrive."""
    body = n.body
    values = {
        "{task_id}": n.task_id,
        "{idempotency_key}": n.key,
        "{status}": str(body.get("status", "")),
    }
    for placeholder, value in values.items():
        arg = arg.replace(placeholder, value)
    for placeholder, field, name in (
        ("{certificate_path}", "certificate", "certificate.json"),
        ("{report_path}", "escalation", "report.json"),
    ):
        if placeholder in arg:
            path = folder / name
            if body.get(field) and not path.exists():
                path.write_text(json.dumps(body[field]), encoding="utf-8")
            arg = arg.replace(placeholder, str(path) if body.get(field) else "")
    return arg


class Courier:
    """The delivery loop of one worker: a thread that sends what is due in the outbox."""

    def __init__(
        self,
        store: OutboxStore,
        delivery: Delivery | None = None,
        *,
        ends_delivery: Callable[[Exception], bool] | None = None,
    ) -> None:
        """`ends_delivery(error)`: True when a store error is its owner's to report (a worker
        stops on a store that is gone and says why in its one line), so delivery ends without a
        warning of its own; otherwise the rows wait and delivery pauses."""
        self.store = store
        self.delivery = delivery or Delivery()
        self.ends_delivery = ends_delivery
        self.sent = 0

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(
            target=self.loop, args=(stop,), daemon=True, name="donegate-outbox"
        )
        thread.start()
        return thread

    def loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                busy = self.once()
            except Exception as exc:  # the store is away: the rows wait, and so do we
                if self._ended_by(exc):
                    return
                busy = False
            if not busy:
                stop.wait(self.delivery.poll_s)

    def drain(self) -> None:
        """Send what is due now (first attempts; a failed one waits for its backoff)."""
        try:
            while self.once():
                pass
        except Exception as exc:  # the rows wait for the next worker
            self._ended_by(exc)

    def _ended_by(self, exc: Exception) -> bool:
        if self.ends_delivery is not None and self.ends_delivery(exc):
            return True
        log.warning("outbox delivery paused: %s", " ".join(str(exc).split())[:300])
        return False

    def once(self) -> bool:
        """Deliver what is due now; True when something was attempted."""
        now = time.time()
        due = self.store.outbox_due(now)
        for n in due:
            # held past this attempt's time limit: a worker killed mid-send leaves it due again
            if not self.store.outbox_take(n, now + self.delivery.timeout_s * 2 + 5):
                continue
            error = deliver(n, self.delivery.timeout_s)
            attempts = n.attempts + 1
            retry_at = None if error is None else self.delivery.retry_at(attempts, time.time())
            self.store.outbox_result(n, error=error, retry_at=retry_at)
            if error is None:
                self.sent += 1
            else:
                log.warning("notification %s (%s) attempt %d: %s", n.id, n.key, attempts, error)
        return bool(due)
