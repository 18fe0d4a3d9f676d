"""Fixtures for the agent-CLI hook tests: an isolated data directory and CLI homes, task files,
and a helper that runs one hook call the way a CLI does (stdin in, decision out)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, write_task

from donegate.harness.agents import AGENTS, HookOptions, HookOutcome, run_hook


@pytest.fixture(autouse=True)
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every folder a hook reads or writes, inside the test's tmp_path."""
    paths = {
        "data": tmp_path / "donegate-home",
        "claude": tmp_path / "claude-config",
        "codex": tmp_path / "codex-home",
        "gemini": tmp_path / "gemini-home",
        "tmp": tmp_path / "tmp",
        "work": tmp_path / "work",
    }
    for path in paths.values():
        path.mkdir()
    monkeypatch.setenv("DONEGATE_HOME", str(paths["data"]))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(paths["claude"]))
    monkeypatch.setenv("CODEX_HOME", str(paths["codex"]))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(paths["gemini"]))
    monkeypatch.setattr(tempfile, "tempdir", str(paths["tmp"]))
    return paths


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """The default task file, outside the workdir."""
    return write_task(tmp_path / "task.yaml")


@pytest.fixture
def hook(task: Path, homes: dict[str, Path]) -> Hook:
    """``hook(agent, payload_or_text, **options)``: one hook call, as the CLI makes it."""

    def call(agent: str, stdin: dict[str, Any] | str | bytes, **options: Any) -> HookOutcome:
        text = json.dumps(stdin) if isinstance(stdin, dict) else stdin
        options.setdefault("task", str(task))
        return run_hook(AGENTS[agent], text, HookOptions(**options))

    return call
