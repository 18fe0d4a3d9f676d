"""Claude Code as a gated agent: the completion gate as a Claude Code ``Stop`` hook.

Claude Code runs the hook each time its agent would stop, with JSON on stdin (``session_id``,
``transcript_path``, ``stop_hook_active``, ``cwd``; 2.1.x also sends ``last_assistant_message``,
the turn that ended, kept as the claim each block judged). The hook runs the task's acceptance
checks in ``cwd``; while they fail it answers ``{"decision": "block", "reason": ...}``, which
Claude Code sends back to the model as the next user message ("Stop hook feedback: ...").
Blocks are counted per session in a small JSON state file; once ``max_continuations`` blocks
are spent the stop is let through and an escalation report is written (once), so a stuck
session ends and can be reviewed.

The count, not ``stop_hook_active``, bounds the loop: that flag only says the current stop
follows a block, and a task may need several continuations before its checks pass.
Claude Code 2.1.197 has a bound of its own: after 8 continuations in a row with no tool call
between them it ignores the next block and ends the session (an empty ``result``), so for an
agent that only talks a ``max_continuations`` above 8 is never reached and nothing escalates.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from donegate.errors import UserError
from donegate.harness.checks import CheckResult, run_checks
from donegate.harness.escalation import build_report, write_report
from donegate.harness.gate import nudge_text
from donegate.harness.spec import TaskSpec

__all__ = ["HookDecision", "HookInput", "claude_stop", "parse_hook_input", "state_dir"]


@dataclass(frozen=True, kw_only=True, slots=True)
class HookInput:
    """What Claude Code sends a Stop hook."""

    session_id: str
    """The Claude Code session."""
    cwd: Path
    """The session's working directory: where the checks run."""
    stop_hook_active: bool = False
    """True when this stop follows a block by a Stop hook."""
    transcript_path: str | None = None
    """The session's transcript (JSONL), kept in the report for review."""
    last_assistant_message: str | None = None
    """The text of the turn that ended: the claim being judged (not sent by older versions)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HookDecision:
    """The hook's answer."""

    block: bool
    """True: Claude must continue with `reason`."""
    reason: str
    """The nudge (when blocking) or why the stop was let through."""
    blocks: int
    """Blocks spent in this session so far."""
    checks: tuple[CheckResult, ...] = ()
    """The check results this decision was made on."""
    report: Path | None = None
    """The escalation report written by this decision, if any."""

    @property
    def output(self) -> dict[str, Any] | None:
        """The JSON to print on stdout (None: print nothing and let the stop through)."""
        return {"decision": "block", "reason": self.reason} if self.block else None


def parse_hook_input(text: str) -> HookInput:
    """Read the hook's stdin; `UserError` names what is missing."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise UserError(f"hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UserError("hook input must be a JSON object")
    session = data.get("session_id")
    if not isinstance(session, str) or not session:
        raise UserError("hook input has no session_id")
    cwd = data.get("cwd") or os.getcwd()
    if not isinstance(cwd, str):
        raise UserError("hook input cwd must be a string")
    transcript = data.get("transcript_path")
    claim = data.get("last_assistant_message")
    return HookInput(
        session_id=session,
        cwd=Path(cwd),
        stop_hook_active=data.get("stop_hook_active") is True,
        transcript_path=transcript if isinstance(transcript, str) else None,
        last_assistant_message=claim if isinstance(claim, str) else None,
    )


def state_dir(cwd: Path) -> Path:
    """Where hook state and reports live: ``$DONEGATE_HOME`` or ``<cwd>/.donegate``."""
    home = os.environ.get("DONEGATE_HOME")
    return Path(home) if home else cwd / ".donegate"


def claude_stop(spec: TaskSpec, hook: HookInput, *, check_timeout: float = 120.0) -> HookDecision:
    """Decide one stop: block while the checks fail, until the continuations are spent."""
    root = hook.cwd.resolve()
    if not root.is_dir():
        raise UserError(f"hook cwd is not a directory: {root}")
    base = state_dir(root)
    state_file = base / "hooks" / f"{_safe(spec.id)}--{_safe(hook.session_id)}.json"
    state = _load(state_file)
    checks = tuple(run_checks(spec.checks, root, timeout=check_timeout))
    failed = [c for c in checks if not c.passed]
    now = time.time()
    state.setdefault("history", []).append(
        {
            "at": now,
            "stop_hook_active": hook.stop_hook_active,
            "failed_checks": [c.name for c in failed],
        }
    )
    if not failed:
        state.update(blocks=0, escalated=None, passed_at=now)
        _save(state_file, state)
        return HookDecision(block=False, reason="every check passed", blocks=0, checks=checks)

    problems = ["failed checks: " + ", ".join(f"{c.name} ({c.detail})" for c in failed)]
    blocks = int(state.get("blocks", 0))
    if blocks < spec.max_continuations:
        blocks += 1
        state["blocks"] = blocks
        state.setdefault("reasons", []).append(problems[0])
        state.setdefault("claims", []).append(hook.last_assistant_message)
        _save(state_file, state)
        return HookDecision(block=True, reason=nudge_text(problems), blocks=blocks, checks=checks)

    report_path: Path | None = None
    if not state.get("escalated"):
        reason = f"checks still failing after {blocks} continuation(s): {problems[0]}"
        claims = list(state.get("claims", []))
        report = build_report(
            task_id=spec.id,
            reason=reason,
            prompt=spec.prompt,
            completion_condition=spec.completion_condition,
            continuations=blocks,
            max_continuations=spec.max_continuations,
            checks=checks,
            rounds=[
                {
                    "round": i + 1,
                    "claim": (claims[i] if i < len(claims) else None) or "(Claude Code stopped)",
                    "problems": [r],
                    "verdict": "continue",
                }
                for i, r in enumerate(state.get("reasons", []))
            ],
            transcript=_read_transcript(hook.transcript_path),
            extra={
                "session_id": hook.session_id,
                "transcript_path": hook.transcript_path,
                "cwd": str(root),
                "last_assistant_message": hook.last_assistant_message,
            },
        )
        report_path, _ = write_report(report, base / "escalations")
        state["escalated"] = str(report_path)
        _save(state_file, state)
    return HookDecision(
        block=False,
        reason=f"escalated after {blocks} continuation(s); stop let through",
        blocks=blocks,
        checks=checks,
        report=report_path,
    )


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}  # a damaged state file restarts the count (still bounded) rather than failing
    return data if isinstance(data, dict) else {}


def _save(path: Path, state: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
    tmp.replace(path)


def _read_transcript(path: str | None) -> list[Any]:
    """The session transcript's JSONL lines, parsed (unreadable lines kept as text)."""
    if not path:
        return []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out: list[Any] = []
    for line in lines:
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append(line)
    return out


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80] or "_"
