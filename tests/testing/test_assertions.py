"""Transcript assertions: each passes on the refund transcript and fails on each broken one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import donegate
from donegate.messages import Message, ToolCall, ToolResult
from donegate.models.base import ModelRequest
from donegate.testing import (
    Emulator,
    ScriptedModel,
    assert_argument_from_result,
    assert_results_match_calls,
    assert_tool_order,
    assert_user_message_once_first,
    load_script,
    transcript_from,
)

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
PROMPT = "order 55219 arrived smashed"
ORDER = {"sku": "MUG-01", "total_cents": 1499}


def call(cid: str, name: str, **args: object) -> Message:
    return Message(role="assistant", parts=(ToolCall.from_args(id=cid, name=name, arguments=args),))


def result(cid: str, name: str, value: object) -> Message:
    content = value if isinstance(value, str) else json.dumps(value)
    return Message.tool_results([ToolResult(call_id=cid, name=name, content=content)])


def refund(**overrides: Message) -> list[Message]:
    """The seed-004 transcript; `overrides` replace messages by name."""
    parts = {
        "system": Message.system("You are a support agent."),
        "user": Message.user(PROMPT),
        "call1": call("c1", "get_order", order_id="55219"),
        "result1": result("c1", "get_order", ORDER),
        "call2": call("c2", "get_refund_policy", sku="MUG-01"),
        "result2": result("c2", "get_refund_policy", {"eligible": True}),
        "call3": call("c3", "start_refund", order_id="55219", amount_cents=1499),
        "result3": result("c3", "start_refund", {"refund_id": "rf_88"}),
        "answer": Message(role="assistant", parts=()),
    }
    parts.update(overrides)
    return list(parts.values())


def test_the_refund_transcript_passes_every_assertion() -> None:
    t = refund()
    assert_results_match_calls(t)
    assert_user_message_once_first(t, PROMPT)
    assert_argument_from_result(t, call=("get_refund_policy", "sku"), source=("get_order", "sku"))
    assert_argument_from_result(
        t, call=("start_refund", "amount_cents"), source=("get_order", "total_cents")
    )
    assert_tool_order(t, ["get_order", "get_refund_policy", "start_refund"])


# -- call ids equal result ids ----------------------------------------------------------------


def test_a_missing_result_fails() -> None:
    t = refund()
    del t[5]  # result2
    with pytest.raises(AssertionError, match="asked again before call"):
        assert_results_match_calls(t)


def test_a_duplicated_result_fails() -> None:
    t = refund()
    t.insert(4, result("c1", "get_order", ORDER))
    with pytest.raises(AssertionError, match=r"result ids \['c1', 'c1', 'c2', 'c3'\]"):
        assert_results_match_calls(t)


def test_a_misattached_result_fails() -> None:
    both = Message(
        role="assistant",
        parts=(
            ToolCall.from_args(id="a", name="get_order", arguments={"order_id": "1"}),
            ToolCall.from_args(id="b", name="get_order", arguments={"order_id": "2"}),
        ),
    )
    swapped = Message.tool_results(
        [ToolResult(call_id=i, name="get_order", content="{}") for i in ("b", "a")]
    )
    with pytest.raises(AssertionError, match=r"call ids \['a', 'b'\] != result ids \['b', 'a'\]"):
        assert_results_match_calls([Message.user("x"), both, swapped])


def test_an_early_result_fails() -> None:
    t = refund()
    t.insert(2, t.pop(3))  # result1 before call1
    with pytest.raises(AssertionError, match="comes before any call"):
        assert_results_match_calls(t)


def test_a_result_for_an_unknown_call_fails() -> None:
    t = refund(result3=result("c9", "start_refund", {}))
    with pytest.raises(AssertionError, match="'c9' comes before any call"):
        assert_results_match_calls(t)


def test_pending_calls_are_allowed_only_at_the_very_end() -> None:
    t = refund()[:-2]  # ends on call3, never answered
    assert_results_match_calls(t)
    with pytest.raises(AssertionError, match="call ids"):
        assert_results_match_calls(t, allow_pending=False)


# -- the user message -------------------------------------------------------------------------


def test_a_re_appended_user_message_fails() -> None:
    t = refund()
    t.insert(4, Message.user(PROMPT))
    with pytest.raises(AssertionError, match="expected one user message, found 2"):
        assert_user_message_once_first(t)


def test_a_user_message_after_the_model_spoke_fails() -> None:
    t = refund()
    t.insert(1, t.pop(2))  # call1 before the user message
    with pytest.raises(AssertionError, match="after"):
        assert_user_message_once_first(t)


def test_the_wrong_user_text_fails() -> None:
    with pytest.raises(AssertionError, match="expected 'hello'"):
        assert_user_message_once_first(refund(), "hello")


# -- information flowing forward --------------------------------------------------------------


def test_an_invented_argument_fails() -> None:
    t = refund(call2=call("c2", "get_refund_policy", sku="MUG-99"))
    with pytest.raises(AssertionError, match="sku is 'MUG-99', but get_order\\(c1\\) returned"):
        assert_argument_from_result(
            t, call=("get_refund_policy", "sku"), source=("get_order", "sku")
        )


def test_a_missing_argument_fails() -> None:
    t = refund(call2=call("c2", "get_refund_policy"))
    with pytest.raises(AssertionError, match="sku is missing"):
        assert_argument_from_result(
            t, call=("get_refund_policy", "sku"), source=("get_order", "sku")
        )


def test_a_call_before_its_source_fails() -> None:
    t = [Message.user("x"), call("c2", "get_refund_policy", sku="MUG-01"),
         result("c2", "get_refund_policy", {}), call("c1", "get_order"),
         result("c1", "get_order", ORDER)]  # fmt: skip
    with pytest.raises(AssertionError, match="before any get_order result"):
        assert_argument_from_result(
            t, call=("get_refund_policy", "sku"), source=("get_order", "sku")
        )


def test_a_source_without_the_field_and_a_missing_call_fail() -> None:
    t = refund(result1=result("c1", "get_order", {"items": [{"sku": "MUG-01"}]}))
    with pytest.raises(AssertionError, match="has no 'sku'"):
        assert_argument_from_result(
            t, call=("get_refund_policy", "sku"), source=("get_order", "sku")
        )
    assert_argument_from_result(
        t, call=("get_refund_policy", "sku"), source=("get_order", "items.0.sku")
    )
    with pytest.raises(AssertionError, match="no cancel_order call"):
        assert_argument_from_result(t, call=("cancel_order", "sku"), source=("get_order", "sku"))


# -- tool order -------------------------------------------------------------------------------


def test_the_wrong_tool_order_fails() -> None:
    t = refund()
    with pytest.raises(AssertionError, match="tools called"):
        assert_tool_order(t, ["get_order", "start_refund", "get_refund_policy"])
    with pytest.raises(AssertionError, match="tools called"):
        assert_tool_order(t[:5], ["get_order", "get_refund_policy", "start_refund"])


# -- reading transcripts ----------------------------------------------------------------------


def test_transcripts_from_runs_players_requests_and_the_emulator_log() -> None:
    import anthropic

    from donegate.models.sdk import AnthropicModel

    script = load_script(SCRIPTS / "refund.yaml")
    player = ScriptedModel(script)
    run = donegate.run(script.prompt, model=player, tools=script.tools(), system=script.system)
    expected = [(m.role, m.text, [c.id for c in m.tool_calls], [r.call_id for r in m.results])
                for m in run.transcript]  # fmt: skip

    def flat(t: tuple[Message, ...]) -> list[object]:
        return [(m.role, m.text, [c.id for c in m.tool_calls], [r.call_id for r in m.results])
                for m in t]  # fmt: skip

    assert flat(transcript_from(run)) == expected
    assert flat(transcript_from(player)) == expected
    assert flat(transcript_from(list(run.transcript))) == expected
    request = ModelRequest(model="m", messages=run.transcript)
    assert transcript_from(request) == run.transcript

    with Emulator(script) as emu:
        client = anthropic.Anthropic(api_key="k", base_url=emu.base_url)
        donegate.run(script.prompt, model=AnthropicModel(client, "claude-sonnet-4-6"),
                     tools=script.tools(), system=script.system)  # fmt: skip
        assert flat(transcript_from(emu)) == expected
        log = emu.requests
    # the log alone has the requests, not the last answer
    assert flat(transcript_from(log)) == expected[:-1]
    assert flat(transcript_from(log, conversation="refund")) == expected[:-1]
    assert flat(transcript_from(log[0])) == expected[:2]
    assert transcript_from(log, conversation="other") == ()


def test_an_unreadable_object_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="cannot read a transcript from int"):
        transcript_from(3)
