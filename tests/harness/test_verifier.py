"""The verifier: its input, and how each kind of answer is read (failing closed)."""

from __future__ import annotations

from typing import Any

import pytest

from donegate.harness.verifier import Verifier, parse_answer
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script


def scripted(turns: list[dict[str, Any]]) -> ScriptedModel:
    data = {"prompt": "p", "finish_tool": {"name": "report_verdict"}, "turns": turns}
    return ScriptedModel(parse_script(data, source="verifier"))


def ask(model: ScriptedModel, **kwargs: Any) -> Any:
    defaults: dict[str, Any] = {"condition": "c", "claim": "done", "evidence": "(none)"}
    return Verifier(model).check(**(defaults | kwargs))


def test_the_finish_tool_answer_is_read() -> None:
    model = scripted(
        [{"tool_call": "report_verdict", "args": {"complete": True, "reason": "shown"}}]
    )
    answer = ask(model)
    assert (answer.complete, answer.reason, answer.model_calls) == (True, "shown", 1)
    request = model.requests[0]
    assert [t.name for t in request.tools] == ["report_verdict"]
    assert request.tools[0].parameters["required"] == ["complete", "reason"]
    assert request.messages[0].role == "system"


def test_it_sees_the_evidence_checklist_and_flagged_items() -> None:
    model = scripted([{"tool_call": "report_verdict", "args": {"complete": False, "reason": "r"}}])
    ask(
        model,
        condition="tests pass",
        claim="all tests pass",
        evidence="#0 step 1 write_file(...) [ok]",
        checklist="[x] run the tests",
        flagged=[("run the tests", "ticked done with no tool call since it was opened")],
    )
    prompt = model.requests[0].messages[-1].text
    assert "## Tool calls recorded by the harness\n#0 step 1 write_file(...) [ok]" in prompt
    assert "## Checklist\n[x] run the tests" in prompt
    assert (
        "## Checklist items ticked without supporting evidence\n"
        "- run the tests: ticked done with no tool call since it was opened"
    ) in prompt


def test_a_json_answer_in_text_is_read() -> None:
    model = scripted([{"text": 'Verdict:\n```json\n{"complete": true, "reason": "ok"}\n```'}])
    answer = ask(model)
    assert (answer.complete, answer.reason) == (True, "ok")


def test_an_invalid_verdict_is_fed_back_once_then_read() -> None:
    model = scripted(
        [
            {"tool_call": "report_verdict", "args": {"complete": "yes"}},
            {"tool_call": "report_verdict", "args": {"complete": False, "reason": "no"}},
        ]
    )
    answer = ask(model)
    assert (answer.complete, answer.model_calls) == (False, 2)
    model.assert_exhausted()


@pytest.mark.parametrize(
    ("turns", "why"),
    [
        ([{"text": "Looks good to me!"}], "the verifier gave no verdict"),
        ([{"http_error": 400, "message": "bad request"}], "the verifier failed (provider_error"),
        ([{"refusal": "I can't"}], "the verifier failed (refused"),
    ],
)
def test_anything_else_counts_as_not_complete(turns: list[dict[str, Any]], why: str) -> None:
    answer = ask(scripted(turns))
    assert answer.complete is False
    assert answer.reason.startswith(why)


def test_parse_answer() -> None:
    assert parse_answer('{"complete": false, "reason": "x"}') == (False, "x")
    assert parse_answer('{"complete": "false"}') is None
    assert parse_answer("no json here") is None
