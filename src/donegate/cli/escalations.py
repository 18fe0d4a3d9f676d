"""``donegate escalations list|show|resolve|approve``: the human queue.

It holds escalations (stuck tasks) and reviews (``closure: human`` tasks whose claim passed
every gate, ``awaiting_review``). ``approve`` closes a review as done: a new certificate,
signed, with who approved it and when. ``resolve`` on a review rejects it (the task fails);
``resolve --requeue`` runs it again. Each is a reviewer's act: ``--token-file`` holds their
secret, and the action itself is `donegate.review`'s, the same the review UI and API call.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from donegate import review
from donegate.cli._app import app
from donegate.cli._console import make_console, print_rows
from donegate.cli._store import db_option, echo_json, fmt_time, store_from
from donegate.cli._temporal import wake
from donegate.cli._types import ESCALATION, EscalationRef
from donegate.cli.reviewers import needs_secret, reviewer_actor, token_file_option
from donegate.errors import UserError
from donegate.spend import parse_extra
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
    rows = [
        [str(e.id), e.task_id, e.kind, e.status, fmt_time(e.created_at), e.reason] for e in entries
    ]
    print_rows(make_console(), ["id", "task", "kind", "status", "since", "why"], rows)


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
@click.option(
    "--budget-extra",
    "budget_extra",
    multiple=True,
    metavar="KIND=AMOUNT",
    help="With --requeue: raise the task's budget, usd=0.50 or tokens=10000 (repeatable).",
)
@token_file_option("resolving or requeueing")
@db_option
def resolve_command(
    *,
    escalation_id: EscalationRef,
    note: str | None,
    requeue: bool,
    instructions: str | None,
    budget_extra: tuple[str, ...],
    token_file: str | None,
    db: str | None,
) -> None:
    """Close an escalation with a note, or requeue its task with instructions.

    ESCALATION_ID is the escalation's number, or a task id for that task's open escalation.
    A task whose budget was exhausted goes on from what it spent: --budget-extra grants more.
    Needs a reviewer's --token-file (donegate reviewers add).
    """
    extra: dict[str, float] = {}
    for text in budget_extra:
        kind, amount = parse_extra(text)
        extra[kind] = extra.get(kind, 0) + amount
    what = "requeueing" if requeue else "resolving"
    needs_secret(token_file, what=what)
    store = store_from(db, existing=True)
    try:
        actor = reviewer_actor(store, token_file, what=what)
        number = _number(store, escalation_id)
        if number is None:
            raise UserError(f"no escalation {escalation_id}")
        if requeue:
            entry = review.requeue(
                store, number, actor=actor, instructions=instructions, note=note,
                budget_extra=extra,
            )  # fmt: skip
        else:
            if instructions:
                raise UserError("--instructions only go with --requeue")
            if extra:
                raise UserError("--budget-extra only goes with --requeue")
            entry = review.resolve(store, number, actor=actor, note=note)
        wake(store, entry.task_id, "requeue" if requeue else "resolve", escalation=entry.id)
    finally:
        store.close()
    done = "requeued" if requeue else "resolved"
    click.echo(f"escalation {entry.id}: {done}; task {entry.task_id}")


@escalations_group.command("approve")
@click.argument("target")
@click.option("--by", help="Your reviewer name (checked against --token-file's secret).")
@click.option("--note", help="What was checked, for the certificate.")
@token_file_option("approving")
@db_option
def approve_command(
    target: str, by: str | None, note: str | None, token_file: str | None, db: str | None
) -> None:
    """Approve a review: its task becomes done, with who and when in a new certificate.

    TARGET is a review's id in the queue (or its task's id), or the certificate a ``donegate
    run`` of a ``closure: human`` task left awaiting review. Needs a reviewer's --token-file
    (donegate reviewers add); the certificate records the reviewer, the channel (cli), your OS
    user and the time.
    """
    needs_secret(token_file, what="approving", by=by)
    store = store_from(db, existing=True)
    try:
        actor = reviewer_actor(store, token_file, what="approving", by=by)
        if target.endswith(".json") or Path(target).is_file():
            path = review.approve_file(store, target, actor=actor, note=note)
            click.echo(f"approved by {actor.name}: certificate {path}")
            return
        number = _number(store, int(target) if target.isdigit() else target)
        if number is None:
            raise UserError(f"no escalation {target}")
        approved = review.approve(store, number, actor=actor, note=note)
        wake(
            store, approved.escalation.task_id, "approve", by=actor.name,
            escalation=approved.escalation.id,
        )  # fmt: skip
    finally:
        store.close()
    entry = approved.escalation
    click.echo(
        f"review {entry.id}: approved by {actor.name}; task {entry.task_id} done; "
        f"{approved.certificate}"
    )


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
