"""``donegate worker``: run queued tasks, embedded (threads on this machine) or under Celery.

SIGTERM and Ctrl-C stop claiming; tasks in hand finish first (a second signal exits at once,
and their leases expire and another worker resumes them). A worker that stops on a fault (its
store gone or replaced, a full disk, a store that did not answer for ``--store-patience``)
prints one line and exits 1, having put back the tasks it held where it still could.
"""

from __future__ import annotations

import logging
import math
import re
import shlex
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

import click

from donegate.cli._app import app
from donegate.cli._store import db_option, resolve_model, store_from
from donegate.cli._temporal import temporal_options
from donegate.cli._types import isolation_option
from donegate.config import BROKER_ENV
from donegate.errors import UserError

if TYPE_CHECKING:
    from donegate.worker.service import Observer, SinkFactory

# The store, the worker and its engines are imported by the command's body: `worker --help`
# (and a bad option, refused by click) needs none of them.

__all__ = ["worker_command"]


class Number(click.ParamType):  # type: ignore[type-arg]  # generic in recent click only; 8.1 is allowed
    """A finite number within bounds; anything else is one line naming the option (exit 2).

    `float("nan")` passes every comparison click's ranges make, and a NaN lease strands its
    task, so the bounds are checked here, finiteness first.
    """

    def __init__(
        self,
        *,
        whole: bool = False,
        minimum: float = 0.0,
        above: bool = False,
        maximum: float = math.inf,
    ) -> None:
        self.whole, self.minimum, self.above, self.maximum = whole, minimum, above, maximum
        self.name = "integer" if whole else "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            number: float = value
        else:
            text = str(value).strip()
            try:
                number = int(text) if self.whole else float(text)
            except ValueError:
                number = math.nan
        low_ok = number > self.minimum if self.above else number >= self.minimum
        if not (math.isfinite(number) and low_ok and number <= self.maximum):
            raise UserError(f"{_name(param)} {value!r}: {self._wanted()}")
        return int(number) if self.whole else float(number)

    def _wanted(self) -> str:
        kind = "a whole number" if self.whole else "a finite number"
        low = f"> {self.minimum:g}" if self.above else f">= {self.minimum:g}"
        high = f" and <= {self.maximum:g}" if math.isfinite(self.maximum) else ""
        return f"must be {kind} {low}{high}"


def _name(param: click.Parameter | None) -> str:
    opts = getattr(param, "opts", None)
    return str(opts[0]) if opts else "value"


SECONDS = Number(above=True)
"""Seconds that must pass: > 0 and finite."""


MAX_THREADS = 1024
MAX_ASYNC = 65536


@app.command("worker")
@click.option(
    "--concurrency",
    type=Number(whole=True, minimum=1, maximum=MAX_ASYNC),
    default=1,
    show_default=True,
    help=f"Tasks run at once (threads: at most {MAX_THREADS}; async: {MAX_ASYNC}).",
)
@click.option(
    "--mode",
    type=click.Choice(["threads", "async"]),
    default="threads",
    show_default=True,
    help="embedded: a thread per task, or every task a coroutine on one event loop (holds "
    "thousands of tasks waiting on their models).",
)
@click.option(
    "--engine",
    type=click.Choice(["embedded", "celery", "temporal"]),
    default="embedded",
    show_default=True,
    help="embedded: claim from the store; celery: take messages from a Redis broker; "
    "temporal: run task workflows from a Temporal task queue.",
)
@click.option(
    "--lease", "lease_s", type=SECONDS, default=30.0, show_default=True, help="Lease seconds."
)
@click.option(
    "--poll", "poll_s", type=SECONDS, default=0.5, show_default=True, help="Idle poll seconds."
)
@click.option(
    "--until-idle",
    is_flag=True,
    help="Exit when nothing is pending and this worker's runs are recorded (embedded).",
)
@click.option(
    "--max-tasks", type=Number(whole=True, minimum=1), help="Exit after this many tasks (embedded)."
)
@click.option(
    "--store-patience",
    "store_patience_s",
    type=Number(minimum=0),
    default=300.0,
    show_default=True,
    help="Seconds to keep retrying, with backoff, a store that stopped answering.",
)
@click.option("--worker-id", help="Name in leases and runs (default: host:pid:random).")
@click.option("--output-dir", help="Certificates and reports (default: $DONEGATE_HOME).")
@click.option("--broker", envvar=BROKER_ENV, help="Celery: the Redis URL.")
@click.option("--pool", default="prefork", show_default=True, help="Celery: the pool.")
@click.option("--visibility-timeout", type=SECONDS, help="Celery: Redis redelivery seconds.")
@temporal_options
@click.option(
    "--metrics-port",
    type=Number(whole=True, minimum=0, maximum=65535),
    help="Serve Prometheus metrics on this port (0: any free one).",
)
@click.option(
    "--otel", is_flag=True, help="Emit OpenTelemetry spans (OTLP if installed, OTEL_* env)."
)
@click.option(
    "--notify-webhook",
    "notify_webhooks",
    multiple=True,
    metavar="URL",
    help="POST every task's end here too (after the spec's own notify:); repeatable.",
)
@click.option(
    "--notify-command",
    "notify_commands",
    multiple=True,
    metavar="CMD",
    help="Run this command line (split like a shell, never run by one) at every task's end; "
    "{task_id} {status} {certificate_path} {report_path} are replaced (the outcome JSON is on "
    "stdin). Repeatable.",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Log more (-v info of every library, -vv debug); task events are logged anyway.",
)
@db_option
@isolation_option
def worker_command(
    *,
    concurrency: int,
    mode: str,
    engine: str,
    lease_s: float,
    poll_s: float,
    until_idle: bool,
    max_tasks: int | None,
    store_patience_s: float,
    worker_id: str | None,
    output_dir: str | None,
    broker: str | None,
    pool: str,
    visibility_timeout: float | None,
    metrics_port: int | None,
    otel: bool,
    verbose: int,
    notify_webhooks: tuple[str, ...],
    notify_commands: tuple[str, ...],
    db: str | None,
    temporal_address: str,
    namespace: str,
    task_queue: str,
) -> None:
    """Claim queued tasks, run them behind the completion gate, and record how they ended.

    Exits 1 when it stopped on a fault (its store gone, replaced or silent past
    --store-patience, or a full disk), after putting back the tasks it held.
    """
    logging.basicConfig(
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if verbose == 0:  # one line per task event by default; other libraries' INFO only with -v
        logging.getLogger("donegate.worker").setLevel(logging.INFO)
    _check_mode(mode, engine, concurrency)
    observers, sink_factory = _telemetry(metrics_port, otel)
    notify = _notify_targets(notify_webhooks, notify_commands)
    if engine == "celery":
        _celery(
            broker=broker,
            db=db,
            concurrency=concurrency,
            pool=pool,
            lease_s=lease_s,
            visibility_timeout=visibility_timeout,
            output_dir=output_dir,
            observers=observers,
            store_patience_s=store_patience_s,
            notify=notify,
        )
        return
    # async: the loop's thread, the executor's, the heartbeat and the courier share the pool
    store = store_from(db, pool_size=concurrency + 2 if mode == "threads" else 16)
    store.patience_s = store_patience_s
    if engine == "temporal":
        from donegate.worker.temporal import Target

        target = Target(address=temporal_address, namespace=namespace, task_queue=task_queue)
        _temporal(
            store, target, concurrency=concurrency, lease_s=lease_s, worker_id=worker_id,
            output_dir=output_dir, observers=observers, sink_factory=sink_factory, notify=notify,
        )  # fmt: skip
        return
    from donegate.worker import Worker
    from donegate.worker.aservice import AsyncWorker

    worker_class = AsyncWorker if mode == "async" else Worker
    worker = worker_class(
        store,
        concurrency=concurrency,
        lease_s=lease_s,
        model_resolver=resolve_model,
        worker_id=worker_id,
        poll_s=poll_s,
        output_dir=output_dir,
        observers=observers,
        sink_factory=sink_factory,
        notify=notify,
    )
    stop = threading.Event()
    _on_signals(stop)
    click.echo(f"worker {worker.id} on {store.url} ({concurrency} at a time)", err=True)
    try:
        stats = worker.run(stop=stop, until_idle=until_idle, max_tasks=max_tasks)
    finally:
        store.close()
    done = ", ".join(f"{n} {s}" for s, n in sorted(stats.finished.items())) or "none finished"
    if worker.fault is not None:
        left = f"{stats.put_back} put back"
        if stats.stranded:
            left += f", {stats.stranded} held until their lease expires ({lease_s:g} s)"
        click.echo(
            f"donegate: worker {worker.id} stopped: {worker.fault}; "
            f"{stats.claimed} claimed ({done}); {left}",
            err=True,
        )
        sys.exit(1)
    click.echo(f"worker {worker.id}: {stats.claimed} claimed; {done}", err=True)


def _check_mode(mode: str, engine: str, concurrency: int) -> None:
    """Refuse a --mode the engine or --concurrency cannot honour, in one line."""
    if mode == "async" and engine == "celery":
        raise UserError("--mode async is for --engine embedded (Celery runs its own pool)")
    if mode == "threads" and concurrency > MAX_THREADS:
        raise UserError(
            f"--concurrency {concurrency}: must be <= {MAX_THREADS} with --mode threads "
            "(--mode async holds more)"
        )


def _temporal(store: Any, target: Any, **options: Any) -> None:
    """``--engine temporal``: poll the task queue until SIGTERM or Ctrl-C."""
    from donegate.worker.temporal import run_worker

    stop = threading.Event()
    _on_signals(stop)
    click.echo(
        f"worker on {store.url}, tasks from {target.task_queue} at {target.address}", err=True
    )
    try:
        run_worker(store, target, model_resolver=resolve_model, stop=stop, **options)
    finally:
        store.close()


def _notify_targets(webhooks: tuple[str, ...], commands: tuple[str, ...]) -> list[dict[str, Any]]:
    """The worker's own notify targets, checked as a task spec's ``notify:`` is."""
    import pydantic

    from donegate.harness.spec import CommandTarget, WebhookTarget

    targets: list[dict[str, Any]] = []
    for url in webhooks:
        if not re.fullmatch(r"https?://\S+", url):
            raise click.BadParameter(
                f"{url!r} is not an http(s) URL", param_hint="'--notify-webhook'"
            )
        targets.append(WebhookTarget.model_validate({"webhook": {"url": url}}).model_dump())
    for line in commands:
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise click.BadParameter(f"{line!r}: {exc}", param_hint="'--notify-command'") from None
        if not argv:
            raise click.BadParameter("an empty command", param_hint="'--notify-command'")
        try:
            targets.append(CommandTarget(command=argv).model_dump(mode="json"))
        except pydantic.ValidationError as exc:
            message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
            raise click.BadParameter(message, param_hint="'--notify-command'") from None
    return targets


def _on_signals(stop: threading.Event) -> None:
    def handle(signum: int, _frame: Any) -> None:
        if stop.is_set():
            raise SystemExit(128 + signum)
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


def _telemetry(metrics_port: int | None, otel: bool) -> tuple[list[Observer], SinkFactory | None]:
    observers: list[Observer] = []
    factory: SinkFactory | None = None
    if metrics_port is not None:
        from donegate.telemetry.prometheus import WorkerMetrics

        metrics = WorkerMetrics()
        metrics.serve(metrics_port)
        observers.append(metrics.observe)
    if otel:
        from donegate.telemetry.otel import OtelSink, configure_tracing

        click.echo(f"spans go to {configure_tracing()}", err=True)

        def factory(spec: Any, lease: Any) -> Any:
            return OtelSink(task_id=lease.task_id, task_type=spec.type)

    return observers, factory


def _celery(
    *,
    broker: str | None,
    db: str | None,
    concurrency: int,
    pool: str,
    lease_s: float,
    visibility_timeout: float | None,
    output_dir: str | None,
    observers: list[Observer],
    store_patience_s: float,
    notify: list[dict[str, Any]],
) -> None:
    if not broker:
        raise UserError("--engine celery needs --broker redis://HOST:PORT/DB (or DONEGATE_BROKER)")
    from donegate.store import open_store
    from donegate.store._db import resolve_url
    from donegate.worker.celery_app import QUEUE, make_app

    url = resolve_url(db)
    open_store(url).close()  # fail fast, with one line, on an unreachable store; and migrate
    celery_app = make_app(
        broker=broker,
        db=url,
        lease_s=lease_s,
        visibility_timeout=visibility_timeout,
        model_resolver=resolve_model,
        output_dir=output_dir,
        observers=observers,
        store_patience_s=store_patience_s,
        pool_size=concurrency + 2,  # the pool's threads, the heartbeat, one spare
        notify=notify,
    )
    celery_app.worker_main(
        [
            "worker",
            f"--concurrency={concurrency}",
            f"--pool={pool}",
            f"--queues={QUEUE}",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )
