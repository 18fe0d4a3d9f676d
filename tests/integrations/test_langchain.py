"""A real LangChain agent (`create_agent` with ChatOpenAI over the openai SDK's HTTP path)
behind `DoneGateMiddleware`, against the provider emulator: no mocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from donegate import Escalated
from donegate.integrations.langchain import DoneGateMiddleware, message_turn
from donegate.testing import Emulator
from tests.integrations.conftest import SCRIPTS, Task, verify

PROMPT = {"messages": [{"role": "user", "content": "Write done.txt."}]}


def agent(emu: Emulator, task: Task, gate: DoneGateMiddleware | None, **kw: Any) -> Any:
    model = ChatOpenAI(model="gpt-4o-mini", base_url=emu.base_url + "/v1", api_key="test",
                       max_retries=0)  # type: ignore[arg-type]  # fmt: skip
    return create_agent(model, tools=[tool(task.write)], middleware=[gate] if gate else [], **kw)


def last_text(state: dict[str, Any]) -> str:
    return str(state["messages"][-1].text)


def test_a_progress_report_is_continued_to_done_and_the_certificate_verifies(task: Task) -> None:
    gate = DoneGateMiddleware(task.file)
    with Emulator(SCRIPTS / "progress_to_done.yaml") as emu:
        state = agent(emu, task, gate).invoke(PROMPT)
        requests = emu.requests
    assert last_text(state) == "Done: done.txt is written."
    assert len(requests) == 3 and gate.gate.continuations == 1
    assert "failed checks: file_exists: done.txt" in json.dumps(requests[1]["body"])
    assert gate.certificate is not None
    cert = json.loads(gate.certificate.read_text())
    assert (cert["host"]["name"], cert["host"]["tools_isolated"]) == ("langchain", False)
    out = verify(gate.certificate)
    assert out.returncode == 0, out.stdout + out.stderr


def test_without_the_gate_the_progress_report_ends_the_run(task: Task) -> None:
    with Emulator(SCRIPTS / "progress_to_done.yaml") as emu:
        state = agent(emu, task, None).invoke(PROMPT)
    assert last_text(state).startswith("Progress:")
    assert not (task.work / "done.txt").exists()


def test_a_truncated_final_answer_is_not_done(task: Task) -> None:
    gate = DoneGateMiddleware(task.file)
    with Emulator(SCRIPTS / "truncated_final.yaml") as emu:
        state = agent(emu, task, gate).invoke(PROMPT)
        requests = emu.requests
    assert last_text(state) == "Done: done.txt is written."
    assert len(requests) == 3
    assert "cut off at the output limit" in json.dumps(requests[2]["body"])
    assert gate.certificate is not None


def test_a_refusal_is_not_retried_on_the_same_model(task: Task) -> None:
    gate = DoneGateMiddleware(task.file)
    with Emulator(SCRIPTS / "refused.yaml") as emu:
        with pytest.raises(Escalated) as caught:
            agent(emu, task, gate).invoke(PROMPT)
        assert len(emu.requests) == 1
    report = json.loads(Path(caught.value.report).read_text())
    assert "refused" in report["reason"] and gate.certificate is None


def test_failing_checks_are_continued_then_escalate_at_max_continuations(task: Task) -> None:
    gate = DoneGateMiddleware(task.file)
    with Emulator(SCRIPTS / "failing_checks.yaml") as emu:
        with pytest.raises(Escalated) as caught:
            agent(emu, task, gate).invoke(PROMPT)
        assert len(emu.requests) == 3  # the claim, then max_continuations (2) more
    report = json.loads(Path(caught.value.report).read_text())
    assert report["continuations"] == 2 == report["max_continuations"]
    assert report["reason"].startswith("not done after 2 continuation(s)")


def test_with_a_checkpointer_escalation_interrupts_and_a_person_resumes(task: Task) -> None:
    gate = DoneGateMiddleware(task.file)
    config: Any = {"configurable": {"thread_id": "t1"}}
    with Emulator(SCRIPTS / "failing_then_person.yaml") as emu:
        graph = agent(emu, task, gate, checkpointer=InMemorySaver())
        state = graph.invoke(PROMPT, config)
        (pending,) = state["__interrupt__"]
        assert pending.value["reason"].startswith("not done after 2 continuation(s)")
        reports = sorted((Path(pending.value["report"]).parent).glob("*.json"))
        assert len(emu.requests) == 3 and gate.certificate is None
        state = graph.invoke(Command(resume="Write done.txt with the write tool."), config)
        requests = emu.requests
    assert len(reports) == 1 == len(list(Path(pending.value["report"]).parent.glob("*.json")))
    assert "Write done.txt with the write tool." in json.dumps(requests[3]["body"])
    assert last_text(state) == "Done now: done.txt is written."
    assert gate.certificate is not None and verify(gate.certificate).returncode == 0


@pytest.mark.parametrize(
    ("metadata", "kwargs", "ending"),
    [
        # langchain-core >= 1.8.4 reads `normalized_finish_reason` (a provider integration sets
        # it beside its raw `finish_reason`); where present it wins over the raw reason
        ({"finish_reason": "max_tokens", "normalized_finish_reason": "length"}, {}, "truncated"),
        ({"finish_reason": "SAFETY", "normalized_finish_reason": "content_filter"}, {}, "filtered"),
        ({"finish_reason": "end_turn", "normalized_finish_reason": "refusal"}, {}, "refused"),
        ({"finish_reason": "end_turn", "normalized_finish_reason": "stop"}, {}, "complete"),
        ({"finish_reason": "length"}, {}, "truncated"),  # langchain-openai 1.7.4 sets only this
        ({"stop_reason": "max_tokens"}, {}, "truncated"),
        ({"finish_reason": "stop"}, {"refusal": "I can't help with that."}, "refused"),
    ],
)
def test_the_message_is_classified_from_the_normalized_reason_where_present(
    metadata: dict[str, str], kwargs: dict[str, str], ending: str
) -> None:
    message = AIMessage(content="Some text.", response_metadata=metadata, additional_kwargs=kwargs)
    assert message_turn(message).ending.value == ending
