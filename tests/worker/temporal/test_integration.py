"""`donegate.integrations.temporal`: the gate's activities and `GatedAgent` in a user's worker.

The user's agent is an activity of the test's own (it writes files and answers with turns); the
gate's rounds run as the `GatedAgent` workflow on a real dev server, its checks in the clean
room, and the certificate it signs verifies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from donegate.codec import turn_to_json
from donegate.harness.certificate import verify_certificate
from donegate.integrations._gate import assistant_turn
from donegate.messages import Ending

pytestmark = pytest.mark.slow  # a dev server


def write_spec(tmp_path: Path, task_id: str) -> Path:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    path = tmp_path / f"{task_id}.yaml"
    spec = {
        "id": task_id,
        "prompt": "Write out.txt with the answer.",
        "checks": [{"file_exists": "out.txt"}],
        "max_continuations": 1,
        "workdir": str(work),
    }
    path.write_text(yaml.safe_dump(spec))
    return path


def run_gated(address: str, task: Path, *, writes_on: int | None) -> Any:
    """Run `GatedAgent` with an agent that claims done every turn, writing out.txt on turn
    `writes_on` (never, when None)."""
    from temporalio import activity
    from temporalio.client import Client
    from temporalio.worker import Worker

    from donegate.integrations.temporal import GatedAgent, GatedAgentInput, activities

    rounds: list[dict[str, Any]] = []

    @activity.defn(name="test.agent")
    def agent(given: dict[str, Any]) -> dict[str, Any]:  # an `AgentRound`, as data
        rounds.append(given)
        if given["round"] == writes_on:
            (task.parent / "work" / "out.txt").write_text("42\n")
        return turn_to_json(
            assistant_turn(text="Done: out.txt is written.", ending=Ending.COMPLETE)
        )

    async def go() -> Any:
        client = await Client.connect(address)
        queue = f"gated-{uuid.uuid4().hex[:8]}"
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            async with Worker(
                client, task_queue=queue, workflows=[GatedAgent],
                activities=[*activities(), agent], activity_executor=pool,
            ):  # fmt: skip
                return await client.execute_workflow(
                    GatedAgent.run,
                    GatedAgentInput(task=str(task), agent_activity="test.agent"),
                    id=f"gated-{uuid.uuid4().hex[:8]}",
                    task_queue=queue,
                )

    return asyncio.run(go()), rounds


def test_the_gate_continues_a_false_claim_then_accepts_and_certifies(
    tmp_path: Path, temporal_address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    result, rounds = run_gated(temporal_address, write_spec(tmp_path, "g1"), writes_on=2)
    assert result.status == "done", result
    assert (result.turns, result.continuations) == (2, 1)
    assert rounds[0]["nudge"] == "" and "out.txt" in rounds[1]["nudge"]  # the failed check
    assert result.certificate is not None
    ok, problems = verify_certificate(result.certificate)
    assert ok, problems


def test_a_claim_that_never_holds_escalates_with_a_report(
    tmp_path: Path, temporal_address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    result, rounds = run_gated(temporal_address, write_spec(tmp_path, "g2"), writes_on=None)
    assert result.status == "escalated", result
    assert len(rounds) == 2 and result.certificate is None
    assert result.report is not None and Path(result.report).is_file()
    assert "out.txt" in result.reason
