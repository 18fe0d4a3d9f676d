"""``donegate worker``: run queued tasks, embedded (threads on this machine) or under Celery.

SIGTERM and Ctrl-C stop claiming; tasks in hand finish first (a second signal exits at once,
and their leases expire and another worker resumes them).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

import click

from donegate.cli._app import app
from donegate.cli._store import db_option, resolve_model, store_from
from donegate.errors import UserError
from donegate.store import open_store
from donegate.store._db import resolve_url
from donegate.worker import Worker
from donegate.worker.service import Observer, SinkFactory

__all__ = ["worker_command"]


@app.command("worker")
@click.option("--concurrency", default=1, show_default=True, help="Tasks run at once.")
@click.option(
    "--engine",
    type=click.Choice(["embedded", "celery"]),
    default="embedded",
    show_default=True,
    help="embedded: claim from the store; celery: take messages from a Redis broker.",
)
@click.option("--lease", "lease_s", default=30.0, show_default=True, help="Lease seconds.")
@click.option("--poll", "poll_s", default=0.5, show_default=True, help="Idle poll seconds.")
@click.option("--until-idle", is_flag=True, help="Exit when no task is runnable (embedded).")
@click.option("--max-tasks", type=int, help="Exit after this many tasks (embedded).")
@click.option("--worker-id", help="Name in leases and runs (default: host:pid:random).")
@click.option("--output-dir", help="Certificates and reports (default: $DONEGATE_HOME).")
@click.option("--broker", envvar="DONEGATE_BROKER", help="Celery: the Redis URL.")
@click.option("--pool", default="prefork", show_default=True, help="Celery: the pool.")
@click.option("--visibility-timeout", type=float, help="Celery: Redis redelivery seconds.")
@click.option("--metrics-port", type=int, help="Serve Prometheus metrics on this port.")
@click.option(
    "--otel", is_flag=True, help="Emit OpenTelemetry spans (OTLP if installed, OTEL_* env)."
)
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug).")
@db_option
def worker_command(
    *,
    concurrency: int,
    engine: str,
    lease_s: float,
    poll_s: float,
    until_idle: bool,
    max_tasks: int | None,
    worker_id: str | None,
    output_dir: str | None,
    broker: str | None,
    pool: str,
    visibility_timeout: float | None,
    metrics_port: int | None,
    otel: bool,
    verbose: int,
    db: str | None,
) -> None:
    """Claim queued tasks, run them behind the completion gate, and record how they ended."""
    logging.basicConfig(
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    observers, sink_factory = _telemetry(metrics_port, otel)
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
        )
        return
    store = store_from(db, pool_size=concurrency + 2)
    worker = Worker(
        store,
        concurrency=concurrency,
        lease_s=lease_s,
        model_resolver=resolve_model,
        worker_id=worker_id,
        poll_s=poll_s,
        output_dir=output_dir,
        observers=observers,
        sink_factory=sink_factory,
    )
    stop = threading.Event()
    _on_signals(stop)
    click.echo(f"worker {worker.id} on {store.url} ({concurrency} at a time)", err=True)
    try:
        stats = worker.run(stop=stop, until_idle=until_idle, max_tasks=max_tasks)
    finally:
        store.close()
    done = ", ".join(f"{n} {s}" for s, n in sorted(stats.finished.items())) or "none finished"
    click.echo(f"worker {worker.id}: {stats.claimed} claimed; {done}", err=True)


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
) -> None:
    if not broker:
        raise UserError("--engine celery needs --broker redis://HOST:PORT/DB (or DONEGATE_BROKER)")
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
