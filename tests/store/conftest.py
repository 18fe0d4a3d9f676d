"""Store fixtures: SQLite in tmp_path always; PostgreSQL when DONEGATE_TEST_POSTGRES_URL is set."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from donegate.store.sql import SqlStore, open_store

PG_ENV = "DONEGATE_TEST_POSTGRES_URL"
PG_SKIP = f"{PG_ENV} is not set (CI starts PostgreSQL via .ci/services.sh)"


def pg_schema_url(base: str) -> Iterator[str]:
    """A fresh schema on the test server, its URL pinned to it, dropped afterwards."""
    import sqlalchemy as sa

    schema = f"t_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(base, pool_pre_ping=True)  # the server may restart meanwhile
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.service)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty store: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'donegate.db'}"
        return
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(PG_SKIP)
    yield from pg_schema_url(base)


@pytest.fixture
def store(store_url: str) -> Iterator[SqlStore]:
    """An opened, migrated store on each backend."""
    s = open_store(store_url)
    yield s
    s.close()
