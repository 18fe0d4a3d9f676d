"""Claude Code (``@anthropic-ai/claude-code``): its Stop and SubagentStop hooks, its todo state.

Measured on 2.1.197 and 2.1.332 (``shared/agent-hooks``):

- Payload: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``
  (``Stop``/``SubagentStop``/``SessionStart``), ``stop_hook_active``, ``last_assistant_message``
  (the claim), ``background_tasks`` (2.1.332: a background subagent is listed ``running`` while
  it works, and Stop fires again when it ends); SubagentStop adds ``agent_id`` and
  ``agent_transcript_path``.
- Answer: ``{"decision": "block", "reason": ...}``; the reason reaches the model as a user
  message (2.1.197: ``Stop hook feedback:\\n<reason>``; 2.1.332 wraps it differently).
- Todo state: task tools keep ``<config>/tasks/<session_id>/<n>.json`` (``subject``,
  ``status``: pending, in_progress, completed); TodoWrite keeps its list only in the transcript
  (``toolUseResult.newTodos``: ``content``, ``status``). The config folder is
  ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``.
- Claude Code ignores a block after 8 text-only continuations in a row
  (``CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`` changes that); its command hooks time out after 600 s.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from donegate.harness.agents.base import (
    AgentCLI,
    EventKind,
    ExecSetup,
    StopEvent,
    TodoItem,
    TodoStatus,
    safe_id,
)
from donegate.harness.agents.transcript import TranscriptRef, jsonl_records

__all__ = ["CLAUDE", "ClaudeCode", "config_dir"]

_MAX_TASK_FILES = 500
_MAX_TASK_BYTES = 64 * 1024
_STATUS: dict[str, TodoStatus] = {"completed": "done", "pending": "open", "in_progress": "open"}


def config_dir() -> Path:
    """Claude Code's own folder: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


class ClaudeCode(AgentCLI):
    """Claude Code's hook payloads and todo state."""

    name = "claude"
    title = "Claude Code"
    stop_events: Mapping[str, EventKind] = {
        "Stop": "stop",
        "SubagentStop": "subagent_stop",
        "SessionStart": "session_start",
    }
    default_deadline = 540.0  # command hooks time out after 600 s
    config_file = ".claude/settings.json"
    install_events = ("SessionStart", "Stop", "SubagentStop")

    def running_of(self, data: Mapping[str, Any]) -> tuple[str, ...]:
        """Entries of ``background_tasks`` whose status is ``running``."""
        tasks = data.get("background_tasks")
        if not isinstance(tasks, list):
            return ()
        out = []
        for task in tasks:
            if isinstance(task, dict) and task.get("status") == "running":
                kind = task.get("type") if isinstance(task.get("type"), str) else "task"
                label = task.get("description") or task.get("id") or "?"
                out.append(f"{kind}: {label}"[:200])
        return tuple(out)

    def data_roots(self) -> list[Path]:
        """``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
        return [config_dir()]

    def todos(self, event: StopEvent, transcript: TranscriptRef) -> list[TodoItem]:
        """Task files of the session (main agent only), then the latest TodoWrite list."""
        items: list[TodoItem] = []
        if event.kind == "stop":
            items.extend(_task_files(config_dir() / "tasks" / safe_id(event.session_id)))
        latest: list[Any] | None = None
        for record in jsonl_records(transcript):
            result = record.get("toolUseResult")
            if isinstance(result, dict) and isinstance(result.get("newTodos"), list):
                latest = result["newTodos"]
        for todo in latest or []:
            if isinstance(todo, dict) and isinstance(todo.get("content"), str):
                items.append(
                    TodoItem.read(todo["content"], todo.get("status"), _STATUS, "TodoWrite")
                )
        return items

    def exec_setup(self, argv: list[str], setup: ExecSetup) -> tuple[list[str], dict[str, str]]:
        """``claude -p ... --settings FILE``: the hooks in a settings file of this run's own.

        Claude Code merges ``--settings`` with the user's and the project's settings, hooks
        included. Its own cap on text-only continuations is raised above the gate's budget
        (unless the caller set it), so the gate decides when to stop blocking.
        """
        settings = {
            "hooks": {
                event: [{"hooks": [self.hook_entry(command, setup.timeout_s)]}]
                for event, command in setup.commands.items()
            }
        }
        path = setup.run_dir / "claude-settings.json"
        path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
        args = list(argv[1:])
        if not any(a in ("-p", "--print") for a in args):
            args.insert(0, "-p")  # headless: an interactive session would wait for a person
        env = {}
        if "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP" not in setup.env:
            env["CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"] = str(setup.budget + 2)
        return [argv[0], *args, "--settings", str(path)], env

    def result_of(self, stdout: str) -> tuple[str | None, str | None]:
        """``--output-format json``/``stream-json``: the result object's text and error."""
        record = _last_result(stdout)
        if record is None:
            return super().result_of(stdout)
        text = record.get("result")
        result = text if isinstance(text, str) else None
        error = None
        if record.get("is_error") is True or record.get("subtype") not in (None, "success"):
            error = f"{record.get('subtype')}: {result or ''}".strip(": ")
        elif result is not None and result.startswith("API Error"):
            error = result  # provider errors have been reported as subtype "success"
        return result, error


def _task_files(folder: Path) -> list[TodoItem]:
    try:
        files = sorted(folder.glob("*.json"), key=lambda p: (len(p.name), p.name))
    except OSError:
        return []
    items = []
    for path in files[:_MAX_TASK_FILES]:
        try:
            with open(path, "rb") as handle:
                data = json.loads(handle.read(_MAX_TASK_BYTES))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("subject"), str):
            # a task file the gate cannot read could hide an open item: it counts as one
            items.append(_unreadable(path))
            continue
        status = str(data.get("status"))
        if status == "deleted":
            continue
        items.append(TodoItem.read(data["subject"], status, _STATUS, "claude tasks"))
    return items


def _unreadable(path: Path) -> TodoItem:
    return TodoItem(
        text=f"task file {path.name}", status="open", raw_status="unreadable",
        source="claude tasks",
    )  # fmt: skip


def _last_result(stdout: str) -> dict[str, Any] | None:
    """The last ``{"type": "result", ...}`` object: the whole output, or its last such line."""
    text = stdout.strip()
    candidates = [text, *reversed(text.splitlines()[-50:])]
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") == "result":
            return data
    return None


CLAUDE = ClaudeCode()
"""The Claude Code adapter."""
