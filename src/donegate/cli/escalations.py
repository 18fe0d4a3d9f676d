"""``donegate escalations list|show|resolve``: the human queue."""

from __future__ import annotations

from dataclasses import asdict

import click
from rich.markup import escape
from rich.table import Table

from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.cli._store import db_option, echo_json, fmt_time, store_from
from donegate.cli._types import ESCALATION, EscalationRef
from donegate.errors import UserError
from donegate.store.sql import SqlStore

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
    store = store_from(db, existing=True)
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
    make_console().print(table)


@escalations_group.command("show")
@click.argument("escalation_id", type=ESCALATION)
@click.option("--json", "as_json", is_flag=True, help="The full report as JSON.")
@db_option
def show_command(escalation_id: EscalationRef, as_json: bool, db: str | None) -> None:
    """The report: what was attempted, what is left, why it is stuck.

    ESCALATION_ID is the escalation's number, or a task id for that task's newest escalation.
    """
    store = store_from(db, existing=True)
    try:
        number = _number(store, escalation_id)
        entry = store.escalation(number) if number is not None else None
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
@click.argument("escalation_id", type=ESCALATION)
@click.option("--note", help="What was done about it.")
@click.option("--requeue", is_flag=True, help="Run the task again (a new generation).")
@click.option("--instructions", help="With --requeue: added to the task's prompt.")
@db_option
def resolve_command(
    escalation_id: EscalationRef,
    note: str | None,
    requeue: bool,
    instructions: str | None,
    db: str | None,
) -> None:
    """Close an escalation with a note, or requeue its task with instructions.

    ESCALATION_ID is the escalation's number, or a task id for that task's open escalation.
    """
    store = store_from(db, existing=True)
    try:
        number = _number(store, escalation_id)
        if number is None:
            raise UserError(f"no escalation {escalation_id}")
        entry = store.resolve(number, note=note, requeue=requeue, instructions=instructions)
    finally:
        store.close()
    what = "requeued" if requeue else "resolved"
    click.echo(f"escalation {entry.id}: {what}; task {entry.task_id}")


def _number(store: SqlStore, ref: EscalationRef) -> int | None:
    """The escalation a reference means: a number that exists, else the task's newest one.

    A task's open escalation wins over its resolved ones; a digits-only task id is tried as a
    task id when no escalation has that number.
    """
    if isinstance(ref, int) and store.escalation(ref) is not None:
        return ref
    task_id = str(ref)
    mine = [e for e in store.escalations(status=None) if e.task_id == task_id]
    if not mine:
        return None
    open_ = [e for e in mine if e.status == "open"]
    return max(e.id for e in (open_ or mine))
