"""``donegate outbox list|retry``: the final-outcome notifications and their delivery state.

A worker delivers them (see `donegate.worker.outbox`); ``retry`` makes a delivered or failed
one pending again, attempts from zero, for the next worker's courier to send with its key.
"""

from __future__ import annotations

import click

from donegate.cli._app import app
from donegate.cli._console import make_console, print_rows
from donegate.cli._store import db_option, echo_json, fmt_time, store_from
from donegate.cli._types import TASK_ID

__all__ = ["outbox_group"]


@app.group("outbox")
def outbox_group() -> None:
    """Notifications of tasks' ends: webhooks and commands, and how their delivery stands."""


@outbox_group.command("list")
@click.option("--task", "task_id", type=TASK_ID, help="Only this task's.")
@click.option(
    "--state", type=click.Choice(["pending", "delivered", "failed"]), help="Only this state."
)
@click.option("--json", "as_json", is_flag=True)
@db_option
def list_command(task_id: str | None, state: str | None, as_json: bool, db: str | None) -> None:
    """Notifications, newest first."""
    store = store_from(db, existing=True)
    try:
        rows = store.outbox(task_id=task_id, state=state)
    finally:
        store.close()
    if as_json:
        echo_json([{**n.public(), "task_id": n.task_id} for n in rows])
        return
    lines = [
        [
            str(n.id),
            n.task_id,
            n.key,
            n.public()["target"],
            n.state,
            f"{n.attempts}/{n.max_attempts}",
            fmt_time(n.delivered_at) if n.delivered_at else "",
            n.last_error or "",
        ]
        for n in rows
    ]
    headers = ["id", "task", "key", "target", "state", "attempts", "delivered", "last error"]
    print_rows(make_console(), headers, lines)


@outbox_group.command("retry")
@click.argument("notification_id", type=click.IntRange(min=1), metavar="ID")
@click.option("--json", "as_json", is_flag=True)
@db_option
def retry_command(notification_id: int, as_json: bool, db: str | None) -> None:
    """Send notification ID again (a worker's courier delivers it, with the same key)."""
    store = store_from(db, existing=True)
    try:
        n = store.outbox_retry(notification_id)
    finally:
        store.close()
    if as_json:
        echo_json(n.public())
        return
    click.echo(f"notification {n.id} ({n.key}) pending again")
