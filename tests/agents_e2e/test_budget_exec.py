"""``donegate exec --budget-usd``: the real Claude Code against the emulator stops continuing at
the task's budget, judged by the ``total_cost_usd`` Claude Code itself reports.

The script (``claude/budget.yaml``) writes half the files, then only talks; every turn reports
100k input and 1k output tokens, which Claude Code prices itself ($0.525 a turn for the model it
runs). The gate blocks the first text-only stop (checks fail, continuations are left), so the
session goes on; at a $1.20 budget it must end after the third turn, escalated (exit 3), where
without a budget the gate would continue it to the fourth (``stuck.yaml`` in
test_gated_agents).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents_e2e._agents import ALL, Emulate, Session, _run, task_file

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def exec_with_budget(label: str, tmp_path: Path, *flags: str) -> tuple[dict[str, Any], int, str]:
    """``donegate exec --json FLAGS -- CLI`` on the CLI's ``budget`` script (every turn 100k
    input and 1k output tokens), exit 3 asserted: (its summary, the model requests, the output)."""
    session = Session(next(c for c in ALL if c.label == label), tmp_path)
    with Emulate(*session.scripts("budget")) as emu:
        task_file(session.task, max_continuations=5)
        argv = [sys.executable, "-m", "donegate", "exec", "--task", str(session.task), "--json",
                *flags, "--", *session.agent_argv()]  # fmt: skip
        proc = _run(argv, session.work, session.environment(emu))
        requests = [r for r in emu.requests if r["kind"] == "model" and not r.get("side_call")]
    explain = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 3, explain
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["status"] == "escalated", explain
    return summary, len(requests), explain


def test_exec_with_claude_code_stops_continuing_at_the_usd_budget(tmp_path: Path) -> None:
    summary, requests, explain = exec_with_budget("claude", tmp_path, "--budget-usd", "1.2")
    assert summary["reason"].startswith("budget exhausted: Claude Code reported $1.575000")
    assert requests == 3, explain  # the fourth turn is never asked for
    assert summary["continuations"] == 1  # one stop was blocked; the budget ended the next
    spend = summary["spend"]
    assert spend["usd"] == pytest.approx(3 * 0.525)  # Claude Code's own total_cost_usd
    assert spend["lines"][0]["input_tokens"] == 300_000
    report = Path(summary["escalation"]["json"])
    assert json.loads(report.read_text(encoding="utf-8"))["spend"]["usd"] == pytest.approx(1.575)


@pytest.mark.parametrize("label", ["codex", "gemini"])
def test_exec_stops_continuing_at_the_token_budget_the_transcript_shows(
    label: str, tmp_path: Path
) -> None:
    """Codex CLI and Gemini CLI have no budget flag of their own, and print their spend only
    when the session ends: the gate reads the session's transcript at each stop instead (Codex's
    rollout ``token_count``, Gemini's ``tokens`` per message). Every turn reports 101k tokens;
    at a 250k budget the first stop (202k) is blocked and the second (303k) escalates, where
    the gate would otherwise continue the session to its fourth turn and past it."""
    summary, requests, explain = exec_with_budget(label, tmp_path, "--budget-tokens", "250000")
    assert "budget exhausted: " in summary["reason"], explain
    assert "303000 of the 250000 token budget" in summary["reason"], explain
    assert requests == 3, explain  # the fourth turn is never asked for
    assert summary["continuations"] == 1, explain  # one stop blocked; the budget ended the next
