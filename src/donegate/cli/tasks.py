"""``donegate submit`` and ``donegate tasks list|show|retry|cancel``: the task queue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any
from urllib.parse import urlsplit

import click
from rich.markup import escape

from donegate.cli._app import app
from donegate.cli._console import make_console, print_rows
from donegate.cli._store import db_option, echo_json, fmt_time, store_from
from donegate.cli._temporal import start_workflow, temporal_options
from donegate.cli._types import COUNT, TASK_ID
from donegate.cli.check import refuse_bad_task
from donegate.config import BROKER_ENV
from donegate.errors import UserError
from donegate.results import Spend
from donegate.store import TaskRecord
from donegate.store.sql import SqlStore
from donegate.worker import submit
from donegate.worker.tasks import prepare

__all__ = ["submit_command", "tasks_group"]

STATUSES = ("pending", "running", "done", "awaiting_review", "escalated", "failed", "cancelled")


@app.command("submit")
@click.argument("task", type=click.Path(dir_okay=False))
@click.option(
    "--id",
    "task_id",
    type=TASK_ID,
    help="The task id (default: the spec's); resubmitting is a no-op.",
)
@click.option("--model", "model", help="The agent model (overrides the task's): provider:model "
              "or script:FILE.")  # fmt: skip
@click.option(
    "--max-attempts", default=5, show_default=True, type=COUNT, help="Claims before escalation."
)
@click.option("--json", "as_json", is_flag=True, help="Print the task as JSON.")
@click.option("--broker", envvar=BROKER_ENV, help="Also send a Celery message (Redis URL).")
@click.option(
    "--engine",
    type=click.Choice(["embedded", "celery", "temporal"]),
    default="embedded",
    show_default=True,
    help="temporal: also start the task's workflow (its id the task id).",
)
@temporal_options
@click.option("--no-preflight", is_flag=True,
              help="Skip the checks that look at this machine (programs on PATH).")  # fmt: skip
@db_option
def submit_command(
    *,
    task: str,
    no_preflight: bool,
    task_id: str | None,
    model: str | None,
    max_attempts: int,
    as_json: bool,
    broker: str | None,
    db: str | None,
    engine: str,
    temporal_address: str,
    namespace: str,
    task_queue: str,
) -> None:
    """Queue TASK (a YAML or JSON task file) for the workers.

    The task runs in its workdir, stored as an absolute path (default: TASK's folder), wherever
    the worker was started; a task with no model (in the file or --model) is refused here.
    """
    if engine == "celery" and not broker:
        raise UserError("--engine celery needs --broker redis://HOST:PORT/DB (or DONEGATE_BROKER)")
    if broker and urlsplit(broker).scheme not in ("redis", "rediss"):
        raise click.BadParameter(f"{broker!r} is not a redis:// URL", param_hint="'--broker'")
    refuse_bad_task(task, machine=not no_preflight)  # what `donegate check` reports
    spec = prepare(task, task_id=task_id, model=model)  # every problem, before the store opens
    store = store_from(db)
    try:
        record, created = submit(spec, store, max_attempts=max_attempts)
    finally:
        store.close()
    if broker and record.status == "pending":
        from donegate.worker.celery_app import client, enqueue

        try:
            enqueue(client(broker), record.id)
        except Exception as exc:  # kombu's connection errors; the stored task is safe
            raise UserError(
                f"{record.id}: queued in the store, but no message reached {broker}: "
                f"{exc}; submit it again once the broker is up"
            ) from None
    if engine == "temporal":
        started = start_workflow(record.id, temporal_address, namespace, task_queue)
        if as_json:
            echo_json(
                {"id": record.id, "status": record.status, "created": created, "workflow": started}
            )
            return
        what = "workflow started" if started else "its workflow already started"
        click.echo(f"{record.id}: {'submitted' if created else 'already submitted'}; {what}")
        return
    if as_json:
        echo_json({"id": record.id, "status": record.status, "created": created})
        return
    verb = "submitted" if created else "already submitted"
    click.echo(f"{record.id}: {verb} ({record.status})")


@app.group("tasks")
def tasks_group() -> None:
    """Inspect and steer queued tasks."""


@tasks_group.command("list")
@click.option("--status", type=click.Choice(STATUSES), help="Only tasks with this status.")
@click.option("--limit", default=50, show_default=True, type=COUNT)
@click.option("--json", "as_json", is_flag=True)
@db_option
def list_command(status: str | None, limit: int, as_json: bool, db: str | None) -> None:
    """The newest tasks, with their status and attempts."""
    store = store_from(db, existing=True)
    try:
        records = store.list_tasks(status=status, limit=limit)
    finally:
        store.close()
    if as_json:
        echo_json([_brief(r) for r in records])
        return
    rows = [
        [r.id, r.type or "-", r.status, str(r.attempts), fmt_time(r.updated_at), r.reason or ""]
        for r in records
    ]
    print_rows(make_console(), ["id", "type", "status", "attempts", "updated", "reason"], rows)


@tasks_group.command("show")
@click.argument("task_id", type=TASK_ID)
@click.option("--json", "as_json", is_flag=True)
@click.option("--transcript", is_flag=True, help="Print the last run's messages too.")
@db_option
def show_command(task_id: str, as_json: bool, transcript: bool, db: str | None) -> None:
    """One task: its record, runs, checklist, side effects and (optionally) transcript."""
    store = store_from(db, existing=True)
    try:
        detail = _detail(store, task_id, transcript)
    finally:
        store.close()
    if as_json:
        echo_json(detail)
        return
    console = make_console()
    task = detail["task"]
    kind = f"  type {escape(task['type'])}" if task["type"] else ""  # no "type=None"
    console.print(f"[bold]{escape(task['id'])}[/] {task['status']}{kind}")
    console.print(f"attempts {task['attempts']}/{task['max_attempts']}  gen {task['generation']}")
    if task["reason"]:
        console.print(f"reason: {escape(task['reason'])}")
    certificate = (task["result"] or {}).get("certificate")
    if certificate:
        console.print(f"certificate: {escape(str(certificate))}", highlight=False, soft_wrap=True)
    if detail["spend"] is not None:
        budget = task["spec"].get("budget") or {}
        limit = ", ".join(f"{k} {v}" for k, v in budget.items() if v is not None)
        console.print(f"spend{f' (budget {limit})' if limit else ''}:", highlight=False)
        console.print(escape(Spend.from_data(detail["spend"]).render()), highlight=False)
    for run in detail["runs"]:
        console.print(
            f"  run {run['id']}  attempt {run['attempt']}  {run['status']:<9} "
            f"{run['model_calls']} calls  {run['continuations']} continuations  "
            f"{escape(run['worker_id'])}  {escape(run['reason'] or '')}"
        )
    for item, status, note in detail["checklist"]:
        box = escape(f"[{'x' if status == 'done' else ' '}]")  # "[x]" is markup unescaped
        console.print(f"  {box} {escape(item)}" + (f" {escape(note)}" if note else ""))
    for effect in detail["effects"]:
        console.print(f"  effect {escape(effect['key'])}: {effect['state']} x{effect['issues']}")
    for n in detail["notifications"]:
        error = f"  {escape(n['last_error'])}" if n["last_error"] else ""
        console.print(
            f"  notify {n['id']} {n['kind']} {escape(n['target'])}: {n['state']} "
            f"({n['attempts']}/{n['max_attempts']} attempts) key {escape(n['key'])}{error}"
        )
    for message in detail.get("transcript", []):
        console.print(f"  {message['role']:>9}: {escape(message['text'][:200])}")


def _detail(store: SqlStore, task_id: str, transcript: bool) -> dict[str, Any]:
    record = store.get(task_id)
    if record is None:
        raise UserError(f"no task {task_id!r}")
    runs = store.runs(task_id)
    detail: dict[str, Any] = {
        "task": {**asdict(record), "spec": dict(record.spec)},
        "runs": [asdict(r) for r in runs],
        "checklist": store.checklist(task_id),
        "effects": store.effects(task_id),
        "notifications": [n.public() for n in store.outbox(task_id=task_id)],
        "spend": _spend(record.result),
    }
    if transcript and runs:
        detail["transcript"] = [
            {
                "role": m.role,
                "text": m.text
                or ", ".join(f"{c.name}({c.arguments_raw})" for c in m.tool_calls)
                or " | ".join(r.content for r in m.results),
            }
            for m in store.transcript(runs[-1].id)
        ]
    return detail


def _spend(result: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The spend the task's last finished run recorded (its earlier runs' included)."""
    spend = Spend.from_data((result or {}).get("spend"))
    return spend.as_data() if spend.lines else None


@tasks_group.command("retry")
@click.argument("task_id", type=TASK_ID)
@click.option("--instructions", help="Extra instructions added to the prompt.")
@db_option
def retry_command(task_id: str, instructions: str | None, db: str | None) -> None:
    """Queue a failed, escalated or cancelled task again (a new run, fresh idempotency keys)."""
    store = store_from(db, existing=True)
    try:
        record = store.retry(task_id, instructions=instructions)
    finally:
        store.close()
    click.echo(f"{record.id}: {record.status} (generation {record.generation})")


@tasks_group.command("cancel")
@click.argument("task_id", type=TASK_ID)
@click.option("--reason", default="cancelled", show_default=True)
@db_option
def cancel_command(task_id: str, reason: str, db: str | None) -> None:
    """Cancel a pending or running task (a running worker is fenced out)."""
    store = store_from(db, existing=True)
    try:
        record = store.cancel(task_id, reason)
    finally:
        store.close()
    click.echo(f"{record.id}: {record.status}")


def _brief(r: TaskRecord) -> dict[str, Any]:
    return {
        "id": r.id,
        "type": r.type,
        "status": r.status,
        "attempts": r.attempts,
        "generation": r.generation,
        "updated_at": r.updated_at,
        "reason": r.reason,
    }
