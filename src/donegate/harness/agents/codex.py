"""Codex CLI (``@openai/codex``): its Stop and SubagentStop hooks, its goal, its hook trust.

Measured on 0.169.0 and 0.171.0 (``shared/agent-hooks``):

- Payload: ``session_id``, ``turn_id``, ``transcript_path`` (the rollout JSONL), ``cwd``,
  ``hook_event_name`` (``Stop``/``SubagentStop``/``SessionStart``), ``model``,
  ``stop_hook_active``, ``last_assistant_message``; SubagentStop adds ``agent_id`` and
  ``agent_transcript_path`` (its schema is in the binary: ``subagent-stop.command.input``).
- Answer: ``{"decision": "block", "reason": ...}`` (an empty reason is ignored); it reaches the
  model as ``<hook_prompt ...>REASON</hook_prompt>``. Codex has no cap of its own on blocks.
- Goal: one row per thread in ``$CODEX_HOME/goals_1.sqlite``, table ``thread_goals``
  (``thread_id`` = the hook's ``session_id``, ``objective``, ``status`` one of active, paused,
  blocked, usage_limited, budget_limited, complete).
- Hooks are skipped, silently, until trusted: a ``trusted_hash`` per hook in ``config.toml``
  (``[hooks.state."<file>:stop:0:0"]``), or as a ``-c hooks.state={...}`` session flag for hooks
  given as ``-c hooks.Stop=[...]`` (key ``/<session-flags>/config.toml:stop:0:0``). The value
  is what ``codex app-server`` reports for the hook (JSON-RPC ``hooks/list``, ``currentHash``,
  run with the same flags); `hook_hashes` asks it. Command hooks time out after 600 s
  (``timeoutSec`` in that listing).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from donegate.errors import UserError
from donegate.harness.agents.base import AgentCLI, EventKind, ExecSetup, StopEvent, TodoStateError
from donegate.harness.agents.home import OwnHome
from donegate.harness.agents.transcript import jsonl_records
from donegate.messages import Usage
from donegate.records.checklist import TodoItem
from donegate.records.judgement import TranscriptRef
from donegate.records.status import ItemStatus
from donegate.results import Spend, SpendLine

if TYPE_CHECKING:
    from donegate.spend import PriceBook

__all__ = ["CODEX", "CodexCLI", "codex_home", "hook_hashes", "trust_entries"]

GOALS_DB = "goals_1.sqlite"
_STATUS: dict[str, ItemStatus] = {
    "complete": ItemStatus.DONE,
    "blocked": ItemStatus.BLOCKED,
}


def codex_home() -> Path:
    """Codex's own folder: ``$CODEX_HOME`` or ``~/.codex``."""
    return CODEX.home()


class CodexCLI(OwnHome, AgentCLI):
    """Codex CLI's hook payloads and goal state."""

    name = "codex"
    home_variable = "CODEX_HOME"
    home_folder = ".codex"
    title = "Codex CLI"
    stop_events: Mapping[str, EventKind] = {
        "Stop": "stop",
        "SubagentStop": "subagent_stop",
        "SessionStart": "session_start",
    }
    default_deadline = 540.0  # hooks time out after 600 s
    config_file = ".codex/hooks.json"
    install_events = ("SessionStart", "Stop", "SubagentStop")

    def todos(self, event: StopEvent, transcript: TranscriptRef) -> list[TodoItem]:
        """The session's goal from ``thread_goals`` (main agent only: a goal is per thread)."""
        if event.kind != "stop":
            return []
        path = codex_home() / GOALS_DB
        if not path.is_file():
            return []
        import sqlite3  # here: only a Codex home with goals needs it, and every hook imports this

        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
            try:
                rows = db.execute(
                    "SELECT objective, status FROM thread_goals WHERE thread_id = ?",
                    (event.session_id,),
                ).fetchall()
            finally:
                db.close()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []  # no goal was ever set in this Codex home
            raise TodoStateError(f"{path}: {exc}") from None
        except sqlite3.Error as exc:
            raise TodoStateError(f"{path}: {exc}") from None
        return [
            TodoItem.read(str(objective), status, _STATUS, "codex goal")
            for objective, status in rows
        ]

    def exec_setup(self, argv: list[str], setup: ExecSetup) -> tuple[list[str], dict[str, str]]:
        """``codex exec -c hooks.EVENT=[...] -c hooks.state={...}``: the gate as session flags.

        Hooks given with ``-c`` live for this run only (no file is written or copied, the
        user's ``CODEX_HOME`` is read as it is). Codex runs them only once trusted: their
        ``trusted_hash`` comes from ``codex app-server`` listing the same flags (never
        ``--dangerously-bypass-hook-trust``, which would also run hooks nobody trusted).
        """
        flags: list[str] = []
        for event, command in setup.commands.items():
            handler = f'{{type="command",command={json.dumps(command)},timeout={setup.timeout_s}}}'
            flags += ["-c", f"hooks.{event}=[{{hooks=[{handler}]}}]"]
        listed = hook_hashes(argv[0], env=setup.env, cwd=setup.cwd, extra_args=flags)
        entries = trust_entries(
            [h for h in listed if h.get("source") == "sessionFlags"], list(setup.commands.values())
        )
        if len(entries) < len(setup.commands):
            raise UserError(
                f"codex app-server listed {len(entries)} of the gate's {len(setup.commands)} "
                "hooks: the gate cannot be trusted in this Codex version"
            )
        state = ",".join(
            f"{json.dumps(key)}={{trusted_hash={json.dumps(value)}}}"
            for key, value in entries.items()
        )
        flags += ["-c", f"hooks.state={{{state}}}"]
        args = list(argv[1:])
        if not args or args[0] not in ("exec", "e"):
            args.insert(0, "exec")
        return [argv[0], args[0], *flags, *args[1:]], {}

    def result_of(self, stdout: str) -> tuple[str | None, str | None]:
        """``codex exec`` prints the last message (``--json``: JSONL events; the last message)."""
        last: str | None = None
        error: str | None = None
        for line in stdout.splitlines()[-2000:]:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "agent_message":
                text = item.get("text")
                last = text if isinstance(text, str) else last
            if event.get("type") in ("error", "turn.failed"):
                error = json.dumps(event.get("error") or event.get("message"))[:500]
        if last is None and error is None:
            return super().result_of(stdout)
        return last, error

    def spend_of(self, stdout: str, *, prices: PriceBook | None = None) -> Spend | None:
        """``--json``: the ``usage`` of every ``turn.completed`` event, added up. Codex CLI
        prints tokens, not dollars, and no model name: the line is ``openai:codex``, priced by a
        task's ``prices:`` entry for ``codex`` (or ``openai:codex``) when it has one."""
        usage, seen = Usage(), False
        for line in stdout.splitlines()[-5000:]:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            raw = event.get("usage") if isinstance(event, dict) else None
            if event.get("type") != "turn.completed" or not isinstance(raw, dict):
                continue
            cached = _count(raw, "cached_input_tokens")
            usage += Usage(input_tokens=_count(raw, "input_tokens"), cache_read_tokens=cached,
                           output_tokens=_count(raw, "output_tokens"))  # fmt: skip
            seen = True
        if not seen:
            return None
        from donegate.spend import PriceBook  # here: only a finished session asks

        usd = (prices if prices is not None else PriceBook()).cost("openai:codex", usage)
        return Spend(lines=(SpendLine(model="openai:codex", role="agent", usage=usage, usd=usd),))

    def transcript_spend(
        self, transcript: TranscriptRef, *, prices: PriceBook | None = None
    ) -> Spend | None:
        """The rollout's last ``token_count`` event: ``info.total_token_usage`` is the session's
        running total, priced by the model of its ``turn_context`` when the price is known."""
        model, total = "codex", None
        for record in jsonl_records(transcript):
            payload = record.get("payload")
            if not isinstance(payload, dict):
                continue
            if record.get("type") == "turn_context" and isinstance(payload.get("model"), str):
                model = payload["model"]
            info = payload.get("info") if payload.get("type") == "token_count" else None
            if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                total = info["total_token_usage"]
        if total is None:
            return None
        cached = _count(total, "cached_input_tokens")
        usage = Usage(input_tokens=_count(total, "input_tokens"), cache_read_tokens=cached,
                      output_tokens=_count(total, "output_tokens"))  # fmt: skip
        from donegate.spend import spend_of_calls  # here: only a task with a budget asks

        return spend_of_calls([(f"openai:{model}", usage)], prices=prices)


def _count(raw: dict[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


def hook_hashes(
    executable: str,
    *,
    env: Mapping[str, str],
    cwd: Path,
    extra_args: Sequence[str] = (),
    timeout: float = 30.0,
) -> list[dict[str, Any]]:
    """The hooks ``codex app-server`` sees for `cwd` (``key``, ``command``, ``currentHash``...).

    One JSON-RPC exchange over stdio: ``initialize``, ``initialized``, ``hooks/list``;
    `extra_args` (``-c`` flags) are the ones the session will run with.
    """
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"clientInfo": {"name": "donegate", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]  # fmt: skip
    try:
        proc = subprocess.Popen(
            [executable, "app-server", *extra_args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(env),
            cwd=cwd,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        raise UserError(f"cannot start {executable} app-server: {exc.strerror or exc}") from None
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        ends = time.monotonic() + timeout
        answer = _read_answer(proc, ends)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the npm launcher and the binary it started
        proc.wait()
    if "error" in answer:
        raise UserError(f"codex app-server hooks/list failed: {answer['error']}")
    hooks: list[dict[str, Any]] = []
    for entry in answer.get("result", {}).get("data", []):
        hooks.extend(h for h in entry.get("hooks", []) if isinstance(h, dict))
    return hooks


def _read_answer(proc: subprocess.Popen[str], ends: float) -> dict[str, Any]:
    """The answer to request 2, read on a thread so a silent server cannot hold us past `ends`."""
    found: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == 2:
                found.append(message)
                return

    reader = threading.Thread(target=read, name="donegate-codex-rpc", daemon=True)
    reader.start()
    reader.join(max(0.0, ends - time.monotonic()))
    if not found:
        raise UserError("codex app-server did not answer hooks/list in time")
    return found[0]


def trust_entries(hooks: Sequence[Mapping[str, Any]], commands: Sequence[str]) -> dict[str, str]:
    """``key -> currentHash`` of the listed hooks whose command is one of `commands`."""
    return {
        str(h["key"]): str(h["currentHash"])
        for h in hooks
        if h.get("command") in commands and h.get("key") and h.get("currentHash")
    }


def trust_toml(entries: Mapping[str, str]) -> str:
    """The ``config.toml`` lines trusting `entries` (keys and hashes quoted as TOML strings)."""
    return "".join(
        f"\n[hooks.state.{json.dumps(key)}]\ntrusted_hash = {json.dumps(value)}\n"
        for key, value in entries.items()
    )


CODEX = CodexCLI()
"""The Codex CLI adapter."""
