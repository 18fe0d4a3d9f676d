"""PostgreSQL pool: a connection is pinged before use only after it sat idle.

A ping on every checkout costs each transaction one more round trip; a connection that sat
idle (a server restarted meanwhile) is still pinged and replaced before a transaction meets it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from donegate.store import StoreUnavailable
from donegate.store import _db as db_module
from donegate.store.sql import SqlStore, open_store
from tests.store.conftest import PG_ENV, PG_SKIP, pg_schema_url


@pytest.fixture
def pg_store() -> Iterator[SqlStore]:
    """A store on a fresh PostgreSQL schema, one pooled connection, no patience."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(PG_SKIP)
    for url in pg_schema_url(base):
        store = open_store(url, pool_size=1)
        yield store
        store.close()


def _kill_pooled_backends(store: SqlStore) -> int:
    """Terminate the server side of the store's pooled connection(s), from outside it."""
    with store._db.engine.connect() as conn:  # the pooled connection: learn its backend pid
        pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
    killer = sa.create_engine(os.environ[PG_ENV])
    try:
        with killer.begin() as conn:
            return int(conn.execute(sa.text(f"SELECT count(*) FROM pg_terminate_backend({pid})"))
                       .scalar_one())  # fmt: skip
    finally:
        killer.dispose()


def test_an_idle_connection_found_dead_is_replaced_before_use(
    pg_store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_module, "_IDLE_PING_S", 0.0)  # every checked-in connection is idle
    assert _kill_pooled_backends(pg_store) == 1
    record, created = pg_store.submit(
        "a", {"id": "a", "prompt": "p"}, type=None
    )  # no error: re-pinged
    assert created and pg_store.get("a") == record


def test_a_busy_connection_is_not_pinged(
    pg_store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_module, "_IDLE_PING_S", 3600.0)  # nothing counts as idle
    assert _kill_pooled_backends(pg_store) == 1
    with pytest.raises(StoreUnavailable):  # no ping: the transaction meets the dead connection
        pg_store.submit("a", {"id": "a", "prompt": "p"}, type=None)
    record, created = pg_store.submit(
        "a", {"id": "a", "prompt": "p"}, type=None
    )  # the pool was renewed
    assert created and pg_store.get("a") == record
