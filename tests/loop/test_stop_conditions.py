"""Seed 000: the loop stops exactly when the task is done and never calls a broken turn done.

Every test runs in every mode (direct, and each wire format over the official SDK, streamed and
not) with a step limit of 8 over shorter scripts, so only a real stop condition passes.
"""

from __future__ import annotations

import pytest

from donegate.events import Progress
from donegate.loop import RunResult, Status
from tests.loop.conftest import MODES, play

SEARCH = {"search": {"returns": {"hits": ["a"]}}}


def test_stops_on_the_finishing_turn_without_calling_again(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "max_steps": 8,
            "tools": SEARCH,
            "turns": [
                {"tool_call": "search", "args": {"q": "x"}},
                {"text": "Found one result."},
            ],
        },
        mode,
    )
    assert p.result.status is Status.COMPLETE
    assert p.result.text == "Found one result."
    assert p.player.calls == 2  # not 3: no extra lap after the final turn
    assert p.result.model_calls == 2
    assert p.result.tool_counts == {"search": 1}
    assert p.player.unused_turns == ()


def test_a_truncated_turn_is_not_complete(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": SEARCH,
            "turns": [
                {"text": "The refund has been", "ending": "truncated"},
                {"text": "The refund has been started and", "ending": "truncated"},
            ],
        },
        mode,
    )
    assert p.result.status is Status.TRUNCATED
    assert p.player.calls == 2  # one retry with a doubled limit, then stop
    first, second = p.player.requests
    assert first.settings.max_tokens in (None, 4096)  # Anthropic requires a limit: 4096
    assert second.settings.max_tokens == 8192
    assert p.result.tool_counts == {}


# Anthropic (whole bodies) and Gemini send arguments as objects: a cut call cannot be rendered.
@pytest.mark.parametrize(
    "mode", [m for m in MODES if not m.startswith(("anthropic-messages/json", "gemini"))]
)
def test_a_truncated_tool_call_is_never_executed(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": SEARCH,
            "turns": [
                {"tool_call": "search", "args_raw": '{"q": "x', "ending": "truncated"},
                {"tool_call": "search", "args_raw": '{"q": "xy', "ending": "truncated"},
            ],
        },
        mode,
    )
    assert p.result.status is Status.TRUNCATED
    assert p.player.calls == 2
    assert p.result.tool_counts == {}
    assert [r.executed for r in p.result.tool_calls] == [False]


@pytest.mark.parametrize(
    ("mode", "ending", "status"),
    [(m, "filtered", Status.FILTERED) for m in MODES]
    # Gemini has no structured refusal signal
    + [(m, "refused", Status.REFUSED) for m in MODES if not m.startswith("gemini")],
)
def test_filtered_and_refused_end_the_run_without_retry(
    mode: str, ending: str, status: Status
) -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": SEARCH,
            "turns": [{"text": "I can't help with that.", "ending": ending}],
        },
        mode,
    )
    assert p.result.status is status
    assert p.player.calls == 1


def test_a_thinking_only_turn_is_empty_not_complete(mode: str) -> None:
    p = play({"prompt": "migrate", "turns": [{"thinking": "Progress: 4 of 6 done."}]}, mode)
    assert p.result.status is Status.EMPTY
    assert p.result.text == ""
    assert p.player.calls == 1


def test_a_progress_update_becomes_a_progress_event(mode: str) -> None:
    p = play(
        {
            "prompt": "migrate",
            "tools": SEARCH,
            "turns": [
                {"thinking": "Progress: 4 of 6 done.", "tool_call": "search", "args": {}},
                {"text": "All 6 endpoints migrated."},
            ],
        },
        mode,
    )
    assert p.result.status is Status.COMPLETE
    assert p.result.text == "All 6 endpoints migrated."  # the update is never the answer
    progress = [e.text for e in p.events if isinstance(e, Progress)]
    if mode == "direct":
        assert progress == ["Progress: 4 of 6 done."]
    else:  # on the wire, a thinking block is an update only under `display: "updates"`
        assert progress == []


def test_the_step_limit_is_only_a_guard(mode: str) -> None:
    p = play(
        {
            "prompt": "loop",
            "max_steps": 2,
            "tools": SEARCH,
            "turns": [
                {"tool_call": "search", "args": {"q": "1"}},
                {"tool_call": "search", "args": {"q": "2"}},
            ],
        },
        mode,
    )
    assert p.result.status is Status.MAX_STEPS
    assert p.player.calls == 2
    # the calls of the last allowed turn are recorded, never executed
    assert p.result.tool_counts == {"search": 1}
    assert [r.executed for r in p.result.tool_calls] == [True, False]


def test_a_provider_error_is_retried_by_the_transport(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": SEARCH,
            "turns": [{"http_error": 529, "retry_after": 0}, {"text": "Found it."}],
        },
        mode,
    )
    assert p.result.status is Status.COMPLETE
    assert p.player.calls == 2


def test_provider_errors_that_persist_end_as_provider_error(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "turns": [{"http_error": 500, "retry_after": 0}] * 3,
        },
        mode,
    )
    assert p.result.status is Status.PROVIDER_ERROR
    assert p.player.calls == 3  # the first call and the transport's two retries


def test_context_exceeded_ends_the_run_without_retry(mode: str) -> None:
    p = play({"prompt": "summarize", "turns": [{"text": "", "ending": "context_exceeded"}]}, mode)
    assert p.result.status is Status.CONTEXT_EXCEEDED
    assert p.player.calls == 1


def test_the_token_budget_stops_the_run_before_the_next_call() -> None:
    p = play(
        {
            "prompt": "loop",
            "tools": SEARCH,
            "turns": [
                {
                    "tool_call": "search",
                    "args": {},
                    "usage": {"input_tokens": 60, "output_tokens": 50},
                },
                {"text": "never asked for"},
            ],
        },
        "direct",
        budget_tokens=100,
    )
    assert p.result.status is Status.BUDGET_EXCEEDED
    assert p.player.calls == 1
    assert p.result.usage.total_tokens == 110
    assert len(p.player.unused_turns) == 1


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic-messages", "gemini"])
def test_the_streamed_run_ends_in_the_same_result_as_the_plain_one(api: str) -> None:
    script = {
        "prompt": "order 55219 arrived smashed",
        "tools": {"get_order": {"returns": {"sku": "MUG-01"}}},
        "turns": [
            {"text": "Let me look.", "tool_call": "get_order", "args": {"order_id": "55219"}},
            {"text": "I've started a refund."},
        ],
    }
    plain, streamed = play(script, f"{api}/json"), play(script, f"{api}/sse")

    def essence(r: RunResult) -> tuple[object, ...]:
        return (
            r.status,
            r.text,
            r.output,
            r.model_calls,
            r.ending,
            r.tool_counts,
            [(m.role, m.text, [c.arguments for c in m.tool_calls]) for m in r.transcript],
        )

    assert essence(plain.result) == essence(streamed.result)
    assert any(e.kind == "text_delta" for e in streamed.events)
    assert not any(e.kind == "text_delta" for e in plain.events)
