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

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from donegate.errors import UserError
from donegate.harness.agents.base import AgentCLI, EventKind, ExecSetup, StopEvent
from donegate.harness.agents.transcript import jsonl_records
from donegate.messages import Usage
from donegate.records.checklist import TodoItem
from donegate.records.judgement import TranscriptRef
from donegate.records.status import ItemStatus
from donegate.results import Spend, SpendLine

if TYPE_CHECKING:
    from donegate.spend import PriceBook

__all__ = ["GEMINI", "GeminiCLI", "gemini_dir"]

_STATUS: dict[str, ItemStatus] = {
    "completed": ItemStatus.DONE,
    "cancelled": ItemStatus.DONE,
    "blocked": ItemStatus.BLOCKED,
}


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

    def state_folders(self, env: Mapping[str, str]) -> list[Path]:
        """``$GEMINI_CLI_HOME`` (exec's run home, whose entries link to the user's own) or
        ``~/.gemini`` of `env`."""
        if env.get("GEMINI_CLI_HOME"):
            return [Path(env["GEMINI_CLI_HOME"]).expanduser()]
        home = Path(env["HOME"]).expanduser() if env.get("HOME") else Path.home()
        return [home / ".gemini"]

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
                items.append(
                    TodoItem.read(todo["description"], todo.get("status"), _STATUS, "write_todos")
                )
        return items

    def hook_entry(self, command: str, timeout_s: int) -> dict[str, Any]:
        """A named command hook; Gemini's ``timeout`` is in milliseconds."""
        return {"name": "donegate", "type": "command", "command": command,
                "timeout": timeout_s * 1000}  # fmt: skip

    def exec_setup(self, argv: list[str], setup: ExecSetup) -> tuple[list[str], dict[str, str]]:
        """``GEMINI_CLI_HOME`` a folder of this run's own: the user's settings plus the hooks.

        Its ``.gemini/settings.json`` is the user's (JSON with comments allowed) with the gate's
        hooks appended; every other entry of the user's ``~/.gemini`` (credentials, trusted
        folders) is linked, except ``tmp`` (this run's chats stay in the run folder). The
        user's files are read, never written. (A system-defaults file cannot carry the hooks:
        Gemini CLI skips one that is not owned by root on a path only root can write.)
        """
        base = setup.env.get("GEMINI_CLI_HOME") or setup.env.get("HOME") or str(Path.home())
        real = Path(base).expanduser() / ".gemini"
        home = setup.run_dir / "gemini-home"
        folder = home / ".gemini"
        folder.mkdir(parents=True, mode=0o700)
        settings: dict[str, Any] = {}
        with contextlib.suppress(FileNotFoundError):
            text = (real / "settings.json").read_text(encoding="utf-8")
            try:
                loaded = json.loads(_without_comments(text))
            except ValueError as exc:
                raise UserError(f"{real / 'settings.json'}: not valid JSON: {exc}") from None
            settings = loaded if isinstance(loaded, dict) else {}
        if real.is_dir():
            for entry in real.iterdir():
                if entry.name not in ("settings.json", "tmp"):
                    (folder / entry.name).symlink_to(entry.resolve())
        hooks = settings.setdefault("hooks", {})
        if not isinstance(hooks, dict):
            raise UserError(f"{real / 'settings.json'}: its `hooks` is not an object")
        for event, command in setup.commands.items():
            groups = hooks.setdefault(event, [])
            if not isinstance(groups, list):
                raise UserError(f"{real / 'settings.json'}: its `hooks.{event}` is not a list")
            groups.append({"hooks": [self.hook_entry(command, setup.timeout_s)]})
        (folder / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        return list(argv), {"GEMINI_CLI_HOME": str(home)}

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

    def transcript_spend(
        self, transcript: TranscriptRef, *, prices: PriceBook | None = None
    ) -> Spend | None:
        """Each ``gemini`` record's ``tokens`` (``input``, ``output``, ``cached``,
        ``thoughts``; a record written again under its id is counted once), priced by its
        ``model`` when the price is known."""
        calls: dict[str, tuple[str, Usage]] = {}
        for record in jsonl_records(transcript):
            tokens = record.get("tokens")
            if record.get("type") != "gemini" or not isinstance(tokens, dict):
                continue
            usage = Usage(input_tokens=_count(tokens, "input"),
                          output_tokens=_count(tokens, "output") + _count(tokens, "thoughts"),
                          cache_read_tokens=_count(tokens, "cached"))  # fmt: skip
            model = record.get("model") if isinstance(record.get("model"), str) else "gemini"
            calls[str(record.get("id") or len(calls))] = (f"google:{model}", usage)
        from donegate.spend import spend_of_calls  # here: only a task with a budget asks

        return spend_of_calls(calls.values(), prices=prices)

    def spend_of(self, stdout: str, *, prices: PriceBook | None = None) -> Spend | None:
        """``-o json``: ``stats.models.<model>.tokens`` (``prompt``, ``candidates``,
        ``cached``), one line per model priced by `prices` (Gemini CLI prints no cost)."""
        try:
            data = json.loads(stdout.strip())
        except ValueError:
            return None
        stats = data.get("stats") if isinstance(data, dict) else None
        models = stats.get("models") if isinstance(stats, dict) else None
        if not isinstance(models, dict):
            return None
        from donegate.spend import PriceBook  # here: a stop never prices tokens

        book, lines = prices if prices is not None else PriceBook(), []
        for name, entry in models.items():
            tokens = entry.get("tokens") if isinstance(entry, dict) else None
            if not isinstance(tokens, dict):
                continue
            usage = Usage(input_tokens=_count(tokens, "prompt"),
                          output_tokens=_count(tokens, "candidates") + _count(tokens, "thoughts"),
                          cache_read_tokens=_count(tokens, "cached"))  # fmt: skip
            model = f"google:{name}"
            lines.append(SpendLine(model=model, role="agent", usage=usage,
                                   usd=book.cost(model, usage)))  # fmt: skip
        return Spend(lines=tuple(lines)) if lines else None


def _count(raw: dict[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


def _without_comments(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments (as Gemini CLI's settings allow) made plain JSON."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i == -1 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end == -1 else end + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


GEMINI = GeminiCLI()
"""The Gemini CLI adapter."""
