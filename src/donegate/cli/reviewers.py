"""``donegate reviewers add|list|remove``: the people who may approve, resolve and requeue.

``add NAME`` prints the reviewer's secret once, on stdout alone (``donegate reviewers add ann >
~/.config/donegate/ann.token``); the store keeps only its hash. The secret is the review UI's
login, the API's bearer, and the file ``--token-file`` names on the CLI. Once the store has a
reviewer, adding or removing one needs a reviewer's ``--token-file``: a process that could add
itself could approve itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.cli._store import db_option, echo_json, fmt_time, store_from
from donegate.errors import NotAReviewer, UserError
from donegate.review import Actor, add_reviewer, authenticate, login_name, read_token_file
from donegate.review.reviewers import check_name
from donegate.store.sql import SqlStore

__all__ = ["needs_secret", "reviewer_actor", "reviewers_group", "token_file_option"]

F = TypeVar("F", bound=Callable[..., Any])


def token_file_option(what: str) -> Callable[[F], F]:
    """``--token-file PATH``: the file holding a reviewer's secret."""
    return click.option(
        "--token-file",
        "token_file",
        metavar="PATH",
        help=f"A file holding your reviewer secret (donegate reviewers add): {what} needs it.",
    )


def reviewer_actor(
    store: SqlStore, token_file: str | None, *, what: str, by: str | None = None
) -> Actor:
    """The reviewer a ``--token-file`` proves, acting from the CLI; `NotAReviewer` otherwise.

    `by` (``--by``) may only repeat that reviewer's name: a name alone proves nothing.
    """
    reviewer = authenticate(store, read_token_file(needs_secret(token_file, what=what, by=by)))
    if by is not None and by != reviewer.name:
        raise NotAReviewer(f"--by {by}: the secret in --token-file is {reviewer.name}'s")
    return Actor(name=reviewer.name, channel="cli", os_user=login_name())


def needs_secret(token_file: str | None, *, what: str, by: str | None = None) -> str:
    """`token_file`, or `NotAReviewer` saying how to give one (checked before the store opens)."""
    if token_file is None:
        said = f" (--by {by} alone is not enough)" if by is not None else ""
        raise NotAReviewer(
            f"{what} needs a reviewer's secret: pass --token-file PATH{said}; "
            "donegate reviewers add NAME prints one"
        )
    return token_file


@app.group("reviewers")
def reviewers_group() -> None:
    """The people who may approve, resolve and requeue: a secret each, only its hash kept."""


@reviewers_group.command("add")
@click.argument("name")
@token_file_option("adding a reviewer to a store that has some")
@db_option
def add_command(name: str, token_file: str | None, db: str | None) -> None:
    """Add reviewer NAME and print their secret, once, on stdout.

    Keep it outside every workdir an agent writes (a file in your home is hidden from the
    sandbox). The first reviewer of a store is added freely; after that, a reviewer's
    --token-file is needed.
    """
    check_name(name)
    store = store_from(db)
    try:
        if store.reviewers():
            reviewer_actor(store, token_file, what="adding a reviewer")
        secret = add_reviewer(store, name)
    finally:
        store.close()
    click.echo(secret)
    click.echo(
        f"reviewer {name} added: the secret above is shown only now. It is the review UI's "
        "login, the API's bearer, and what --token-file holds; keep it out of every workdir.",
        err=True,
    )


@reviewers_group.command("list")
@click.option("--json", "as_json", is_flag=True)
@db_option
def list_command(as_json: bool, db: str | None) -> None:
    """The reviewers, by name (never their secrets)."""
    store = store_from(db, existing=True)
    try:
        found = store.reviewers()
    finally:
        store.close()
    if as_json:
        echo_json([{"name": r.name, "created_at": r.created_at} for r in found])
        return
    table = Table("name", "added", box=None)
    for r in found:
        table.add_row(escape(r.name), fmt_time(r.created_at))
    make_console().print(table)


@reviewers_group.command("remove")
@click.argument("name")
@token_file_option("removing a reviewer")
@db_option
def remove_command(name: str, token_file: str | None, db: str | None) -> None:
    """Remove reviewer NAME: their secret stops working at once, UI sessions included."""
    needs_secret(token_file, what="removing a reviewer")
    store = store_from(db, existing=True)
    try:
        reviewer_actor(store, token_file, what="removing a reviewer")
        if not store.remove_reviewer(name):
            raise UserError(f"no reviewer {name!r} (donegate reviewers list)")
    finally:
        store.close()
    click.echo(f"reviewer {name} removed")
