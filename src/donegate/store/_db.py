"""Engines, transactions and migrations for the SQL store.

SQLite: WAL, a busy timeout, and every write transaction opened with ``BEGIN IMMEDIATE`` so a
claim's read and update happen under one write lock (threads of one process also queue on a lock
instead of spinning in SQLite's busy handler). PostgreSQL: a small pool whose connections are
pinged before use only when they sat idle (`_IDLE_PING_S`; a ping on every checkout would add
a round trip to each transaction); claims use ``FOR UPDATE SKIP LOCKED``. Migrations run on
open, under the write lock (SQLite) or an advisory lock (PostgreSQL), so workers starting
together migrate once.

Driver errors that mean the store itself failed are translated here, at the boundary, into one
`StoreError` line naming the store: it stopped answering (`StoreUnavailable`, which `patient`
store methods retry with backoff for `Database.patience_s`), its disk is full (`DiskFull`), or
it cannot write at all. A SQLite file is pinned by identity (device, inode) once open: every
transaction first checks that the path still names that file (`StoreGone` when it was deleted
or replaced), and later connections open it ``mode=rw``, so a vanished file is never recreated
empty behind the process's back.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import random
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import Connection, Engine, make_url

from donegate.config import data_path
from donegate.errors import DiskFull, StoreError, StoreGone, StoreUnavailable, UserError
from donegate.sandbox import own
from donegate.store._writelock import WriteLock

__all__ = ["Database", "default_url", "patient", "resolve_url"]

log = logging.getLogger("donegate.store")

MIGRATIONS = str(Path(__file__).with_name("migrations"))
_MIGRATION_LOCK = 0x646F6E65  # "done": the PostgreSQL advisory lock held while migrating


def default_url() -> str:
    """``sqlite:///$DONEGATE_HOME/donegate.db`` (``DONEGATE_HOME`` defaults to ``~/.donegate``)."""
    return f"sqlite:///{data_path('db')}"


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
            kwargs.update(pool_size=pool_size, max_overflow=pool_size * 2)
            kwargs["connect_args"] = {"connect_timeout": 10}
        else:
            raise UserError(f"unsupported store {self.url}: use sqlite or postgresql+psycopg")
        try:
            self.engine: Engine = sa.create_engine(parsed, **kwargs)
        except (exc.ArgumentError, exc.NoSuchModuleError, ImportError) as e:
            raise UserError(f"cannot open the store {self.url}: {_one_line(e)}") from None
        self.patience_s = 0.0
        """How long `patient` calls retry a store that stopped answering (0: not at all)."""
        self._write_lock: threading.Lock | None = None
        self._file: str | None = None  # the SQLite file, once pinned
        self._identity: tuple[int, int] | None = None
        self._reserve: str | None = None  # disk held for a full disk's put-backs
        self._writer: Connection | None = None  # SQLite's write connection (see `write`)
        self._file_lock: WriteLock | None = None  # shared with other processes, once pinned
        if self.dialect == "sqlite":
            self._write_lock = threading.Lock()
            event.listen(self.engine, "do_connect", self._sqlite_do_connect)
            event.listen(self.engine, "connect", _sqlite_connect)
            event.listen(self.engine, "begin", _sqlite_begin)
        else:
            event.listen(self.engine, "checkin", _checked_in)
            event.listen(self.engine, "checkout", _ping_if_idle)

    @property
    def is_sqlite(self) -> bool:
        """True for SQLite."""
        return self.dialect == "sqlite"

    def pin(self) -> None:
        """Remember which file a SQLite store is (device, inode); later connections must find it.

        Called once the store is open and migrated (the file exists by then).
        """
        if self.dialect != "sqlite":
            return
        database = self.engine.url.database or ""
        if not database or database == ":memory:" or database.startswith("file:"):
            return
        path = os.path.abspath(database)
        st = os.stat(path)
        self._file, self._identity = path, (st.st_dev, st.st_ino)
        own(path)  # never opened again by this process's room copy or file walks
        if self._file_lock is None:
            self._file_lock = WriteLock(path)

    @contextmanager
    def write(self, *, foreign_keys: bool = True) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite); commits on exit.

        SQLite's writes are serialized by the write lock, so they share one connection kept
        out of the pool (`_writer`): a write costs no checkout, check-in and reset. It is
        dropped after any driver error (the next write opens a fresh one). ``foreign_keys=False``
        turns SQLite's foreign keys off for the transaction (a migration that rebuilds a parent
        table needs it; SQLite reads the pragma only outside a transaction), on again after.
        """
        lock = self._write_lock
        if lock is None:
            with self._translated(), self._connect() as conn, conn.begin():
                yield conn
            return
        with lock, self._file_lock.held() if self._file_lock is not None else _NOTHING:
            self._check_identity()
            writer = self._writer
            if writer is None or writer.closed or writer.invalidated:
                writer = self._open()
                self._writer = writer
            try:
                writer.info["immediate"] = True
                if not foreign_keys:
                    _pragma(writer, "foreign_keys=OFF")
                try:
                    with writer.begin():
                        yield writer
                finally:
                    writer.info["immediate"] = False
                    if not foreign_keys:
                        _pragma(writer, "foreign_keys=ON")
            except exc.DBAPIError as e:
                self._drop_writer()
                error = self._translate(e)
                if error is None:
                    raise
                raise error from None

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction (deferred on SQLite: WAL readers never block the writer)."""
        with self._translated(), self._connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        self._check_identity()
        with self._open() as conn:
            yield conn

    def _open(self) -> Connection:
        try:
            return self.engine.connect()
        except exc.DBAPIError as e:
            error = self._translate(e)
            if error is None or isinstance(error, StoreUnavailable):
                error = StoreUnavailable(f"cannot reach the store {self.url}: {_cause(e)}")
            raise error from None

    def _drop_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):  # a broken connection may not close cleanly
                writer.close()

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except exc.DBAPIError as e:
            error = self._translate(e)
            if error is None:
                raise
            raise error from None

    def _check_identity(self) -> None:
        if self._identity is None or self._file is None:
            return
        try:
            st = os.stat(self._file)
        except FileNotFoundError:
            raise StoreGone(
                f"the store file {self._file} was deleted under this process; nothing more is "
                "written to it"
            ) from None
        except OSError as e:
            raise StoreGone(
                f"the store file {self._file} cannot be checked: {e.strerror}"
            ) from None
        if (st.st_dev, st.st_ino) != self._identity:
            raise StoreGone(
                f"the store file {self._file} was replaced under this process (inode "
                f"{self._identity[1]}, now {st.st_ino}); nothing more is written to either"
            )

    def _translate(self, error: exc.DBAPIError) -> StoreError | None:
        """The `StoreError` a driver error means, or None when it is not the store failing."""
        orig = error.orig
        cause = _cause(error)
        if isinstance(orig, sqlite3.Error):
            extended = getattr(orig, "sqlite_errorcode", None) or 0
            code = extended & 0xFF
            if code == _SQLITE_FULL or extended == _SQLITE_IOERR_WRITE:
                self._make_room()
                if code == _SQLITE_FULL:
                    return DiskFull(f"the store {self.url} is full: {cause}")
                return DiskFull(
                    f"the store {self.url} cannot write: {cause} (a full disk, a quota or a "
                    "file-size limit)"
                )
            if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
                return StoreUnavailable(f"the store {self.url} is locked: {cause}")
            if code == _SQLITE_CANTOPEN and self._identity is not None:
                self._check_identity()  # raises StoreGone when the file went away
            if code in _SQLITE_BROKEN:
                return StoreError(f"the store {self.url} cannot be used: {cause}")
            return None
        sqlstate = getattr(orig, "sqlstate", None)
        if sqlstate == "53100":
            return DiskFull(f"the store {self.url} is full: {cause}")
        if (
            error.connection_invalidated
            or isinstance(error, exc.InterfaceError)
            or (isinstance(sqlstate, str) and sqlstate[:2] == "08")
            or sqlstate in _PG_UNAVAILABLE
            or (isinstance(error, exc.OperationalError) and sqlstate is None)
        ):
            return StoreUnavailable(f"the store {self.url} does not answer: {cause}")
        return None

    def patiently(self, call: Callable[[], _R]) -> _R:
        """Run `call`, retrying it with backoff while the store does not answer, up to
        `patience_s`; then the last `StoreUnavailable` is raised."""
        deadline: float | None = None
        delay = 0.1
        while True:
            try:
                result = call()
            except StoreUnavailable as e:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self.patience_s
                    log.warning("%s; retrying for up to %g s", e, self.patience_s)
                if now >= deadline:
                    raise StoreUnavailable(f"{e} (still, after {self.patience_s:g} s)") from None
                time.sleep(min(delay * random.uniform(0.8, 1.2), max(0.0, deadline - now)))
                delay = min(delay * 2, 5.0)
                continue
            if deadline is not None:
                log.warning("the store %s answers again", self.url)
            return result

    def _sqlite_do_connect(
        self, _dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]
    ) -> None:
        if self._file is not None:  # pinned: open the file that exists, never create one
            cargs[:1] = [f"file:{urllib.parse.quote(self._file)}?mode=rw"]
            cparams["uri"] = True

    def migrate(self) -> None:
        """Bring the schema to the newest named migration (forward only)."""
        from alembic import command  # alembic loads slowly; only needed here
        from alembic.config import Config

        logging.getLogger("alembic").setLevel(logging.WARNING)  # one line per open is noise
        config = Config()
        config.set_main_option("script_location", MIGRATIONS)
        try:
            # SQLite rebuilds tables (batch mode) with foreign keys off, checked before commit
            with self.write(foreign_keys=False) as conn:
                if self.dialect == "postgresql":
                    conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})"))
                config.attributes["connection"] = conn
                command.upgrade(config, "head")
                if self.dialect == "sqlite" and (
                    bad := conn.exec_driver_sql("PRAGMA foreign_key_check").first()
                ):
                    raise UserError(
                        f"cannot migrate the store {self.url}: a row of {bad[0]} refers to a "
                        f"missing row of {bad[2]}"
                    )
        except StoreUnavailable as e:
            text = str(e)
            if not text.startswith("cannot reach"):
                text = f"cannot reach the store {self.url}: {text}"
            raise UserError(text) from None
        except exc.OperationalError as e:
            raise UserError(f"cannot reach the store {self.url}: {_cause(e)}") from None

    def keep_reserve(self, nbytes: int) -> None:
        """Hold `nbytes` of disk in a file beside a SQLite store (``<db>-reserve``).

        When the disk fills, the reserve is deleted (see `_translate`), so that the few writes
        that put a stopping worker's tasks back still fit. Best effort: a disk with no room
        for it gets none.
        """
        if self._file is None or self._reserve is not None:
            return
        path = f"{self._file}-reserve"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                if os.fstat(fd).st_size < nbytes:
                    _fill(fd, nbytes)
            finally:
                os.close(fd)
        except OSError as e:
            log.debug("no disk reserve beside %s: %s", self._file, e.strerror)
            with contextlib.suppress(OSError):
                os.unlink(path)
            return
        self._reserve = path

    def _make_room(self) -> None:
        """After a write failed for space: free the reserve and fold the WAL into the file.

        A checkpoint that truncates the WAL lets the next small writes (the put-backs) start
        from an empty log; it may fail too (best effort), and then the freed reserve serves.
        """
        path, self._reserve = self._reserve, None
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
                log.info("the disk is full: freed the reserve at %s to put tasks back", path)
        if self._file is None:
            return
        try:
            uri = f"file:{urllib.parse.quote(self._file)}?mode=rw"
            conn = sqlite3.connect(uri, uri=True, timeout=1.0)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
        except sqlite3.Error as e:
            log.debug("no checkpoint after a full disk: %s", e)

    def dispose(self) -> None:
        """Close pooled connections (and SQLite's write connection)."""
        if self._write_lock is not None:
            with self._write_lock:
                self._drop_writer()
                if self._file_lock is not None:
                    self._file_lock.close()
                    self._file_lock = None
        self.engine.dispose()


def _fill(fd: int, nbytes: int) -> None:
    """Allocate `nbytes` for real (zeros written where fallocate is missing)."""
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, nbytes)
        return
    block = b"\0" * 65536
    for _ in range(0, nbytes, len(block)):
        os.write(fd, block)
    os.fsync(fd)


_R = TypeVar("_R")
_P = ParamSpec("_P")
_NOTHING = contextlib.nullcontext()

_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_FULL, _SQLITE_CANTOPEN = 5, 6, 13, 14
_SQLITE_IOERR_WRITE = 10 | 3 << 8  # a write refused: EFBIG (a file-size limit), EDQUOT, EIO
_SQLITE_BROKEN = frozenset({8, 10, 11, 14, 26})  # READONLY, IOERR, CORRUPT, CANTOPEN, NOTADB
_PG_UNAVAILABLE = frozenset({"57P01", "57P02", "57P03", "53300"})  # shutdown, starting, full
_inside = threading.local()


class _HasDatabase(Protocol):
    _db: Database


_S = TypeVar("_S", bound=_HasDatabase)


def patient(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """A store method retried whole while the store does not answer (`Database.patiently`).

    Only the outermost patient call of a thread retries: one that calls another retries both.
    """

    @functools.wraps(method)
    def call(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if self._db.patience_s <= 0 or getattr(_inside, "active", False):
            return method(self, *args, **kwargs)
        _inside.active = True
        try:
            return self._db.patiently(lambda: method(self, *args, **kwargs))
        finally:
            _inside.active = False

    return call


_IDLE_PING_S = 2.0
"""A pooled connection idle longer than this is pinged before use (a server restarted while
the pool sat idle is found then); a busy pool's connections are not. A connection that dies
under load fails its transaction instead, which SQLAlchemy reports as a disconnect (the pool is
invalidated) and `patient` retries on a fresh connection."""


def _checked_in(_dbapi_conn: Any, record: Any) -> None:
    record.info["checked_in"] = time.monotonic()


def _ping_if_idle(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    """`pool_pre_ping` for connections that sat idle only; a fresh one (no check-in yet) is not.

    The ping runs in autocommit, as SQLAlchemy's own does, so it opens no transaction.
    """
    since = record.info.get("checked_in")
    if since is None or time.monotonic() - since < _IDLE_PING_S:
        return
    before = dbapi_conn.autocommit
    try:
        dbapi_conn.autocommit = True
        dbapi_conn.cursor().execute("SELECT 1").close()
    except Exception as e:  # the pool drops this connection and checks out another
        raise exc.DisconnectionError(f"ping failed: {_one_line(e)}") from e
    finally:
        if not dbapi_conn.closed:
            dbapi_conn.autocommit = before


def _pragma(conn: Connection, pragma: str) -> None:
    """Set a SQLite pragma on the driver's cursor, outside any transaction."""
    conn.connection.cursor().execute(f"PRAGMA {pragma}").close()


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
    """BEGIN on the driver's cursor (through `exec_driver_sql` it costs twice as much); a
    driver error is wrapped as SQLAlchemy wraps one, for `Database._translate`."""
    sql = "BEGIN IMMEDIATE" if conn.info.get("immediate") else "BEGIN"
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql)
    except sqlite3.Error as e:
        raise exc.DBAPIError.instance(sql, (), e, sqlite3.Error) from e
    finally:
        cursor.close()


def _cause(error: exc.DBAPIError) -> str:
    return _one_line(error.orig if error.orig is not None else error)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text[:300]
