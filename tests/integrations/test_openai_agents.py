"""A real Agents SDK agent (OpenAIResponsesModel over the openai SDK's HTTP path) wrapped by
`DoneGate`, against the provider emulator: no mocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

from donegate import Escalated
from donegate.integrations.openai_agents import DoneGate
from donegate.testing import Emulator
from tests.integrations.conftest import SCRIPTS, Task, verify

OWN = SCRIPTS / "openai_agents"


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    set_tracing_disabled(True)  # the emulator has no tracing endpoint


def agent(emu: Emulator, task: Task) -> Agent[Any]:
    client = openai.AsyncOpenAI(base_url=emu.base_url + "/v1", api_key="test", max_retries=0)
    model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
    return Agent(name="writer", instructions="Do the task.", model=model,
                 tools=[function_tool(task.write)])  # fmt: skip


def test_a_progress_report_is_continued_to_done_and_the_certificate_verifies(task: Task) -> None:
    gate = DoneGate(task.file)
    with Emulator(OWN / "progress_to_done.yaml") as emu:
        result = Runner.run_sync(gate.wrap(agent(emu, task)), "Write done.txt.")
        requests = emu.requests
    assert result.final_output == "done.txt is written."
    assert len(requests) == 3 and gate.gate.continuations == 1
    assert "A text answer does not finish this task" in json.dumps(requests[1]["body"])
    assert "task_complete" in json.dumps(requests[0]["body"]["tools"])
    assert gate.certificate is not None
    cert = json.loads(gate.certificate.read_text())
    assert (cert["host"]["name"], cert["host"]["tools_isolated"]) == ("openai-agents", False)
    out = verify(gate.certificate)
    assert out.returncode == 0, out.stdout + out.stderr


def test_without_the_gate_the_progress_report_is_the_final_output(task: Task) -> None:
    with Emulator(OWN / "progress_to_done.yaml") as emu:
        result = Runner.run_sync(agent(emu, task), "Write done.txt.")
    assert str(result.final_output).startswith("Progress:")
    assert not (task.work / "done.txt").exists()


def test_a_truncated_final_answer_is_not_done(task: Task) -> None:
    gate = DoneGate(task.file)
    with Emulator(OWN / "truncated_final.yaml") as emu:
        result = Runner.run_sync(gate.wrap(agent(emu, task)), "Write done.txt.")
        requests = emu.requests
    assert result.final_output == "done.txt is written."
    assert len(requests) == 3
    assert "cut off at the output limit" in json.dumps(requests[2]["body"])
    assert gate.certificate is not None


def test_a_refusal_is_not_retried_on_the_same_model(task: Task) -> None:
    gate = DoneGate(task.file)
    with Emulator(SCRIPTS / "refused.yaml") as emu:
        with pytest.raises(Escalated) as caught:
            Runner.run_sync(gate.wrap(agent(emu, task)), "Write done.txt.")
        assert len(emu.requests) == 1
    report = json.loads(Path(caught.value.report).read_text())
    assert "refused" in report["reason"] and gate.certificate is None


def test_failing_checks_are_continued_then_escalate_at_max_continuations(task: Task) -> None:
    gate = DoneGate(task.file)
    with Emulator(OWN / "failing_checks.yaml") as emu:
        with pytest.raises(Escalated) as caught:
            Runner.run_sync(gate.wrap(agent(emu, task)), "Write done.txt.")
        requests = emu.requests
    assert len(requests) == 3  # the claim, then max_continuations (2) more
    # each failed claim's tool result names the failed check, so the model runs again
    assert "failed checks: file_exists: done.txt" in json.dumps(requests[1]["body"])
    report = json.loads(Path(caught.value.report).read_text())
    assert report["continuations"] == 2 == report["max_continuations"]
    assert report["reason"].startswith("not done after 2 continuation(s)")
