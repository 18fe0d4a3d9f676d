"""Shared by the queue commands: the ``--db`` option, opening the store, resolving models."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from donegate.errors import UserError
from donegate.models.base import Model
from donegate.models.infer import infer_model
from donegate.store import open_store
from donegate.store.sql import SqlStore

__all__ = ["db_option", "echo_json", "fmt_time", "resolve_model", "store_from"]

F = TypeVar("F", bound=Callable[..., Any])


def db_option(f: F) -> F:
    """``--db URL|PATH`` (env ``DONEGATE_DB``); the default is ``$DONEGATE_HOME/donegate.db``."""
    option = click.option(
        "--db",
        envvar="DONEGATE_DB",
        metavar="URL|PATH",
        help="The store: a SQLite path or a postgresql+psycopg:// URL "
        "(default: $DONEGATE_HOME/donegate.db).",
    )
    return option(f)


def store_from(db: str | None, *, pool_size: int = 5) -> SqlStore:
    """Open the store ``--db`` names (one-line `UserError` when it cannot be used)."""
    return open_store(db, pool_size=pool_size)


@functools.lru_cache(maxsize=256)
def _script(path: str, mtime: float) -> Any:
    from donegate.testing.script import load_script

    return load_script(path)


def resolve_model(value: str, what: str = "model") -> Model:
    """``provider:model`` through `infer_model`; ``script:FILE`` as a fresh script player.

    Parsed scripts are cached by path and modification time: a worker running many tasks that
    share a script parses it once, yet every task gets its own player (players keep state).
    """
    if value.startswith("script:"):
        from donegate.testing.player import ScriptedModel

        path = Path(value.removeprefix("script:"))
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            raise UserError(f"{what} {value!r}: no such script file") from None
        return ScriptedModel(_script(str(path), mtime), name=f"script:{path.name}")
    return infer_model(value)


def echo_json(value: Any) -> None:
    """One JSON document on stdout."""
    click.echo(json.dumps(value, indent=2, default=str))


def fmt_time(ts: float | None) -> str:
    """Local time for tables, ``-`` for none."""
    if ts is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
