"""Fixtures for the harness tests that watch what checks leave behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from donegate.harness.room import room_dir


@pytest.fixture
def room_of() -> Callable[[Path], Path]:
    """The clean room a workdir's checks ran in: what they wrote lands there, not in it."""
    return lambda workdir: room_dir(workdir) / "tree"


@pytest.fixture
def process_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks run under the ``process`` backend, so the pids they write are this machine's (a
    sandbox's pids are its own namespace's)."""
    monkeypatch.setenv("DONEGATE_ISOLATION", "process")
