"""What every agent CLI's hook shares: the stop event, the agent's todo items, the adapter.

Each CLI module (`claude`, `codex`, `gemini`) turns its CLI's hook payload into one `StopEvent`,
reads the agent's own todo/goal state into `TodoItem` values, and shapes the answer its CLI
documents. The gate itself (`core`) never names a CLI: it sees events, items and answers.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from donegate.errors import HookInputError, TodoStateError, UserError
from donegate.records.checklist import TodoItem
from donegate.records.judgement import TranscriptRef
from donegate.results import Spend

if TYPE_CHECKING:
    from donegate.spend import PriceBook

__all__ = [
    "MAX_PAYLOAD_BYTES",
    "AgentCLI",
    "EventKind",
    "ExecSetup",
    "HookInputError",
    "StopEvent",
    "TodoStateError",
    "parse_payload",
    "safe_id",
]

MAX_PAYLOAD_BYTES = 4 * 1024 * 1024
"""Hook stdin larger than this is refused (the CLIs send a few KiB)."""

EventKind = Literal["stop", "subagent_stop", "session_start"]
"""What the CLI is reporting: its agent (or a subagent) would stop, or a session began."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StopEvent:
    """One hook call, in the terms the gate decides on."""

    agent: str
    """The CLI's adapter name (``claude``, ``codex``, ``gemini``)."""
    kind: EventKind
    event_name: str
    """``hook_event_name`` as the CLI sent it."""
    session_id: str
    cwd: Path
    """The session's working directory: where the checks run."""
    claim: str | None = None
    """The text the payload carries for the turn that ended (Gemini: accumulated)."""
    transcript_path: str | None = None
    """The transcript the CLI names (a subagent's own one for a subagent stop)."""
    stop_hook_active: bool = False
    """True when the CLI says this stop follows a block (advisory: the gate counts itself)."""
    subagent_id: str | None = None
    """The subagent whose stop this is (subagent stops only)."""
    running: tuple[str, ...] = ()
    """Background work the CLI reports still running (the CLI wakes the agent when it ends)."""
    payload: Mapping[str, Any] = field(default_factory=dict)
    """The whole payload, for the CLI module's own readers."""


class AgentCLI:
    """One agent CLI: its payload, its answer, its own data folder, its todo state.

    Subclasses set the class attributes and override what differs; every method here is the
    behaviour Claude Code, Codex CLI and Gemini CLI share.
    """

    name: str = ""
    """The adapter name used on the command line (``donegate hook NAME``)."""
    title: str = ""
    """The CLI's product name, for messages."""
    stop_events: Mapping[str, EventKind] = {}
    """``hook_event_name`` values this CLI sends and what each means."""
    default_deadline: float = 540.0
    """Seconds the hook may take when ``--deadline`` is not given (inside the CLI's timeout)."""
    block_decision: str = "block"
    """The ``decision`` value of a blocking answer."""

    def parse(self, data: Mapping[str, Any]) -> StopEvent:
        """The event in a decoded payload; `HookInputError` names what is missing."""
        raw_event = data.get("hook_event_name")
        if raw_event is None:
            raw_event = next(iter(self.stop_events))  # older versions omit it on Stop
        if not isinstance(raw_event, str) or raw_event not in self.stop_events:
            known = ", ".join(self.stop_events)
            raise HookInputError(f"hook_event_name {raw_event!r} is not one of {known}")
        session = data.get("session_id")
        if not isinstance(session, str) or not session.strip():
            raise HookInputError("the payload has no session_id")
        cwd = data.get("cwd")
        if cwd is None:
            cwd = os.getcwd()  # the CLIs run hooks in the session's directory
        if not isinstance(cwd, str) or not cwd or "\0" in cwd:
            raise HookInputError("cwd must be a non-empty string")
        active = data.get("stop_hook_active", False)
        if not isinstance(active, bool):
            raise HookInputError("stop_hook_active must be true or false")
        kind = self.stop_events[raw_event]
        return StopEvent(
            agent=self.name,
            kind=kind,
            event_name=raw_event,
            session_id=session,
            cwd=Path(cwd),
            claim=self.claim_of(data),
            transcript_path=self.transcript_of(data, kind),
            stop_hook_active=active,
            subagent_id=self.subagent_of(data) if kind == "subagent_stop" else None,
            running=self.running_of(data) if kind == "stop" else (),
            payload=data,
        )

    def claim_of(self, data: Mapping[str, Any]) -> str | None:
        """The claim the payload carries (``last_assistant_message`` by default)."""
        return _opt_str(data, "last_assistant_message")

    def newest_claim(self, claim: str | None, previous: str | None) -> str | None:
        """The part of `claim` this stop added (the CLIs that accumulate override this)."""
        return claim

    def transcript_of(self, data: Mapping[str, Any], kind: EventKind) -> str | None:
        """The transcript the payload names: a subagent's own one at its stop."""
        own = _opt_str(data, "agent_transcript_path")
        if kind == "subagent_stop" and own is not None:
            return own
        return _opt_str(data, "transcript_path")

    def subagent_of(self, data: Mapping[str, Any]) -> str | None:
        """The subagent id of a subagent stop."""
        return _opt_str(data, "agent_id")

    def running_of(self, data: Mapping[str, Any]) -> tuple[str, ...]:
        """Background work still running, as the payload reports it (none by default)."""
        return ()

    def data_roots(self) -> list[Path]:
        """The CLI's own data folder(s): transcripts under them may be read."""
        return []

    def state_folders(self, env: Mapping[str, str]) -> list[Path]:
        """The folders the CLI keeps its own state in under `env` (its config home): writable
        in the sandbox ``donegate exec`` runs it in, where the rest of the home is not there."""
        return []

    def todos(self, event: StopEvent, transcript: TranscriptRef) -> list[TodoItem]:
        """The agent's todo/goal state for this session (`TodoStateError` when unreadable)."""
        return []

    def answer(self, reason: str) -> dict[str, Any]:
        """The blocking answer this CLI documents."""
        return {"decision": self.block_decision, "reason": reason}

    # -- install and exec -------------------------------------------------------------------

    config_file: str = ""
    """The project config file install writes, relative to the project folder."""
    install_events: tuple[str, ...] = ()
    """The hook events install registers."""

    def hook_entry(self, command: str, timeout_s: int) -> dict[str, Any]:
        """One hook handler as this CLI's config writes it."""
        return {"type": "command", "command": command, "timeout": timeout_s}

    def exec_setup(self, argv: list[str], setup: ExecSetup) -> tuple[list[str], dict[str, str]]:
        """The command line and environment running this CLI headless with the gate installed.

        Only for this run: the CLI reads the gate's hooks from files under `setup.run_dir`
        (a settings file, a config home, a defaults file); the user's own files are untouched.
        """
        raise UserError(f"{self.title or 'this agent'} cannot be run by donegate exec")

    def result_of(self, stdout: str) -> tuple[str | None, str | None]:
        """What a headless run printed: ``(result text, provider error or None)``."""
        text = stdout.strip()
        return (text[-4000:] or None), None

    def spend_of(self, stdout: str, *, prices: PriceBook | None = None) -> Spend | None:
        """The spend the CLI itself reported in its headless output (every continuation of
        the session included), by model, its tokens priced by `prices` (the task's `price_book`;
        `genai-prices` alone when None) where the CLI reports no cost; None when it printed
        none."""
        return None

    def transcript_spend(
        self, transcript: TranscriptRef, *, prices: PriceBook | None = None
    ) -> Spend | None:
        """The session's spend so far as its own transcript records it (every model call up to
        this stop, continuations included), by model, priced by `prices` (the task's
        `price_book`; `genai-prices` alone when None); None when it records none. The hook
        reads it at each stop, so a budget ends the session before the next continuation."""
        return None


@dataclass(frozen=True, kw_only=True, slots=True)
class ExecSetup:
    """What a CLI module needs to install the gate for one ``donegate exec`` run."""

    run_dir: Path
    """A private folder for this run's config files."""
    commands: Mapping[str, str]
    """The hook command line per event (``Stop``, ``AfterAgent``, ...)."""
    timeout_s: int
    """The hook timeout to write into the CLI's config."""
    budget: int
    """The continuations the gate will grant (the CLI's own cap is raised above it)."""
    env: Mapping[str, str]
    """The environment the CLI will run in (before this setup's changes)."""
    cwd: Path
    """Where the CLI will run."""
    budget_usd: float | None = None
    """The task's dollar budget: a CLI with a spend cap of its own is given it."""


def parse_payload(raw: str | bytes) -> dict[str, Any]:
    """Decode hook stdin into a JSON object; `HookInputError` says what is wrong with it."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HookInputError(
                f"hook input is not UTF-8 text ({exc.reason} at byte {exc.start})"
            ) from None
    else:
        text = raw
    if len(text) > MAX_PAYLOAD_BYTES:
        raise HookInputError(f"hook input is {len(text)} bytes, over {MAX_PAYLOAD_BYTES}")
    if not text.strip():
        raise HookInputError("hook input is empty (expected the CLI's JSON payload)")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HookInputError(f"hook input is not JSON: {exc}") from None
    except RecursionError:
        raise HookInputError("hook input is nested too deeply") from None
    if not isinstance(data, dict):
        raise HookInputError(f"hook input must be a JSON object, got {type(data).__name__}")
    return data


def safe_id(value: str, limit: int = 96) -> str:
    """`value` as one file-name component (ids come from payloads: never a path)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", value).strip(".")[:limit]
    return cleaned or "_"


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None
