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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from donegate.harness.agents.base import AgentCLI, EventKind, ExecSetup, StopEvent, safe_id
from donegate.harness.agents.home import OwnHome
from donegate.harness.agents.transcript import jsonl_records
from donegate.messages import Usage
from donegate.records.checklist import TodoItem
from donegate.records.judgement import TranscriptRef
from donegate.records.status import ItemStatus
from donegate.results import Spend, SpendLine

if TYPE_CHECKING:
    from donegate.spend import PriceBook

__all__ = ["CLAUDE", "ClaudeCode", "config_dir"]

_MAX_TASK_FILES = 500
_MAX_TASK_BYTES = 64 * 1024
_STATUS: dict[str, ItemStatus] = {
    "completed": ItemStatus.DONE,
    "pending": ItemStatus.OPEN,
    "in_progress": ItemStatus.OPEN,
}


def config_dir() -> Path:
    """Claude Code's own folder: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    return CLAUDE.home()


class ClaudeCode(OwnHome, AgentCLI):
    """Claude Code's hook payloads and todo state."""

    name = "claude"
    home_variable = "CLAUDE_CONFIG_DIR"
    home_folder = ".claude"
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
        if setup.budget_usd is not None and "--max-budget-usd" not in args:
            # Claude Code's own cap: it ends the session (error_max_budget_usd) once its
            # reported cost reaches the task's budget, continuations included
            args += ["--max-budget-usd", f"{setup.budget_usd:g}"]
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

    def transcript_spend(
        self, transcript: TranscriptRef, *, prices: PriceBook | None = None
    ) -> Spend | None:
        """Each assistant message's ``usage`` (a message split over several records is counted
        once, by its id), priced by its model when the price is known."""
        calls: dict[str, tuple[str, Usage]] = {}
        for record in jsonl_records(transcript):
            message = record.get("message")
            if record.get("type") != "assistant" or not isinstance(message, dict):
                continue
            raw = message.get("usage")
            if not isinstance(raw, dict):
                continue
            read, write = _n(raw, "cache_read_input_tokens"), _n(raw, "cache_creation_input_tokens")
            usage = Usage(input_tokens=_n(raw, "input_tokens") + read + write,
                          output_tokens=_n(raw, "output_tokens"), cache_read_tokens=read,
                          cache_write_tokens=write)  # fmt: skip
            model = message.get("model") if isinstance(message.get("model"), str) else "claude"
            key = message.get("id") or record.get("uuid") or str(len(calls))
            calls[str(key)] = (f"anthropic:{model}", usage)
        from donegate.spend import spend_of_calls  # here: only a task with a budget asks

        return spend_of_calls(calls.values(), prices=prices)

    def spend_of(self, stdout: str, *, prices: PriceBook | None = None) -> Spend | None:
        """``total_cost_usd`` and ``modelUsage`` of the result object (the cost per model as
        Claude Code computed it, so `prices` is not consulted); one line for the whole cost when
        the models do not add up."""
        return _claude_spend(stdout)


def _claude_spend(stdout: str) -> Spend | None:
    record = _last_result(stdout)
    if record is None or not isinstance(record.get("total_cost_usd"), int | float):
        return None
    lines = []
    models = record.get("modelUsage")
    for name, data in models.items() if isinstance(models, dict) else ():
        if not isinstance(data, dict):
            continue
        read, write = _n(data, "cacheReadInputTokens"), _n(data, "cacheCreationInputTokens")
        usage = Usage(input_tokens=_n(data, "inputTokens") + read + write,
                      output_tokens=_n(data, "outputTokens"), cache_read_tokens=read,
                      cache_write_tokens=write)  # fmt: skip
        cost = data.get("costUSD")
        usd = float(cost) if isinstance(cost, int | float) else None
        lines.append(SpendLine(model=f"anthropic:{name}", role="agent", usage=usage, usd=usd))
    total = float(record["total_cost_usd"])
    if not lines or abs(sum(line.usd or 0.0 for line in lines) - total) > 1e-9:
        lines = [SpendLine(model="anthropic:claude-code", role="agent", usd=total)]
    return Spend(lines=tuple(lines))


def _n(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


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
        text=f"task file {path.name}", status=ItemStatus.OPEN, raw_status="unreadable",
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
