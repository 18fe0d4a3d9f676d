"""``donegate escalations list|show|resolve|approve``: the human queue.

It holds escalations (stuck tasks) and reviews (``closure: human`` tasks whose claim passed
every gate, ``awaiting_review``). ``approve`` closes a review as done: a new certificate,
signed, with who approved it and when. ``resolve`` on a review rejects it (the task fails);
``resolve --requeue`` runs it again.
"""

from __future__ import annotations

import getpass
from dataclasses import asdict
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.cli._store import db_option, echo_json, fmt_time, store_from
from donegate.cli._types import ESCALATION, EscalationRef
from donegate.errors import UserError
from donegate.harness.certificate import approve_certificate
from donegate.store.sql import SqlStore

__all__ = ["escalations_group"]


@app.group("escalations")
def escalations_group() -> None:
    """Tasks handed to a person: read the report, then resolve, requeue or approve."""


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
    table = Table("id", "task", "kind", "status", "since", "why", box=None)
    for e in entries:
        table.add_row(
            str(e.id),
            escape(e.task_id),
            e.kind,
            e.status,
            fmt_time(e.created_at),
            escape(e.reason[:80]),
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
        echo_json({**asdict(entry), "report": entry.report.as_data()})
        return
    click.echo(f"{entry.kind} {entry.id} ({entry.status}) of task {entry.task_id}")
    if entry.resolved_by:
        click.echo(f"by: {entry.resolved_by}")
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


@escalations_group.command("approve")
@click.argument("target")
@click.option("--by", help="Who approves (default: the login name).")
@click.option("--note", help="What was checked, for the certificate.")
@db_option
def approve_command(target: str, by: str | None, note: str | None, db: str | None) -> None:
    """Approve a review: its task becomes done, with who and when in a new certificate.

    TARGET is a review's id in the queue (or its task's id), or the certificate a ``donegate
    run`` of a ``closure: human`` task left awaiting review.
    """
    name = by if by is not None else _login()
    if target.endswith(".json") or Path(target).is_file():
        path = approve_certificate(target, by=name, note=note)
        click.echo(f"approved by {name}: certificate {path}")
        return
    store = store_from(db, existing=True)
    try:
        number = _number(store, int(target) if target.isdigit() else target)
        entry = store.escalation(number) if number is not None else None
        if entry is None:
            raise UserError(f"no escalation {target}")
        if entry.kind != "review":
            raise UserError(f"escalation {entry.id} is not a review: resolve or requeue it")
        if entry.status != "open":
            raise UserError(f"review {entry.id} is already {entry.status}")
        pending = entry.report.review.certificate if entry.report.review is not None else ""
        if not pending:
            raise UserError(f"review {entry.id}: its report names no certificate to approve")
        path = approve_certificate(pending, by=name, note=note)
        try:
            store.approve(entry.id, by=name, note=note, certificate=str(path))
        except BaseException:
            Path(path).unlink(missing_ok=True)  # the queue did not take it: no stray "done"
            raise
    finally:
        store.close()
    click.echo(f"review {entry.id}: approved by {name}; task {entry.task_id} done; {path}")


def _login() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        raise UserError("cannot tell who you are: pass --by NAME") from None


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
