"""Presets for the agent CLIs: headless flags, the tool their shell calls go to, a temp home.

Measured flags: /work/wt/_notes/cli-e2e.md (claude 2.1.197, codex 0.171.0, gemini 0.61.0). Each
run gets its own config home, so no user settings, login or history leaks into an audit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from donegate.testing.audit._scenarios import ToolShape

__all__ = ["PRESETS", "Preset"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Preset:
    """A CLI's audit command (the prompt is appended), its shell tool and its home setup."""

    command: tuple[str, ...]
    tool: ToolShape
    setup: Callable[[Path], dict[str, str]]


def _claude_home(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def _codex_home(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    (home / ".codex").mkdir(parents=True)
    return {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}


def _gemini_home(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    (home / ".gemini").mkdir(parents=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return {"HOME": str(home)}


PRESETS: dict[str, Preset] = {
    "claude-code": Preset(
        command=(
            "claude",
            "--allowedTools",
            "Bash",
            "--permission-mode",
            "acceptEdits",
            "--output-format",
            "text",
            "-p",
        ),
        tool=ToolShape(name="Bash", arg="command"),
        setup=_claude_home,
    ),
    "codex": Preset(
        command=(
            "codex",
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
        ),
        tool=ToolShape(name="exec_command", arg="cmd"),
        setup=_codex_home,
    ),
    "gemini-cli": Preset(
        command=("gemini", "--yolo", "-m", "gemini-2.5-flash", "-p"),
        tool=ToolShape(name="run_shell_command", arg="command"),
        setup=_gemini_home,
    ),
}
"""The presets by ``--preset`` name."""
