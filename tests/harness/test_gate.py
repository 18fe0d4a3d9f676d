"""The completion gate on its own: what it runs, what it says, when it stops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from donegate.harness.checklist import Checklist
from donegate.harness.evidence import Evidence
from donegate.harness.gate import CompletionGate
from donegate.harness.spec import CheckSpec, TaskSpec
from donegate.harness.verifier import Verifier
from donegate.messages import Ending, Message, TextPart, Turn
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script


def checks(*raw: dict[str, Any]) -> list[CheckSpec]:
    return TaskSpec.model_validate({"id": "t", "prompt": "p", "checks": list(raw)}).checks


def claim(text: str = "All done.") -> Turn:
    return Turn(
        message=Message(role="assistant", parts=(TextPart(text=text),)), ending=Ending.COMPLETE
    )


def verifier(*verdicts: tuple[bool, str]) -> ScriptedModel:
    data = {
        "prompt": "p",
        "finish_tool": {"name": "report_verdict"},
        "turns": [
            {"tool_call": "report_verdict", "args": {"complete": c, "reason": r}}
            for c, r in verdicts
        ],
    }
    return ScriptedModel(parse_script(data, source="verifier"))


def test_accepts_when_every_check_passes(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("ok")
    gate = CompletionGate(checks=checks({"file_exists": "out.txt"}), workdir=tmp_path)
    verdict = gate.judge(claim(), [], None)
    assert verdict.action == "accept"
    assert gate.continuations == 0
    assert [c.passed for c in gate.last_checks] == [True]


def test_the_nudge_names_open_items_and_failed_checks_with_detail(tmp_path: Path) -> None:
    checklist = Checklist(["users", "orders", "payments"])
    checklist.update_checklist("users", "done")
    gate = CompletionGate(
        checks=checks({"file_exists": "api/orders.py"}, {"file_exists": "api/payments.py"}),
        workdir=tmp_path,
        checklist=checklist,
    )
    verdict = gate.judge(claim("4 of 6 done"), [], None)
    assert verdict.action == "continue"
    assert verdict.message == (
        "Not done yet: open checklist items: orders, payments; failed checks: "
        "file_exists: api/orders.py (api/orders.py does not exist), "
        "file_exists: api/payments.py (api/payments.py does not exist). "
        "Continue, or state the blocker."
    )
    assert gate.continuations == 1
    assert gate.rounds[0].claim == "4 of 6 done"


def test_checks_run_against_the_world_at_each_claim(tmp_path: Path) -> None:
    gate = CompletionGate(checks=checks({"file_exists": "out.txt"}), workdir=tmp_path)
    assert gate.judge(claim(), [], None).action == "continue"
    (tmp_path / "out.txt").write_text("now it exists")
    assert gate.judge(claim(), [], None).action == "accept"
    assert gate.continuations == 1
    assert [r.verdict.action for r in gate.rounds] == ["continue", "accept"]


@pytest.mark.parametrize("limit", [0, 1, 3])
def test_stops_after_exactly_max_continuations(tmp_path: Path, limit: int) -> None:
    gate = CompletionGate(
        checks=checks({"file_exists": "never"}), workdir=tmp_path, max_continuations=limit
    )
    actions = [gate.judge(claim(), [], None).action for _ in range(limit + 1)]
    assert actions == ["continue"] * limit + ["stop"]
    assert gate.continuations == limit
    assert f"not done after {limit} continuation(s)" in gate.rounds[-1].verdict.reason
    assert "file_exists: never" in gate.rounds[-1].verdict.reason


def test_a_stated_blocker_stops_at_once(tmp_path: Path) -> None:
    checklist = Checklist(["deploy"])
    checklist.update_checklist("deploy", "blocked", "no production credentials")
    gate = CompletionGate(checks=[], workdir=tmp_path, checklist=checklist)
    verdict = gate.judge(claim("I am blocked."), [], None)
    assert verdict.action == "stop"
    assert gate.continuations == 0
    assert "the agent stated a blocker" in verdict.reason
    assert "deploy (blocked: no production credentials)" in verdict.reason


def test_an_open_item_beside_a_blocked_one_is_continued(tmp_path: Path) -> None:
    checklist = Checklist(["deploy", "docs"])
    checklist.update_checklist("deploy", "blocked", "no credentials")
    gate = CompletionGate(checks=[], workdir=tmp_path, checklist=checklist)
    assert gate.judge(claim(), [], None).action == "continue"


def test_the_verifier_is_not_asked_while_a_check_fails(tmp_path: Path) -> None:
    model = ScriptedModel([])  # no turns: a call would raise
    gate = CompletionGate(
        checks=checks({"file_exists": "never"}), workdir=tmp_path, verifier=Verifier(model)
    )
    assert gate.judge(claim(), [], None).action == "continue"
    assert model.calls == 0
    assert gate.rounds[0].verifier is None


def test_the_verifiers_reason_is_the_nudge_and_its_yes_accepts(tmp_path: Path) -> None:
    model = verifier((False, "no test run is recorded"), (True, "the run shows 2 passed"))
    gate = CompletionGate(
        checks=[],
        workdir=tmp_path,
        verifier=Verifier(model),
        completion_condition="the tests pass",
    )
    first = gate.judge(claim("tests pass"), [], None)
    assert first.action == "continue"
    assert first.message == (
        "Not done yet: verifier: no test run is recorded. Continue, or state the blocker."
    )
    assert gate.judge(claim("ran them, 2 passed"), [], None).action == "accept"
    assert model.calls == 2
    prompt = model.requests[0].messages[-1].text
    assert "## Completion condition\nthe tests pass" in prompt
    assert "## The agent's claim\ntests pass" in prompt
    assert "(no tool calls were made)" in prompt
    model.assert_exhausted()


def test_a_completion_tool_call_is_judged_like_any_claim(tmp_path: Path) -> None:
    gate = CompletionGate(checks=checks({"file_exists": "hello.txt"}), workdir=tmp_path)
    verdict = gate.judge(claim(""), [], {"summary": "wrote hello.txt"})
    assert verdict.action == "continue"
    assert verdict.message.startswith("Not done yet: the completion call was not accepted; ")
    assert gate.rounds[0].via == "completion_tool"
    assert gate.rounds[0].claim == '{"summary": "wrote hello.txt"}'


def test_every_round_reaches_the_callback(tmp_path: Path) -> None:
    seen: list[str] = []
    gate = CompletionGate(
        checks=[],
        workdir=tmp_path,
        checklist=Checklist(["x"]),
        evidence=Evidence(),
        on_round=lambda r: seen.append(r.verdict.action),
    )
    gate.judge(claim(), [], None)
    gate.checklist.update_checklist("x", "done")
    gate.judge(claim(), [], None)
    assert seen == ["continue", "accept"]
