"""Seed 004: a whole multi-turn conversation, asserted on the transcript the loop built."""

from __future__ import annotations

from pathlib import Path

import pytest

from donegate.loop import Policies, Status
from donegate.messages import Message
from donegate.testing.invariants import transcript_problems
from donegate.testing.player import ScriptedModel
from donegate.testing.script import load_script, parse_script
from tests.loop.conftest import MODES, Played, play

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def refund() -> dict[str, object]:
    return {
        "prompt": "order 55219 arrived smashed",
        "max_steps": 8,
        "tools": {
            "get_order": {
                "returns": {
                    "sku": "MUG-01",
                    "total_cents": 1499,
                    "purchased_at": "2026-07-30",
                    "status": "delivered",
                }
            },
            "get_refund_policy": {"returns": {"eligible": True, "window_days": 30}},
            "start_refund": {
                "returns": {"refund_id": "rf_88", "state": "pending"},
                "side_effect": True,
            },
        },
        "turns": [
            {"tool_call": "get_order", "args": {"order_id": "55219"}, "id": "c1"},
            {
                "tool_call": "get_refund_policy",
                "args": {"sku": "MUG-01", "purchased_at": "2026-07-30"},
                "id": "c2",
            },
            {
                "tool_call": "start_refund",
                "args": {"order_id": "55219", "amount_cents": 1499, "reason": "damaged"},
                "id": "c3",
            },
            {"text": "I've started a refund of EUR 14.99 for order 55219."},
        ],
    }


def call_and_result_ids(messages: tuple[Message, ...]) -> tuple[list[str], list[str]]:
    calls = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls]
    results = [r.call_id for m in messages if m.role == "tool" for r in m.results]
    return calls, results


def test_the_refund_conversation_runs_to_completion(mode: str) -> None:
    p = play(refund(), mode)
    assert p.result.status is Status.COMPLETE
    assert p.player.calls == 4
    # tools ran in the scripted order, once each
    assert [r.call.name for r in p.result.tool_calls] == [
        "get_order",
        "get_refund_policy",
        "start_refund",
    ]
    # what the provider received last: every call answered once, with its own id, in order
    last = p.player.requests[-1].messages
    calls, results = call_and_result_ids(last)
    assert calls == results
    assert len(calls) == 3
    # the user message exactly once, and first after any system message
    users = [m for m in last if m.role == "user"]
    assert [u.text for u in users] == ["order 55219 arrived smashed"]
    assert last[0].role in ("user", "system") and (last[0].role == "user" or last[1] == users[0])
    # the dependent call used what get_order returned
    policy_call = p.result.tool_calls[1].call
    assert policy_call.arguments is not None
    assert policy_call.arguments["sku"] == "MUG-01"
    assert '"sku": "MUG-01"' in p.result.tool_calls[0].result.content


def test_the_refund_script_file_matches_the_inline_script() -> None:
    script = load_script(SCRIPTS / "refund.yaml")
    assert script.prompt == "order 55219 arrived smashed"
    assert [c.name for t in script.turns for c in t.tool_calls] == [
        "get_order",
        "get_refund_policy",
        "start_refund",
    ]


def test_a_failing_tool_becomes_an_error_result_and_the_loop_goes_on(mode: str) -> None:
    data = refund()
    data["tools"]["get_refund_policy"] = {  # type: ignore[index]
        "results": [{"raises": "policy service unavailable"}, {"returns": {"eligible": True}}]
    }
    turns = data["turns"]
    assert isinstance(turns, list)
    turns.insert(2, {"tool_call": "get_refund_policy", "args": {"sku": "MUG-01"}, "id": "c9"})
    p = play(data, mode)
    assert p.result.status is Status.COMPLETE
    assert p.player.calls == 5
    failed = p.result.tool_calls[1].result
    assert failed.is_error
    assert "policy service unavailable" in failed.content
    assert not p.result.tool_calls[2].result.is_error


def test_parallel_calls_are_answered_in_call_order_by_id(mode: str) -> None:
    p = play(
        {
            "prompt": "look up two orders",
            "tools": {"get_order": {"results": [{"returns": {"n": 1}}, {"returns": {"n": 2}}]}},
            "turns": [
                {
                    "tool_calls": [
                        {"tool": "get_order", "args": {"order_id": "1"}, "id": "c1"},
                        {"tool": "get_order", "args": {"order_id": "2"}, "id": "c2"},
                    ]
                },
                {"text": "Both found."},
            ],
        },
        mode,
    )
    assert p.result.status is Status.COMPLETE
    calls, results = call_and_result_ids(p.player.requests[-1].messages)
    assert calls == results == ["c1", "c2"]
    by_id = {r.call.id: r.call.arguments for r in p.result.tool_calls}
    assert by_id == {"c1": {"order_id": "1"}, "c2": {"order_id": "2"}}


def test_a_text_turn_in_the_middle_does_not_end_the_run_when_it_calls_a_tool(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": {"search": {"returns": {"hits": []}}},
            "turns": [
                {"text": "Let me look.", "tool_call": "search", "args": {"q": "x"}},
                {"text": "Nothing found."},
            ],
        },
        mode,
    )
    assert (p.result.status, p.player.calls) == (Status.COMPLETE, 2)


MALFORMED_MODES = [m for m in MODES if m.startswith(("direct", "openai"))]


@pytest.mark.parametrize("mode", MALFORMED_MODES)
def test_malformed_arguments_are_fed_back_then_the_run_recovers(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": {"search": {"returns": {"hits": []}}},
            "turns": [
                {"tool_call": "search", "args_raw": "{q: x}"},
                {"tool_call": "search", "args": {"q": "x"}},
                {"text": "Nothing found."},
            ],
        },
        mode,
    )
    assert (p.result.status, p.player.calls) == (Status.COMPLETE, 3)
    fed_back = p.result.tool_calls[0]
    assert not fed_back.executed
    assert "did not parse" in fed_back.result.content
    assert p.result.tool_counts == {"search": 1}


@pytest.mark.parametrize("mode", MALFORMED_MODES)
def test_malformed_arguments_three_times_end_the_run(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": {"search": {"returns": {}}},
            "turns": [{"tool_call": "search", "args_raw": "{q: x}"}] * 3,
        },
        mode,
    )
    assert (p.result.status, p.player.calls) == (Status.MALFORMED_TOOL_CALL, 3)
    assert p.result.tool_counts == {}


NO_CALL_MODES = ["direct", "gemini/json", "gemini/sse"]
GEMINI_SAYS = "Malformed function call: call:default_api:search{q: x}"


def no_call(message: str) -> dict[str, str]:
    """A turn the provider rejected whole: no call came back, only its description."""
    return {"ending": "malformed_tool_call", "stop_details": message}


def nudges(p: Played) -> list[str]:
    return [m.text for m in p.result.transcript[1:] if m.role == "user"]


@pytest.mark.parametrize("mode", NO_CALL_MODES)
def test_a_malformed_turn_without_a_call_is_answered_by_a_message_twice(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": {"search": {"returns": {"hits": []}}},
            "turns": [
                no_call(GEMINI_SAYS),
                no_call("Malformed function call: search{q: 'x'"),
                {"tool_call": "search", "args": {"q": "x"}},
                {"text": "Nothing found."},
            ],
        },
        mode,
    )
    assert (p.result.status, p.player.calls) == (Status.COMPLETE, 4)
    assert nudges(p) == [
        f"Your last tool call could not be used ({GEMINI_SAYS}). Call the tool again with "
        "valid JSON arguments that match its schema, or answer in text.",
        "Your last tool call could not be used (Malformed function call: search{q: 'x'). "
        "Call the tool again with valid JSON arguments that match its schema, or answer in text.",
    ]
    # What the model was sent next: its prompt, then the first nudge, as the last user turn.
    second = p.player.requests[1].messages
    assert [m.role for m in second] == ["user", "user"]
    assert second[-1].text == nudges(p)[0]
    assert p.result.tool_counts == {"search": 1}
    assert transcript_problems(p.result.transcript, prompt="find x") == []


@pytest.mark.parametrize("mode", NO_CALL_MODES)
def test_a_third_malformed_turn_without_a_call_ends_the_run(mode: str) -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": {"search": {"returns": {}}},
            "turns": [no_call(GEMINI_SAYS), no_call(GEMINI_SAYS), no_call("third time")],
        },
        mode,
    )
    assert (p.result.status, p.player.calls) == (Status.MALFORMED_TOOL_CALL, 3)
    assert p.result.reason == "third time"
    assert len(nudges(p)) == 2
    assert p.result.tool_calls == ()


@pytest.mark.parametrize("mode", ["gemini/json", "gemini/sse"])
def test_gemini_unparseable_arguments_recover_twice_then_end_on_the_third(mode: str) -> None:
    # Gemini cannot send arguments that do not parse: the turn comes back as
    # MALFORMED_FUNCTION_CALL with no call, its finishMessage naming the bad call.
    bad = {"tool_call": "search", "args_raw": "{q: x}"}
    recovered = play(
        {
            "prompt": "find x",
            "tools": {"search": {"returns": {"hits": []}}},
            "turns": [bad, bad, {"tool_call": "search", "args": {"q": "x"}}, {"text": "None."}],
        },
        mode,
    )
    assert (recovered.result.status, recovered.player.calls) == (Status.COMPLETE, 4)
    assert [GEMINI_SAYS in n for n in nudges(recovered)] == [True, True]
    ended = play(
        {"prompt": "find x", "tools": {"search": {"returns": {}}}, "turns": [bad] * 3}, mode
    )
    assert (ended.result.status, ended.player.calls) == (Status.MALFORMED_TOOL_CALL, 3)
    assert ended.result.reason == GEMINI_SAYS


def test_a_malformed_turn_without_a_call_keeps_its_text_and_shares_the_budget() -> None:
    p = play(
        {
            "prompt": "find x",
            "tools": {"search": {"returns": {}}},
            "turns": [
                {"tool_call": "search", "args_raw": "{q: x}"},
                {"text": "Let me retry.", "ending": "malformed_tool_call"},
                {"tool_call": "search", "args_raw": "{q: x}"},
            ],
        },
        "direct",
        policies=Policies(malformed_retries=2),
    )
    assert (p.result.status, p.player.calls) == (Status.MALFORMED_TOOL_CALL, 3)
    said = [m for m in p.result.transcript if m.role == "assistant" and m.text]
    assert [m.text for m in said] == ["Let me retry."]
    assert nudges(p)[0].startswith("Your last tool call could not be used (")


@pytest.mark.parametrize("mode", ["direct", "anthropic-messages/json", "anthropic-messages/sse"])
def test_a_paused_turn_is_resent_as_is(mode: str) -> None:
    p = play(
        {
            "prompt": "search the web",
            "turns": [
                {"text": "Searching.", "ending": "paused"},
                {"text": "Here is what I found."},
            ],
        },
        mode,
    )
    assert (p.result.status, p.player.calls) == (Status.COMPLETE, 2)
    resent = p.player.requests[1].messages[-1]
    assert resent.role == "assistant"
    assert resent.text == "Searching."


def test_pause_turn_is_resent_at_most_ten_times() -> None:
    p = play(
        {"prompt": "x", "max_steps": 20, "turns": [{"text": "...", "ending": "paused"}] * 11},
        "direct",
    )
    assert (p.result.status, p.player.calls) == (Status.MAX_STEPS, 11)


def test_a_refusal_falls_back_once_to_another_model() -> None:
    fallback = ScriptedModel(parse_script({"prompt": "x", "turns": [{"text": "Sure: ..."}]}))
    p = play(
        {"prompt": "x", "turns": [{"text": "I can't.", "ending": "refused"}]},
        "direct",
        policies=Policies(fallback_model=fallback),
    )
    assert p.result.status is Status.COMPLETE
    assert (p.player.calls, fallback.calls) == (1, 1)


def test_no_fallback_for_reasoning_extraction_refusals() -> None:
    fallback = ScriptedModel(parse_script({"prompt": "x", "turns": [{"text": "Sure"}]}))
    p = play(
        {
            "prompt": "x",
            "turns": [
                {"text": "I can't.", "ending": "refused", "stop_details": "reasoning_extraction"}
            ],
        },
        "direct",
        policies=Policies(fallback_model=fallback),
    )
    assert p.result.status is Status.REFUSED
    assert fallback.calls == 0


def test_truncation_can_ask_the_model_to_resume() -> None:
    p = play(
        {
            "prompt": "write",
            "turns": [
                {"text": "The refund has", "ending": "truncated"},
                {"text": " been started."},
            ],
        },
        "direct",
        policies=Policies(truncation="resume"),
    )
    assert (p.result.status, p.player.calls) == (Status.COMPLETE, 2)
    second = p.player.requests[1].messages
    assert [m.role for m in second[-2:]] == ["assistant", "user"]
    assert "cut off" in second[-1].text


FINISH = {
    "name": "submit_answer",
    "schema": {
        "type": "object",
        "properties": {"decision": {"type": "string"}, "confidence": {"type": "number"}},
        "required": ["decision", "confidence"],
    },
}


def test_the_finish_tool_ends_the_run_with_validated_output(mode: str) -> None:
    p = play(
        {
            "prompt": "decide",
            "finish_tool": FINISH,
            "turns": [
                {"tool_call": "submit_answer", "args": {"decision": "refund"}},
                {"tool_call": "submit_answer", "args": {"decision": "refund", "confidence": 0.9}},
            ],
        },
        mode,
    )
    assert p.result.status is Status.COMPLETE
    assert p.result.output == {"decision": "refund", "confidence": 0.9}
    assert p.player.calls == 2
    assert "confidence" in p.result.tool_calls[0].result.content  # the invalid answer fed back
    offered = [t.name for t in p.player.requests[0].tools]
    assert offered == ["submit_answer"]


def test_a_prose_answer_also_ends_a_run_with_a_finish_tool(mode: str) -> None:
    p = play({"prompt": "decide", "finish_tool": FINISH, "turns": [{"text": "Refund it."}]}, mode)
    assert (p.result.status, p.player.calls, p.result.output) == (Status.COMPLETE, 1, None)
    assert p.result.text == "Refund it."


@pytest.mark.parametrize("mode", ["anthropic-messages/json", "anthropic-messages/sse"])
def test_progress_updates_arrive_as_events_under_display_updates(mode: str) -> None:
    from donegate.events import Progress
    from donegate.models.base import ModelSettings

    thinking = {"type": "enabled", "budget_tokens": 1024, "display": "updates"}
    p = play(
        {
            "prompt": "migrate",
            "tools": {"migrate": {"returns": "ok"}},
            "turns": [
                {"thinking": "Progress: 4 of 6 done.", "tool_call": "migrate", "args": {}},
                {"text": "All 6 endpoints migrated."},
            ],
        },
        mode,
        settings=ModelSettings(extra_body={"thinking": thinking}),
    )
    assert p.result.text == "All 6 endpoints migrated."
    assert [e.text for e in p.events if isinstance(e, Progress)] == ["Progress: 4 of 6 done."]


class ContinueOnce:
    """A gate that asks for one more turn, then accepts."""

    def __init__(self) -> None:
        self.claims: list[str] = []

    def judge(self, claim: object, transcript: object, output: object) -> object:
        from donegate.loop import Verdict

        self.claims.append(getattr(claim, "ending", None).value)  # type: ignore[union-attr]
        if len(self.claims) == 1:
            return Verdict(action="continue", message="Not done yet: 2 endpoints left.")
        return Verdict(action="accept")


def test_with_a_gate_a_progress_only_turn_is_a_report_that_is_continued() -> None:
    gate = ContinueOnce()
    p = play(
        {
            "prompt": "migrate",
            "turns": [{"thinking": "Progress: 4 of 6 done."}, {"text": "All 6 migrated."}],
        },
        "direct",
        gate=gate,
    )
    assert (p.result.status, p.player.calls) == (Status.COMPLETE, 2)
    assert gate.claims == ["empty", "complete"]
    nudge = p.player.requests[1].messages[-1]
    assert (nudge.role, nudge.text) == ("user", "Not done yet: 2 endpoints left.")


def test_without_a_gate_a_progress_only_turn_ends_empty() -> None:
    p = play({"prompt": "migrate", "turns": [{"thinking": "Progress: 4 of 6 done."}]}, "direct")
    assert (p.result.status, p.player.calls) == (Status.EMPTY, 1)


def test_retry_budgets_count_consecutive_failures_only() -> None:
    p = play(
        {
            "prompt": "write two parts",
            "tools": {"save": {"returns": "saved"}},
            "turns": [
                {"text": "Part one is", "ending": "truncated"},
                {"tool_call": "save", "args": {"part": 1}},
                {"text": "Part two is", "ending": "truncated"},
                {"text": "Both parts saved."},
            ],
        },
        "direct",
    )
    assert (p.result.status, p.player.calls) == (Status.COMPLETE, 4)
