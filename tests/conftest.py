"""Every test gets its own donegate data directory: certificates, reports and the signing key
never land in the real ``~/.donegate`` (nor in a test's workdir). Hypothesis runs the ``dev``
profile by default and ``ci`` under ``$CI`` or ``HYPOTHESIS_PROFILE=ci`` (``./scripts/check``); a
session that leaves a file outside its tmp dirs fails (`tree_untouched`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from donegate.harness.signing import forget_taken_key
from tests import _tree_guard

settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,  # two shared cores: a slow example is load, not a bug
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
"""Every property test's examples on each CI run (a test's own smaller count still wins)."""
settings.register_profile(
    "dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
"""A quick local run; ``HYPOTHESIS_PROFILE=ci`` for CI's count."""
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


@pytest.fixture(autouse=True)
def donegate_home(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """A fresh, empty ``$DONEGATE_HOME``; no ``$DONEGATE_SIGNING_KEY`` from the environment."""
    monkeypatch.delenv("DONEGATE_SIGNING_KEY", raising=False)
    forget_taken_key()  # a key an in-process `main()` took from an earlier test's environment
    home = tmp_path_factory.mktemp("donegate-home")
    monkeypatch.setenv("DONEGATE_HOME", str(home))
    # no resident hook gate left behind by each test's `donegate hook` processes (one per data
    # directory, idle for minutes); tests/cli/test_resident.py turns it on where it tests it
    monkeypatch.setenv("DONEGATE_HOOK_RESIDENT", "0")
    yield home


@pytest.fixture
def plain_check_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks that run pytest load no plugin from an entry point (``-p NAME`` and conftests still
    load). The room's pytest reads no bytecode, so this venv's plugins cost it about 2.4 CPU s a
    run (langsmith's 1.4 s); the attacks are files in the workdir, not plugins, and each attack
    test's "the check went green" half still fails if one needed a plugin."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def tree_untouched() -> Iterator[None]:
    """Tests write only into their tmp dirs: a file the session created, changed or removed in
    the repository (a stray ``calc.py``, say), at the top of ``$HOME`` or under ``~/.donegate``
    fails the run, naming it. Each xdist worker checks its own session."""
    home = Path.home()
    before = _tree_guard.snapshot(ROOT, home)
    yield
    left = _tree_guard.changes(before, _tree_guard.snapshot(ROOT, home))
    assert not left, f"a test wrote outside its tmp dir: {left}"
