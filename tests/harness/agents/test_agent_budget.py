"""A task's ``budget:`` holds inside an agent CLI's session: at each stop the hook reads what the
session spent from the CLI's own transcript, and a stop it would block (a continuation, paid for
again) escalates instead once the budget is spent.

The transcripts are written in each CLI's format, as measured on Claude Code 2.1.332, Codex CLI
0.171.0 and Gemini CLI 0.61.0 (the real CLIs' budget runs are in tests/agents_e2e)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload, reports, write_task

from donegate.harness.agents import AGENTS
from donegate.harness.agents.transcript import locate


def claude_records(turns: int, tokens: int) -> list[dict[str, Any]]:
    """Assistant messages, each split over two records (one per content block) as Claude Code
    writes them: the usage must be counted once per message id."""
    usage = {"input_tokens": tokens - 500, "cache_read_input_tokens": 0,
             "cache_creation_input_tokens": 0, "output_tokens": 500}  # fmt: skip
    return [
        {"type": "assistant", "uuid": f"u{i}{part}",
         "message": {"id": f"msg_{i}", "model": "claude-sonnet-4-5", "usage": usage}}
        for i in range(turns) for part in "ab"
    ]  # fmt: skip


def codex_records(turns: int, tokens: int) -> list[dict[str, Any]]:
    """A rollout: the turn context (the model), then one running ``token_count`` per turn."""
    out: list[dict[str, Any]] = [{"type": "turn_context", "payload": {"model": "gpt-5"}}]
    for i in range(1, turns + 1):
        total = {"input_tokens": i * (tokens - 500), "cached_input_tokens": 0,
                 "output_tokens": i * 500, "total_tokens": i * tokens}  # fmt: skip
        info = {"total_token_usage": total, "last_token_usage": {}}
        out.append({"type": "event_msg", "payload": {"type": "token_count", "info": info}})
    return out


def gemini_records(turns: int, tokens: int) -> list[dict[str, Any]]:
    """Chat records: ``gemini`` messages with their ``tokens``, the last one written twice (an
    update of the same message id)."""
    out = [
        {"id": f"m{i}", "type": "gemini", "model": "gemini-2.5-flash", "content": "...",
         "tokens": {"input": tokens - 500, "output": 400, "thoughts": 100, "cached": 0,
                    "total": tokens}}
        for i in range(turns)
    ]  # fmt: skip
    return [{"id": "u0", "type": "user", "content": "go"}, *out, out[-1]]


RECORDS = {"claude": claude_records, "codex": codex_records, "gemini": gemini_records}


def transcript(work: Path, agent: str, turns: int, tokens: int = 101_000) -> Path:
    path = work / f"{agent}-session.jsonl"  # the session's cwd is an allowed place
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS[agent](turns, tokens)))
    return path


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_each_cli_transcript_gives_the_sessions_tokens(agent: str, tmp_path: Path) -> None:
    path = transcript(tmp_path, agent, turns=3)
    spent = AGENTS[agent].transcript_spend(locate(str(path), [tmp_path]))
    assert spent is not None and spent.tokens == 303_000


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_stop_past_the_token_budget_escalates_instead_of_continuing(
    agent: str, hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    task = write_task(tmp_path / "budget.yaml", max_continuations=5, budget={"tokens": 250_000})
    first = transcript(work, agent, turns=2)  # 202k: within the budget, the stop is blocked
    out = hook(agent, payload(agent, work, transcript_path=str(first)), task=str(task))
    assert out.action == "block", out.problems
    second = transcript(work, agent, turns=3)  # 303k: the next continuation would pass it
    out = hook(agent, payload(agent, work, transcript_path=str(second)), task=str(task))
    assert out.action == "escalate", out
    [report] = reports(homes["data"])
    assert report["reason"].startswith("budget exhausted: "), report["reason"]
    assert "303000 of the 250000 token budget" in report["reason"]


def test_a_usd_budget_is_priced_from_the_transcript(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    task = write_task(tmp_path / "budget.yaml", max_continuations=5, budget={"usd": 0.5})
    path = transcript(work, "claude", turns=3)  # 3 x (100.5k in, 0.5k out) at Sonnet 4.5's price
    out = hook("claude", payload("claude", work, transcript_path=str(path)), task=str(task))
    assert out.action == "escalate", out
    [report] = reports(homes["data"])
    assert "of the $0.5 budget" in report["reason"], report["reason"]


def test_without_a_budget_the_transcript_spend_changes_nothing(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    path = transcript(work, "codex", turns=50)  # 5 M tokens, no budget: blocked as always
    out = hook("codex", payload("codex", work, transcript_path=str(path)))
    assert out.action == "block", out
