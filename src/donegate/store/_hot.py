"""Hot-path statements: Core statements compiled once, run on the driver's own cursor.

A task's worker path makes some twenty writes (fences, journal rows, ledger rows, its end) whose
only result is a row count. Through `Connection.execute` a cached statement still pays
SQLAlchemy's per-execution work (cache lookup, execution context, a cursor and a result
object): about 13 us of CPU against SQLite's 5 us for the same text, and 74 us against
psycopg's 20 us on PostgreSQL. `HotWrite` compiles its statement once per backend and column
set and runs it on the connection's open transaction.

A driver error is handled as SQLAlchemy handles it: a lost connection is invalidated (the pool
drops it; `patient` retries on another) and the error is wrapped as SQLAlchemy wraps it, so
`Database` translates it as before. The schema's defaults are all server-side and its binds need
no conversion (numbers, text, booleans), so the rows written are the same. SQLAlchemy's cursor
events do not see these statements.

`HotRead` does the same for a read whose first row is all its caller wants: SQLite's claim
(`donegate.store._leases`), whose columns need no conversion either (text and numbers).
PostgreSQL's claim stays on `Connection.execute`.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import Connection

__all__ = ["HotRead", "HotWrite"]

Params = Mapping[str, Any] | Sequence[Mapping[str, Any]]


class _Hot:
    """A statement compiled once per backend and bind set, run on the driver's cursor."""

    __slots__ = ("_texts", "statement")

    def __init__(self, statement: sa.Insert | sa.Update | sa.Select[Any] | sa.TextClause) -> None:
        self.statement = statement
        self._texts: dict[tuple[str, ...], tuple[str, tuple[str, ...], dict[str, Any]]] = {}

    def _run(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> Any:
        """Execute on the connection's own cursor; that cursor (the caller closes it)."""
        sql, names, fixed = self._compiled(conn, rows[0])
        values: list[Any]
        if names:  # positional (SQLite's qmark)
            values = [tuple(row[n] if n in row else fixed[n] for n in names) for row in rows]
        else:  # named (psycopg's pyformat)
            values = [{**fixed, **row} for row in rows]
        proxied = conn.connection
        cursor = proxied.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            if len(values) == 1:
                cursor.execute(sql, values[0])
            else:
                cursor.executemany(sql, values)
        except conn.dialect.loaded_dbapi.Error as e:
            # As SQLAlchemy would: a lost connection is invalidated (the pool drops it and
            # `patient` retries on another); the error is wrapped for `Database._translate`.
            lost = conn.dialect.is_disconnect(e, proxied, cursor)
            cursor.close()
            if lost:
                conn.invalidate(e)
            dbapi = conn.dialect.loaded_dbapi
            raise exc.DBAPIError.instance(
                sql, values, e, dbapi.Error, connection_invalidated=lost
            ) from e
        return cursor

    def _compiled(
        self, conn: Connection, row: Mapping[str, Any]
    ) -> tuple[str, tuple[str, ...], dict[str, Any]]:
        key = (conn.dialect.name, *row)
        text = self._texts.get(key)
        if text is None:
            # An insert renders the columns its rows carry; other statements name their binds.
            columns = list(row) if isinstance(self.statement, sa.Insert) else None
            compiled = self.statement.compile(dialect=conn.dialect, column_keys=columns)
            names = tuple(compiled.positiontup or ())
            text = self._texts[key] = (str(compiled), names, dict(compiled.params))
        return text


class HotWrite(_Hot):
    """A write statement run as compiled once, on the driver's cursor; `__call__` returns its
    row count."""

    __slots__ = ()

    def insert(self, conn: Connection, row: Mapping[str, Any]) -> int:
        """Insert one row; its new integer primary key."""
        if conn.dialect.name != "sqlite":  # the key comes back through RETURNING
            key = conn.execute(self.statement, row).inserted_primary_key
            assert key is not None
            return int(key[0])
        cursor = self._run(conn, [row])
        try:
            return int(cursor.lastrowid)
        finally:
            cursor.close()

    def __call__(self, conn: Connection, params: Params) -> int:
        """Execute with `params` (a list of them: one execution per row); the rows affected."""
        rows = [params] if isinstance(params, Mapping) else list(params)
        if not rows:  # nothing to write (`Connection.execute` would insert a row of defaults)
            return 0
        cursor = self._run(conn, rows)
        try:
            return int(cursor.rowcount)
        finally:
            cursor.close()


class HotRead(_Hot):
    """A read run as compiled once, on the driver's cursor; `first` returns its first row.

    The row reads by column name as a Core row does (``row.status``), for the columns the
    statement selects.
    """

    __slots__ = ("_shapes",)

    def __init__(self, statement: sa.Select[Any] | sa.TextClause) -> None:
        super().__init__(statement)
        self._shapes: dict[tuple[str, ...], Any] = {}

    def first(self, conn: Connection, params: Mapping[str, Any]) -> Any:
        """The first row `params` select, or None."""
        cursor = self._run(conn, [params])
        try:
            found = cursor.fetchone()
            if found is None:
                return None
            names = tuple(column[0] for column in cursor.description)
        finally:
            cursor.close()
        shape = self._shapes.get(names)
        if shape is None:
            shape = self._shapes[names] = collections.namedtuple("Row", names)
        return shape(*found)
