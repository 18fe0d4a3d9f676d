"""Gemini CLI (``@google/gemini-cli``): its AfterAgent hook, its todos, its short hook timeout.

Measured on 0.61.0 (``shared/agent-hooks``, and the CLI's bundle):

- Event ``AfterAgent``; payload ``session_id``, ``transcript_path``, ``cwd``, ``timestamp``,
  ``prompt``, ``prompt_response``, ``stop_hook_active``; no ``last_assistant_message``.
  ``prompt_response`` accumulates: every turn's text for the prompt, joined with newlines,
  continuations included. The claim is its newest part: what was added since the last stop.
- Answer: ``{"decision": "deny", "reason": ...}`` (documented; ``block`` works too); the reason
  reaches the model as a plain user turn. No cap of its own; ``stop_hook_active`` turns false
  again after a continuation that called a tool, so only the gate's own count bounds the loop.
- Hooks are killed after 60 s unless their ``timeout`` (ms) says otherwise, and a killed hook
  lets the agent stop: the default deadline is 50 s.
- Todos: the ``write_todos`` tool (``todos: [{description, status}]``, status pending,
  in_progress, completed, cancelled, blocked); kept in the transcript JSONL as message records
  (``type: "gemini"``, ``toolCalls[].args.todos``), a record rewritten by id; the latest wins.
- The data folder is ``~/.gemini`` (``$GEMINI_CLI_HOME`` replaces the home folder).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from donegate.harness.agents.base import AgentCLI, EventKind, ExecSetup, StopEvent, TodoItem
from donegate.harness.agents.transcript import TranscriptRef, jsonl_records

__all__ = ["GEMINI", "GeminiCLI", "gemini_dir"]

_STATUS = {"completed": "done", "cancelled": "done", "blocked": "blocked"}
_DEFAULTS_ENV = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"
_SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
_SYSTEM_SETTINGS = {"darwin": "/Library/Application Support/GeminiCli/settings.json",
                    "win32": "C:\\ProgramData\\gemini-cli\\settings.json"}  # fmt: skip


def gemini_dir() -> Path:
    """Gemini CLI's own folder: ``$GEMINI_CLI_HOME/.gemini`` or ``~/.gemini``."""
    env = os.environ.get("GEMINI_CLI_HOME")
    return (Path(env).expanduser() if env else Path.home()) / ".gemini"


class GeminiCLI(AgentCLI):
    """Gemini CLI's hook payloads and todo state."""

    name = "gemini"
    title = "Gemini CLI"
    stop_events: Mapping[str, EventKind] = {"AfterAgent": "stop", "SessionStart": "session_start"}
    default_deadline = 50.0  # hooks are killed after 60 s unless configured otherwise
    block_decision = "deny"
    config_file = ".gemini/settings.json"
    install_events = ("SessionStart", "AfterAgent")

    def claim_of(self, data: Mapping[str, Any]) -> str | None:
        """``prompt_response`` (the accumulated text; `newest_claim` cuts the new part)."""
        value = data.get("prompt_response")
        return value if isinstance(value, str) else None

    def newest_claim(self, claim: str | None, previous: str | None) -> str | None:
        """What `claim` added since the last stop's ``prompt_response``."""
        if claim is None or not previous or not claim.startswith(previous):
            return claim
        added = claim[len(previous) :].strip()
        return added or claim

    def data_roots(self) -> list[Path]:
        """``~/.gemini`` (under ``$GEMINI_CLI_HOME`` when set)."""
        return [gemini_dir()]

    def todos(self, event: StopEvent, transcript: TranscriptRef) -> list[TodoItem]:
        """The latest ``write_todos`` list in the transcript."""
        latest: list[Any] | None = None
        for record in jsonl_records(transcript):
            if record.get("type") != "gemini" or not isinstance(record.get("toolCalls"), list):
                continue
            for call in record["toolCalls"]:
                if not isinstance(call, dict) or call.get("name") != "write_todos":
                    continue
                args = call.get("args")
                if isinstance(args, dict) and isinstance(args.get("todos"), list):
                    latest = args["todos"]
        items = []
        for todo in latest or []:
            if isinstance(todo, dict) and isinstance(todo.get("description"), str):
                status = str(todo.get("status"))
                items.append(
                    TodoItem(
                        text=todo["description"][:300],
                        status=_STATUS.get(status, "open"),  # type: ignore[arg-type]
                        raw_status=status[:40],
                        source="write_todos",
                    )
                )
        return items

    def hook_entry(self, command: str, timeout_s: int) -> dict[str, Any]:
        """A named command hook; Gemini's ``timeout`` is in milliseconds."""
        return {"name": "donegate", "type": "command", "command": command,
                "timeout": timeout_s * 1000}  # fmt: skip

    def exec_setup(self, argv: list[str], setup: ExecSetup) -> tuple[list[str], dict[str, str]]:
        """The hooks in a system-defaults file of this run's own (its path in the environment).

        System defaults are the lowest settings layer and hooks are concatenated across layers,
        so the user's and the project's settings and hooks stay in force. A defaults file the
        machine already has is copied into this run's one first.
        """
        current = _defaults_path(setup.env)
        data: dict[str, Any] = {}
        try:
            loaded = json.loads(current.read_text(encoding="utf-8"))
            data = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            pass
        for event, command in setup.commands.items():
            hooks = data.setdefault("hooks", {})
            if isinstance(hooks, dict):
                hooks.setdefault(event, []).append(
                    {"hooks": [self.hook_entry(command, setup.timeout_s)]}
                )
        path = setup.run_dir / "gemini-system-defaults.json"
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
        return list(argv), {_DEFAULTS_ENV: str(path)}

    def result_of(self, stdout: str) -> tuple[str | None, str | None]:
        """``-o json``: ``response`` and ``error``; plain text otherwise."""
        try:
            data = json.loads(stdout.strip())
        except ValueError:
            return super().result_of(stdout)
        if not isinstance(data, dict):
            return super().result_of(stdout)
        response = data.get("response")
        error = data.get("error")
        return (
            response if isinstance(response, str) else None,
            json.dumps(error)[:500] if error else None,
        )


def _defaults_path(env: Mapping[str, str]) -> Path:
    """Where Gemini CLI reads system defaults: beside the system settings file, by default."""
    if env.get(_DEFAULTS_ENV):
        return Path(env[_DEFAULTS_ENV])
    settings = env.get(_SETTINGS_ENV) or _SYSTEM_SETTINGS.get(
        sys.platform, "/etc/gemini-cli/settings.json"
    )
    return Path(settings).parent / "system-defaults.json"


GEMINI = GeminiCLI()
"""The Gemini CLI adapter."""
