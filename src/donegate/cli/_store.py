"""Shared by the queue commands: the ``--db`` option, opening the store, resolving models."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from donegate.config import DB_ENV
from donegate.errors import UserError

if TYPE_CHECKING:
    from donegate.models.base import Model
    from donegate.store.sql import SqlStore

# The store (SQLAlchemy) and the models are imported by the functions that use them: a queue
# command's --help, and `db_option` at import, need neither.

__all__ = ["db_option", "echo_json", "fmt_time", "resolve_model", "store_from"]

F = TypeVar("F", bound=Callable[..., Any])

SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def db_option(f: F) -> F:
    """``--db URL|PATH`` (env ``DONEGATE_DB``); the default is ``$DONEGATE_HOME/donegate.db``."""
    option = click.option(
        "--db",
        envvar=DB_ENV,
        metavar="URL|PATH",
        help="The store: a SQLite path or a postgresql+psycopg:// URL "
        "(default: $DONEGATE_HOME/donegate.db).",
    )
    return option(f)


def store_from(db: str | None, *, pool_size: int = 5, existing: bool = False) -> SqlStore:
    """Open the store ``--db`` names (one-line `UserError` when it cannot be used).

    With `existing` (every command but ``submit`` and ``worker``) a SQLite store must already
    be there: a command that only reads, or acts on tasks already queued, never creates a file
    or a folder. A file that is not SQLite is refused before SQLite touches it.
    """
    from sqlalchemy import exc as sa_exc

    from donegate.store import open_store
    from donegate.store._db import resolve_url

    url = resolve_url(db)
    path = _sqlite_path(url)
    if path is not None:
        _check_sqlite_file(path, existing=existing)
    try:
        return open_store(url, pool_size=pool_size)
    except sa_exc.SQLAlchemyError as exc:
        raise UserError(f"cannot open the store {path or url}: {_first_line(exc)}") from None


def _sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL; None for another database or an in-memory one."""
    from sqlalchemy import exc as sa_exc
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except sa_exc.ArgumentError:
        return None  # Database reports it, in one line
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    if database.startswith("file:"):
        return None
    return Path(database)


def _check_sqlite_file(path: Path, *, existing: bool) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        if existing:
            raise UserError(
                f"no store at {path}: nothing was submitted there (pass --db, or set DONEGATE_DB)"
            ) from None
        return
    except OSError as exc:
        raise UserError(f"cannot open the store {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"cannot open the store {path}: not a regular file")
    if st.st_size == 0:
        if existing:
            raise UserError(f"no store at {path}: the file is empty")
        return  # SQLite makes an empty file a new database
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise UserError(f"cannot open the store {path}: {exc.strerror or exc}") from None
    if header != SQLITE_HEADER:
        raise UserError(f"cannot open the store {path}: not a SQLite database")


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0][:300] if text else type(exc).__name__


def resolve_model(value: str, what: str = "model") -> Model:
    """``provider:model`` or ``script:FILE`` through `infer_model`; errors name `what`."""
    from donegate.models.infer import SCRIPT_SCHEME, infer_model

    try:
        return infer_model(value)
    except UserError as exc:
        if not value.startswith(SCRIPT_SCHEME):
            raise
        raise UserError(f"{what} {exc}") from None


def echo_json(value: Any) -> None:
    """One JSON document on stdout."""
    click.echo(json.dumps(value, indent=2, default=str))


def fmt_time(ts: float | None) -> str:
    """Local time for tables, ``-`` for none."""
    if ts is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
