"""Gated agent CLIs: Claude Code, Codex CLI and Gemini CLI finish only when the harness proves it.

One shared core (`core.run_hook`: checks against a deadline, protected files, the agent's own
todo/goal state, block counting, escalation, failing closed) and one small module per CLI
(`claude`, `codex`, `gemini`: its payload, its answer, its todo state, its config). `install`
writes a CLI's project config; `exec` runs a CLI headless with the gate installed for one run.
"""

from __future__ import annotations

from donegate.errors import UserError
from donegate.harness.agents.base import AgentCLI, StopEvent
from donegate.harness.agents.claude import CLAUDE
from donegate.harness.agents.codex import CODEX
from donegate.harness.agents.core import HookOptions, HookOutcome, run_hook
from donegate.harness.agents.gemini import GEMINI
from donegate.records.checklist import TodoItem

__all__ = [
    "AGENTS",
    "AgentCLI",
    "HookOptions",
    "HookOutcome",
    "StopEvent",
    "TodoItem",
    "agent_named",
    "run_hook",
]

AGENTS: dict[str, AgentCLI] = {a.name: a for a in (CLAUDE, CODEX, GEMINI)}
"""Every supported CLI by its adapter name."""


def agent_named(name: str) -> AgentCLI:
    """The adapter called `name`; `UserError` listing the known ones."""
    try:
        return AGENTS[name]
    except KeyError:
        raise UserError(f"unknown agent {name!r}: expected one of {', '.join(AGENTS)}") from None
