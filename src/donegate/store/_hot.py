"""Hot-path writes: Core statements compiled once, run on SQLite's own cursor.

A task's worker path makes some twenty writes (fences, journal rows, ledger rows, its end) whose
only result is a row count. Through `Connection.execute` a cached statement still costs about
13 us of SQLAlchemy's per-execution work (cache lookup, execution context, result object);
SQLite's cursor runs the same compiled text in about 5 us. `HotWrite` compiles its statement
once per column set and runs it there, on the connection's open transaction.

Only on SQLite: on PostgreSQL a statement goes through `Connection.execute`, whose disconnect
handling invalidates the pool (the `patient` retries rely on it). A driver error is wrapped as
SQLAlchemy wraps it, so `Database` translates it as before. The schema's defaults are all
server-side and its binds need no conversion on SQLite (numbers, text, booleans as integers),
so the rows written are the same. SQLAlchemy's cursor events do not see these statements; the
claim's statements, whose plans tests read through those events, are not hot writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import Connection

__all__ = ["HotWrite"]

Params = Mapping[str, Any] | Sequence[Mapping[str, Any]]


class HotWrite:
    """A write statement run as compiled once (on SQLite); `__call__` returns its row count."""

    __slots__ = ("_texts", "statement")

    def __init__(self, statement: sa.Insert | sa.Update) -> None:
        self.statement = statement
        self._texts: dict[tuple[str, ...], tuple[str, tuple[str, ...], dict[str, Any]]] = {}

    def insert(self, conn: Connection, row: Mapping[str, Any]) -> int:
        """Insert one row; its new integer primary key."""
        if conn.dialect.name != "sqlite":
            key = conn.execute(self.statement, row).inserted_primary_key
            assert key is not None
            return int(key[0])
        cursor = self._run(conn, [row])
        try:
            return int(cursor.lastrowid)
        finally:
            cursor.close()

    def __call__(self, conn: Connection, params: Params) -> int:
        """Execute with `params` (a list of them: one execution per row); the rows affected
        (an insert on PostgreSQL says -1: SQLAlchemy runs it with ``RETURNING``)."""
        rows = [params] if isinstance(params, Mapping) else list(params)
        if not rows:  # nothing to write (`Connection.execute` would insert a row of defaults)
            return 0
        if conn.dialect.name != "sqlite":
            return int(conn.execute(self.statement, rows if len(rows) > 1 else rows[0]).rowcount)
        cursor = self._run(conn, rows)
        try:
            return int(cursor.rowcount)
        finally:
            cursor.close()

    def _run(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> Any:
        """SQLite: execute on the connection's own cursor; that cursor (the caller closes it)."""
        sql, names, fixed = self._compiled(conn, rows[0])
        values = [tuple(row[n] if n in row else fixed[n] for n in names) for row in rows]
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            if len(values) == 1:
                cursor.execute(sql, values[0])
            else:
                cursor.executemany(sql, values)
        except sqlite3.Error as e:
            cursor.close()
            raise exc.DBAPIError.instance(sql, values, e, sqlite3.Error) from e
        return cursor

    def _compiled(
        self, conn: Connection, row: Mapping[str, Any]
    ) -> tuple[str, tuple[str, ...], dict[str, Any]]:
        keys = tuple(row)
        text = self._texts.get(keys)
        if text is None:
            # An insert renders the columns its rows carry; other statements name their binds.
            columns = list(keys) if isinstance(self.statement, sa.Insert) else None
            compiled = self.statement.compile(dialect=conn.dialect, column_keys=columns)
            names = tuple(compiled.positiontup or ())
            text = self._texts[keys] = (str(compiled), names, dict(compiled.params))
        return text
