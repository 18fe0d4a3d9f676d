"""The checklist tool and the harness's evidence record, below the gate."""

from __future__ import annotations

import json

import pytest

from donegate.events import ModelCalled, ToolCalled
from donegate.harness.checklist import Checklist
from donegate.harness.evidence import Evidence
from donegate.messages import Ending, Message, ToolCall, ToolResult, Turn
from donegate.records.checklist import CHECKLIST_TOOL, ChecklistUpdate
from donegate.records.evidence import digest_text, record_digest


def called(step: int) -> ModelCalled:
    turn = Turn(message=Message(role="assistant", parts=()), ending=Ending.TOOL_USE)
    return ModelCalled(step=step, model="m", turn=turn, duration_s=0.0)


def tool_event(
    step: int,
    name: str,
    args: dict[str, object],
    output: str,
    *,
    error: bool = False,
    executed: bool = True,
    key: str | None = None,
) -> ToolCalled:
    call = ToolCall.from_args(id=f"c{step}{name}", name=name, arguments=args)
    result = ToolResult(call_id=call.id, name=name, content=output, is_error=error)
    return ToolCalled(step=step, call=call, result=result, executed=executed, idempotency_key=key)


def feed(sinks: list[object], *events: object) -> None:
    for event in events:
        for sink in sinks:
            sink(event)  # type: ignore[operator]


# -- the update_checklist tool -------------------------------------------------------------


def test_tool_signature_is_the_contract() -> None:
    tool = Checklist().tool()
    assert tool.name == "update_checklist"
    props = tool.parameters["properties"]
    assert list(props) == ["item", "status", "note"]
    assert tool.parameters["required"] == ["item", "status"]
    assert props["status"]["enum"] == ["open", "done", "blocked"]
    assert props["note"]["default"] == ""
    assert not tool.side_effect


def test_ticking_records_the_step_and_a_new_name_adds_an_item() -> None:
    checklist = Checklist(["a", "b"])
    checklist(called(3))
    out = checklist.update_checklist("a", "done", "did a")
    checklist.update_checklist("c", "open")
    items = {i.name: i for i in checklist.items}
    assert [i.name for i in checklist.items] == ["a", "b", "c"]
    assert items["a"].status == "done" and items["a"].updated_step == 3
    assert items["a"].note == "did a"
    assert items["c"].added_by_model and items["c"].since_step == 3
    assert [i.name for i in checklist.unfinished()] == ["b", "c"]
    assert "[x] a - did a" in out and "[ ] b" in out


def test_blocked_needs_a_note_and_bad_calls_become_error_results() -> None:
    checklist = Checklist(["deploy"])
    with pytest.raises(ValueError, match="needs a note"):
        checklist.update_checklist("deploy", "blocked")
    tool = checklist.tool()
    call = ToolCall.from_args(id="1", name="update_checklist", arguments={"item": "deploy",
                              "status": "blocked", "note": " "})  # fmt: skip
    assert tool.run_sync(call).is_error
    bad = ToolCall.from_args(id="2", name="update_checklist",
                             arguments={"item": "deploy", "status": "finished"})  # fmt: skip
    assert tool.run_sync(bad).is_error
    ok = ToolCall.from_args(id="3", name="update_checklist", arguments={"item": "deploy",
                            "status": "blocked", "note": "no credentials"})  # fmt: skip
    assert not tool.run_sync(ok).is_error
    assert checklist.items[0].status == "blocked" and checklist.items[0].note == "no credentials"


def test_one_parser_reads_checklist_arguments_for_the_tool_and_the_journal() -> None:
    parsed = ChecklistUpdate.parse({"item": "  deploy ", "status": "blocked", "note": "no key"})
    assert parsed == ChecklistUpdate(item="deploy", status="blocked", note="no key")
    for bad, why in (
        ({"item": " ", "status": "done"}, "item is empty"),
        ({"item": 3, "status": "done"}, "item is empty"),
        ({"item": "x", "status": "finished"}, "status must be"),
        ({"item": "x", "status": "blocked", "note": " "}, "needs a note"),
    ):
        with pytest.raises(ValueError, match=why):
            ChecklistUpdate.parse(bad)
    # what a worker journals: only a checklist call that succeeded, read the same way
    event = tool_event(2, CHECKLIST_TOOL, {"item": " a ", "status": "done"}, "updated 'a'")
    assert ChecklistUpdate.applied(event.call, event.result) == ChecklistUpdate(
        item="a", status="done"
    )
    failed = tool_event(2, CHECKLIST_TOOL, {"item": "a", "status": "done"}, "no", error=True)
    other = tool_event(2, "write_file", {"item": "a", "status": "done"}, "ok")
    assert ChecklistUpdate.applied(failed.call, failed.result) is None
    assert ChecklistUpdate.applied(other.call, other.result) is None
    checklist = Checklist(["a"])
    checklist.update_checklist(" a ", "done")
    assert [(i.name, i.status) for i in checklist.items] == [("a", "done")]


def test_a_tick_without_a_related_executed_call_is_flagged() -> None:
    checklist, evidence = Checklist(["write VERSION", "run the tests"]), Evidence()
    sinks: list[object] = [evidence, checklist]
    feed(sinks, called(1), tool_event(1, "write_file", {"path": "VERSION"}, "wrote 4 bytes"))
    feed(sinks, called(2))
    checklist.update_checklist("write VERSION", "done")
    checklist.update_checklist("run the tests", "done")
    flagged = dict(checklist.unsupported(evidence.records))
    assert list(flagged) == ["run the tests"]
    assert "relates" in flagged["run the tests"]


def test_no_call_at_all_is_flagged_and_failed_or_unrun_calls_do_not_count() -> None:
    checklist, evidence = Checklist(["run the tests"]), Evidence()
    sinks: list[object] = [evidence, checklist]
    feed(
        sinks,
        called(1),
        tool_event(1, "run_command", {"command": "pytest"}, "not found", error=True),
        tool_event(1, "run_command", {"command": "pytest"}, "limit", executed=False),
    )
    checklist.update_checklist("run the tests", "done")
    assert checklist.unsupported(evidence.records) == [
        ("run the tests", "ticked done with no tool call since it was opened")
    ]
    feed(sinks, called(2), tool_event(2, "run_command", {"command": "pytest"}, "2 passed"))
    checklist.update_checklist("run the tests", "done")
    assert checklist.unsupported(evidence.records) == []


def test_a_call_in_the_same_turn_as_the_tick_supports_it() -> None:
    checklist, evidence = Checklist(["run the tests"]), Evidence()
    feed([evidence, checklist], called(1))
    checklist.update_checklist("run the tests", "done")  # ran alongside the command
    feed([evidence, checklist], tool_event(1, "run_command", {"command": "pytest"}, "ok"))
    assert checklist.unsupported(evidence.records) == []


def test_a_nudge_makes_evidence_count_only_from_the_next_call() -> None:
    checklist, evidence = Checklist(["migrate users"]), Evidence()
    sinks: list[object] = [evidence, checklist]
    feed(sinks, called(1), tool_event(1, "write_file", {"path": "api/users.py"}, "wrote"))
    feed(sinks, called(2))
    checklist.nudged()  # the gate continued the run at step 2: users still open
    assert checklist.items[0].since_step == 3
    feed(sinks, called(3))
    checklist.update_checklist("migrate users", "done")
    assert [i for i, _ in checklist.unsupported(evidence.records)] == ["migrate users"]


# -- evidence ------------------------------------------------------------------------------


def test_evidence_records_what_the_tool_returned_with_digests() -> None:
    evidence = Evidence()
    evidence(called(1))
    evidence(tool_event(1, "run_command", {"command": "pytest"}, "1 failed", key="t:1:0"))
    evidence(tool_event(1, "read_file", {"path": "x"}, "", error=True))
    first, second = evidence.records
    assert (first.index, first.step, first.tool, first.output) == (0, 1, "run_command", "1 failed")
    assert first.idempotency_key == "t:1:0"
    assert first.output_digest == digest_text("1 failed")
    assert first.digest == record_digest(
        tool="run_command",
        arguments_raw=json.dumps({"command": "pytest"}, separators=(",", ":")),
        output="1 failed",
        is_error=False,
        executed=True,
        idempotency_key="t:1:0",
    )
    assert second.is_error and second.digest != first.digest
    assert evidence.digest() == digest_text(f"{first.digest}\n{second.digest}")
    assert evidence.step == 1


def test_evidence_render_keeps_the_tail_of_long_outputs_and_the_state() -> None:
    evidence = Evidence()
    evidence(tool_event(1, "run_command", {"command": "x"}, "head " + "." * 5000 + " TAIL"))
    evidence(tool_event(2, "write_file", {"path": "y"}, "nope", executed=False))
    text = evidence.render(output_chars=100)
    assert "TAIL" in text and "head" not in text
    assert "[ok]" in text and "[not run]" in text
    assert Evidence().render() == "(no tool calls were made)"
