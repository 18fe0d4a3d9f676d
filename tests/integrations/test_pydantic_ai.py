"""A real pydantic-ai agent (OpenAIChatModel over the openai SDK's HTTP path) behind `DoneGate`,
against the provider emulator: no mocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from donegate import Escalated
from donegate.integrations.pydantic_ai import DoneGate
from donegate.testing import Emulator
from tests.integrations.conftest import SCRIPTS, Task, verify


def agent(emu: Emulator, task: Task, gate: DoneGate | None) -> Agent[None, str]:
    model = OpenAIChatModel(
        "gpt-4o-mini", provider=OpenAIProvider(base_url=emu.base_url + "/v1", api_key="test")
    )
    return Agent(model, tools=[task.write], capabilities=[gate] if gate else [])


def test_a_progress_report_is_continued_to_done_and_the_certificate_verifies(task: Task) -> None:
    gate = DoneGate(task.file)
    with Emulator(SCRIPTS / "progress_to_done.yaml") as emu:
        result = agent(emu, task, gate).run_sync("Write done.txt.")
        requests = emu.requests
    assert result.output == "Done: done.txt is written."
    assert len(requests) == 3 and gate.gate.continuations == 1
    assert gate.certificate is not None
    cert = json.loads(gate.certificate.read_text())
    assert cert["host"] == {"name": "pydantic-ai", "version": cert["host"]["version"],
                            "tools_isolated": False}  # fmt: skip
    assert [c["passed"] for c in cert["checks"]] == [True]
    # the nudge reached the model as a user turn, naming the failed check
    sent = json.dumps(requests[1]["body"])
    assert "failed checks: file_exists: done.txt" in sent
    out = verify(gate.certificate)
    assert out.returncode == 0, out.stdout + out.stderr


def test_without_the_gate_the_progress_report_is_the_answer(task: Task) -> None:
    with Emulator(SCRIPTS / "progress_to_done.yaml") as emu:
        result = agent(emu, task, None).run_sync("Write done.txt.")
    assert result.output.startswith("Progress:")  # pydantic-ai's own rule: text ends the run
    assert not (task.work / "done.txt").exists()


def test_a_truncated_final_answer_is_not_done(task: Task) -> None:
    gate = DoneGate(task.file)
    with Emulator(SCRIPTS / "truncated_final.yaml") as emu:
        result = agent(emu, task, gate).run_sync("Write done.txt.")
        requests = emu.requests
    assert result.output == "Done: done.txt is written."  # not the cut "…is wri"
    assert len(requests) == 3
    assert "cut off at the output limit" in json.dumps(requests[2]["body"])
    assert gate.certificate is not None


def test_a_refusal_is_not_retried_on_the_same_model(task: Task) -> None:
    gate = DoneGate(task.file)
    with Emulator(SCRIPTS / "refused.yaml") as emu:
        with pytest.raises(Escalated) as caught:
            agent(emu, task, gate).run_sync("Write done.txt.")
        assert len(emu.requests) == 1
    report = json.loads(Path(caught.value.report).read_text())
    assert "refused" in report["reason"] and gate.certificate is None


def test_failing_checks_are_continued_then_escalate_at_max_continuations(task: Task) -> None:
    gate = DoneGate(task.file)
    with Emulator(SCRIPTS / "failing_checks.yaml") as emu:
        with pytest.raises(Escalated) as caught:
            agent(emu, task, gate).run_sync("Write done.txt.")
        assert len(emu.requests) == 3  # the claim, then max_continuations (2) more
    report = json.loads(Path(caught.value.report).read_text())
    assert report["continuations"] == 2 == report["max_continuations"]
    assert report["reason"].startswith("not done after 2 continuation(s)")
    assert gate.report == caught.value.report and gate.certificate is None
