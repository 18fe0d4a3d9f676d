"""``donegate escalations list|show|resolve``: the human queue."""

from __future__ import annotations

from dataclasses import asdict

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from donegate.cli._app import app
from donegate.cli._store import db_option, echo_json, fmt_time, store_from
from donegate.errors import UserError

__all__ = ["escalations_group"]


@app.group("escalations")
def escalations_group() -> None:
    """Tasks handed to a person: read the report, then resolve or requeue."""


@escalations_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Resolved and requeued ones too.")
@click.option("--json", "as_json", is_flag=True)
@db_option
def list_command(show_all: bool, as_json: bool, db: str | None) -> None:
    """Open escalations, oldest first."""
    store = store_from(db)
    try:
        entries = store.escalations(status=None if show_all else "open")
    finally:
        store.close()
    if as_json:
        echo_json([{k: v for k, v in asdict(e).items() if k != "report"} for e in entries])
        return
    table = Table("id", "task", "status", "since", "why", box=None)
    for e in entries:
        table.add_row(
            str(e.id), escape(e.task_id), e.status, fmt_time(e.created_at), escape(e.reason[:80])
        )
    Console().print(table)


@escalations_group.command("show")
@click.argument("escalation_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="The full report as JSON.")
@db_option
def show_command(escalation_id: int, as_json: bool, db: str | None) -> None:
    """The report: what was attempted, what is left, why it is stuck."""
    store = store_from(db)
    try:
        entry = store.escalation(escalation_id)
    finally:
        store.close()
    if entry is None:
        raise UserError(f"no escalation {escalation_id}")
    if as_json:
        echo_json(asdict(entry))
        return
    click.echo(f"escalation {entry.id} ({entry.status}) of task {entry.task_id}")
    if entry.note:
        click.echo(f"note: {entry.note}")
    if entry.instructions:
        click.echo(f"instructions: {entry.instructions}")
    click.echo("")
    click.echo(entry.report_md.rstrip())


@escalations_group.command("resolve")
@click.argument("escalation_id", type=int)
@click.option("--note", help="What was done about it.")
@click.option("--requeue", is_flag=True, help="Run the task again (a new generation).")
@click.option("--instructions", help="With --requeue: added to the task's prompt.")
@db_option
def resolve_command(
    escalation_id: int,
    note: str | None,
    requeue: bool,
    instructions: str | None,
    db: str | None,
) -> None:
    """Close an escalation with a note, or requeue its task with instructions."""
    store = store_from(db)
    try:
        entry = store.resolve(escalation_id, note=note, requeue=requeue, instructions=instructions)
    finally:
        store.close()
    what = "requeued" if requeue else "resolved"
    click.echo(f"escalation {entry.id}: {what}; task {entry.task_id}")
