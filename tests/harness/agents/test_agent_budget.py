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


def claude_records(
    turns: int, tokens: int, model: str = "claude-sonnet-4-5"
) -> list[dict[str, Any]]:
    """Assistant messages, each split over two records (one per content block) as Claude Code
    writes them: the usage must be counted once per message id."""
    usage = {"input_tokens": tokens - 500, "cache_read_input_tokens": 0,
             "cache_creation_input_tokens": 0, "output_tokens": 500}  # fmt: skip
    return [
        {"type": "assistant", "uuid": f"u{i}{part}",
         "message": {"id": f"msg_{i}", "model": model, "usage": usage}}
        for i in range(turns) for part in "ab"
    ]  # fmt: skip


def codex_records(turns: int, tokens: int, model: str = "gpt-5") -> list[dict[str, Any]]:
    """A rollout: the turn context (the model), then one running ``token_count`` per turn."""
    out: list[dict[str, Any]] = [{"type": "turn_context", "payload": {"model": model}}]
    for i in range(1, turns + 1):
        total = {"input_tokens": i * (tokens - 500), "cached_input_tokens": 0,
                 "output_tokens": i * 500, "total_tokens": i * tokens}  # fmt: skip
        info = {"total_token_usage": total, "last_token_usage": {}}
        out.append({"type": "event_msg", "payload": {"type": "token_count", "info": info}})
    return out


def gemini_records(
    turns: int, tokens: int, model: str = "gemini-2.5-flash"
) -> list[dict[str, Any]]:
    """Chat records: ``gemini`` messages with their ``tokens``, the last one written twice (an
    update of the same message id)."""
    out = [
        {"id": f"m{i}", "type": "gemini", "model": model, "content": "...",
         "tokens": {"input": tokens - 500, "output": 400, "thoughts": 100, "cached": 0,
                    "total": tokens}}
        for i in range(turns)
    ]  # fmt: skip
    return [{"id": "u0", "type": "user", "content": "go"}, *out, out[-1]]


RECORDS = {"claude": claude_records, "codex": codex_records, "gemini": gemini_records}


def transcript(
    work: Path, agent: str, turns: int, tokens: int = 101_000, model: str | None = None
) -> Path:
    path = work / f"{agent}-session.jsonl"  # the session's cwd is an allowed place
    records = RECORDS[agent](turns, tokens, **({"model": model} if model else {}))
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
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


PRIVATE = {"claude": "claude-house", "codex": "gpt-test", "gemini": "gemini-house"}
"""A model per CLI that genai-prices does not know (the emulator's ``gpt-test``, a private one)."""
PROVIDER = {"claude": "anthropic", "codex": "openai", "gemini": "google"}


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_usd_budget_prices_an_unknown_model_from_the_tasks_prices(
    agent: str, hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    """Every turn is 100.5k input and 0.5k output tokens: $0.1025 at the task's own price."""
    work, model = homes["work"], PRIVATE[agent]
    task = write_task(tmp_path / "budget.yaml", max_continuations=5, budget={"usd": 0.25},
                      prices={model: {"input": 1.0, "output": 4.0}})  # fmt: skip
    first = transcript(work, agent, turns=2, model=model)  # $0.205: within, blocked
    out = hook(agent, payload(agent, work, transcript_path=str(first)), task=str(task))
    assert out.action == "block", out
    second = transcript(work, agent, turns=3, model=model)  # $0.3075: the budget is spent
    out = hook(agent, payload(agent, work, transcript_path=str(second)), task=str(task))
    assert out.action == "escalate", out
    [report] = reports(homes["data"])
    assert report["reason"].startswith("budget exhausted: "), report["reason"]
    assert "reported $0.307500 of the $0.25 budget" in report["reason"], report["reason"]


def test_the_tasks_prices_come_before_genai_prices(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    """Sonnet 4.5 at genai-prices' rates spends the $0.5 in three turns ($0.927, the test
    above); at the task's own rate for it ($0.3075) the stop is blocked as under budget."""
    work, own = homes["work"], {"anthropic:claude-sonnet-4-5": {"input": 1.0, "output": 4.0}}
    task = write_task(tmp_path / "budget.yaml", max_continuations=5, budget={"usd": 0.5},
                      prices=own)  # fmt: skip
    path = transcript(work, "claude", turns=3)
    out = hook("claude", payload("claude", work, transcript_path=str(path)), task=str(task))
    assert out.action == "block", out
    assert reports(homes["data"]) == []


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_usd_budget_on_a_model_with_no_price_fails_closed(
    agent: str, hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    """Unpriced, the session's dollars would count as nothing and the budget never be reached:
    the first stop the gate would block escalates instead, naming the model to price."""
    work, model = homes["work"], PRIVATE[agent]
    task = write_task(tmp_path / "budget.yaml", max_continuations=5, budget={"usd": 100.0},
                      prices={"some-other-model": {"input": 1.0, "output": 4.0}})  # fmt: skip
    path = transcript(work, agent, turns=1, model=model)
    out = hook(agent, payload(agent, work, transcript_path=str(path)), task=str(task))
    assert out.action == "escalate", out
    [report] = reports(homes["data"])
    reason = report["reason"]
    assert "\n" not in reason
    assert reason.startswith("budget.usd cannot be kept: "), reason
    assert f"101000 tokens on model '{PROVIDER[agent]}:{model}'" in reason, reason
    assert "no known price" in reason and "`prices:` in the task" in reason, reason


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_tokens_budget_is_unaffected_by_a_model_with_no_price(
    agent: str, hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    """The same unpriced transcripts under a token budget alone: blocked within it, escalated
    past it on tokens, never for the missing price."""
    work, model = homes["work"], PRIVATE[agent]
    task = write_task(tmp_path / "budget.yaml", max_continuations=5, budget={"tokens": 250_000})
    first = transcript(work, agent, turns=2, model=model)
    out = hook(agent, payload(agent, work, transcript_path=str(first)), task=str(task))
    assert out.action == "block", out
    second = transcript(work, agent, turns=3, model=model)
    out = hook(agent, payload(agent, work, transcript_path=str(second)), task=str(task))
    assert out.action == "escalate", out
    [report] = reports(homes["data"])
    assert report["reason"] == (
        f"budget exhausted: {AGENTS[agent].title}'s transcript reported 303000 of the 250000 "
        "token budget"
    ), report["reason"]


def test_a_finished_sessions_output_is_priced_by_the_tasks_prices() -> None:
    """exec reads the spend a CLI printed at its end: tokens a CLI gives without a cost are
    priced by the task's `price_book`; Claude Code's own cost stands."""
    from donegate.spend import Price, PriceBook

    def price_book(prices: dict[str, dict[str, float]]) -> PriceBook:
        return PriceBook({name: Price(**price) for name, price in prices.items()})

    codex_out = "\n".join(
        json.dumps({"type": "turn.completed", "usage": {"input_tokens": n, "output_tokens": 10}})
        for n in (1_000_000, 1_000_000)
    )
    book = price_book({"codex": {"input": 1.0, "output": 100_000.0}})
    (line,) = AGENTS["codex"].spend_of(codex_out, prices=book).lines  # type: ignore[union-attr]
    assert line.usage.input_tokens == 2_000_000 and line.usd == pytest.approx(4.0)
    assert AGENTS["codex"].spend_of(codex_out).lines[0].usd is None  # type: ignore[union-attr]

    gemini_out = json.dumps(
        {"stats": {"models": {"gemini-test": {"tokens": {"prompt": 2_000_000, "candidates": 0}}}}}
    )
    book = price_book({"google:gemini-test": {"input": 3.0, "output": 1.0}})
    (line,) = AGENTS["gemini"].spend_of(gemini_out, prices=book).lines  # type: ignore[union-attr]
    assert line.usd == pytest.approx(6.0)

    claude_out = json.dumps({"type": "result", "total_cost_usd": 0.5, "modelUsage": {}})
    book = price_book({"anthropic:claude-code": {"input": 1000.0, "output": 1000.0}})
    (line,) = AGENTS["claude"].spend_of(claude_out, prices=book).lines  # type: ignore[union-attr]
    assert line.usd == 0.5
