"""The CLIs the e2e tests ran are the versions CI pinned (``.ci/agents.sh`` exports them).

Outside CI (no pin in the environment) there is nothing to compare, and the test says so.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.agents_e2e._agents import ALL, Cli

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

PINS = {
    "claude": "DONEGATE_CLAUDE_OLDEST",
    "claude-new": "DONEGATE_CLAUDE_NEWEST",
    "codex": "DONEGATE_CODEX_VERSION",
    "gemini": "DONEGATE_GEMINI_VERSION",
}


@pytest.mark.parametrize("cli", ALL, ids=[c.label for c in ALL])
def test_the_installed_version_is_the_pinned_one(cli: Cli) -> None:
    binary = cli.binary()
    pinned = os.environ.get(PINS[cli.label])
    if not pinned:
        pytest.skip(f"{PINS[cli.label]} is unset: no pinned version to compare (CI sets it)")
    out = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    found = re.search(r"\d+\.\d+\.\d+", out)
    assert found is not None, f"{binary} --version printed {out!r}"
    assert found.group() == pinned
