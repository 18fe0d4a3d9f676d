"""Every test gets its own donegate data directory: certificates, reports and the signing key
never land in the real ``~/.donegate`` (nor in a test's workdir)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def donegate_home(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """A fresh, empty ``$DONEGATE_HOME``; no ``$DONEGATE_SIGNING_KEY`` from the environment."""
    monkeypatch.delenv("DONEGATE_SIGNING_KEY", raising=False)
    home = tmp_path_factory.mktemp("donegate-home")
    monkeypatch.setenv("DONEGATE_HOME", str(home))
    yield home
