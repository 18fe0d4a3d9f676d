"""Engines, transactions and migrations for the SQL store.

SQLite: WAL, a busy timeout, and every write transaction opened with ``BEGIN IMMEDIATE`` so a
claim's read and update happen under one write lock (threads of one process also queue on a lock
instead of spinning in SQLite's busy handler). PostgreSQL: a small pool with pre-ping; claims
use ``FOR UPDATE SKIP LOCKED``. Migrations run on open, under the write lock (SQLite) or an
advisory lock (PostgreSQL), so workers starting together migrate once.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import Connection, Engine, make_url

from donegate.config import data_dir
from donegate.errors import UserError

__all__ = ["Database", "default_url", "resolve_url"]

MIGRATIONS = str(Path(__file__).with_name("migrations"))
_MIGRATION_LOCK = 0x646F6E65  # "done": the PostgreSQL advisory lock held while migrating


def default_url() -> str:
    """``sqlite:///$DONEGATE_HOME/donegate.db`` (``DONEGATE_HOME`` defaults to ``~/.donegate``)."""
    home = data_dir()
    return f"sqlite:///{home / 'donegate.db'}"


def resolve_url(db: str | os.PathLike[str] | None = None) -> str:
    """A SQLAlchemy URL from ``--db``: a URL as given, a path as a SQLite file, None the default."""
    if db is None or str(db) == "":
        return default_url()
    text = os.fspath(db)
    if "://" in text:
        if text.startswith("postgresql://"):  # the bare scheme means psycopg2; we ship psycopg 3
            text = "postgresql+psycopg://" + text.removeprefix("postgresql://")
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


class Database:
    """One engine plus the transaction discipline the store relies on."""

    def __init__(self, url: str, *, pool_size: int = 5) -> None:
        try:
            parsed = make_url(url)
        except exc.ArgumentError:
            raise UserError(f"not a database URL: {url!r}") from None
        self.url = parsed.render_as_string(hide_password=True)
        self.dialect = parsed.get_backend_name()
        kwargs: dict[str, Any] = {}
        if self.dialect == "sqlite":
            database = parsed.database or ""
            if database and database != ":memory:" and not database.startswith("file:"):
                try:
                    Path(database).parent.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise UserError(f"cannot create the store at {self.url}: {e}") from None
            kwargs["connect_args"] = {"timeout": 60.0, "check_same_thread": False}
        elif self.dialect == "postgresql":
            kwargs.update(pool_size=pool_size, max_overflow=pool_size * 2, pool_pre_ping=True)
            kwargs["connect_args"] = {"connect_timeout": 10}
        else:
            raise UserError(f"unsupported store {self.url}: use sqlite or postgresql+psycopg")
        try:
            self.engine: Engine = sa.create_engine(parsed, **kwargs)
        except (exc.ArgumentError, exc.NoSuchModuleError, ImportError) as e:
            raise UserError(f"cannot open the store {self.url}: {_one_line(e)}") from None
        self._write_lock: threading.Lock | None = None
        if self.dialect == "sqlite":
            self._write_lock = threading.Lock()
            event.listen(self.engine, "connect", _sqlite_connect)
            event.listen(self.engine, "begin", _sqlite_begin)

    @property
    def is_sqlite(self) -> bool:
        """True for SQLite."""
        return self.dialect == "sqlite"

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite); commits on exit."""
        guard = self._write_lock if self._write_lock is not None else nullcontext()
        with guard, self._connect() as conn:
            conn.info["immediate"] = True
            try:
                with conn.begin():
                    yield conn
            finally:
                conn.info["immediate"] = False

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction (deferred on SQLite: WAL readers never block the writer)."""
        with self._connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        try:
            conn = self.engine.connect()
        except exc.OperationalError as e:
            raise UserError(f"cannot reach the store {self.url}: {_cause(e)}") from None
        with conn:
            yield conn

    def migrate(self) -> None:
        """Bring the schema to the newest named migration (forward only)."""
        from alembic import command  # alembic loads slowly; only needed here
        from alembic.config import Config

        logging.getLogger("alembic").setLevel(logging.WARNING)  # one line per open is noise
        config = Config()
        config.set_main_option("script_location", MIGRATIONS)
        try:
            with self.write() as conn:
                if self.dialect == "postgresql":
                    conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})"))
                config.attributes["connection"] = conn
                command.upgrade(config, "head")
        except exc.OperationalError as e:
            raise UserError(f"cannot reach the store {self.url}: {_cause(e)}") from None

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()


def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see _sqlite_begin)
    cursor = dbapi_conn.cursor()
    for pragma in (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        "busy_timeout=60000",
        "foreign_keys=ON",
    ):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("immediate") else "BEGIN")


def _cause(error: exc.DBAPIError) -> str:
    return _one_line(error.orig if error.orig is not None else error)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text[:300]
