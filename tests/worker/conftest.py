"""Worker fixtures: a store per backend (see tests/store), an effect log, a home directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from donegate.store.sql import SqlStore, open_store
from tests.store.conftest import store_url
from tests.worker.effects import LOG_ENV

__all__ = ["store_url"]


@pytest.fixture
def effect_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the test's `send` tool logs deliveries (and, beside it, every execution)."""
    log = tmp_path / "effects.log"
    monkeypatch.setenv(LOG_ENV, str(log))
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    return log


@pytest.fixture
def store(store_url: str, effect_log: Path) -> Iterator[SqlStore]:
    """An opened store on each backend, with the effect log set up."""
    s = open_store(store_url)
    yield s
    s.close()
