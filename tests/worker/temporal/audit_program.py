"""`donegate audit`'s gated loop, run as a Temporal workflow: a program for the audit's contract.

The loop of ``tests/testing/audit_programs/gated_loop.py`` (`donegate.run` behind a gate that is
done only when ``audit_work.txt`` exists), with the gate's rounds as the `GatedAgent` workflow of
``donegate.integrations.temporal`` on a real Temporal server (``DONEGATE_TEST_TEMPORAL_ADDRESS``):
each round is one agent activity (one `donegate.run`, through the official ``openai`` SDK that
audit points at its emulator), and each of its endings is judged by the ``donegate.judge``
activity, its check run in the clean room. The program starts its own in-process Temporal worker
on a task queue of its own, prints the final answer and exits 0 only when the gate accepted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import openai
import yaml
from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

import donegate
from donegate.codec import turn_to_json
from donegate.integrations._gate import assistant_turn
from donegate.integrations.temporal import AgentRound, GatedAgent, GatedAgentInput, activities
from donegate.messages import Ending, Message

ADDRESS_ENV = "DONEGATE_TEST_TEMPORAL_ADDRESS"
HISTORY: list[Message] = []
"""The whole conversation (tool calls and results included) across rounds: the gate's
transcript holds only the turns it judged. One workflow per process, so one list."""
ANSWER: list[str] = []


def bash(command: str) -> str:
    """Run a shell command in the working directory."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=10)
    return done.stdout + done.stderr


@activity.defn(name="audit.agent_round")
def agent_round(given: AgentRound) -> dict[str, Any]:
    """One round: `donegate.run` to a tool-less end; its last turn, for the gate to judge."""
    prompt: str | list[Message] = given.prompt
    if given.round > 1:
        prompt = [*HISTORY, *([Message.user(given.nudge)] if given.nudge else [])]
    client = openai.OpenAI(max_retries=3)
    result = donegate.run(prompt, model=client, model_name="gpt-4o-mini", tools=[bash], max_steps=8)
    HISTORY[:] = result.transcript
    ANSWER[:] = [result.text]
    if not result.turns:  # the provider failed before any turn: the gate escalates at once
        turn = assistant_turn(ending=Ending.ERROR, raw_reason=result.reason or result.status)
        return turn_to_json(turn)
    return turn_to_json(result.turns[-1])


async def gated(address: str, task: Path) -> Any:
    client = await Client.connect(address)
    queue = f"audit-{uuid.uuid4().hex[:12]}"
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        async with Worker(
            client, task_queue=queue, workflows=[GatedAgent],
            activities=[*activities(), agent_round], activity_executor=pool,
        ):  # fmt: skip
            return await client.execute_workflow(
                GatedAgent.run,
                GatedAgentInput(task=str(task), agent_activity="audit.agent_round", max_turns=6),
                id=queue,
                task_queue=queue,
            )


def main() -> int:
    spec = {
        "id": "audit",
        "prompt": sys.argv[-1],
        "workdir": os.getcwd(),
        "checks": [{"file_exists": "audit_work.txt"}],
        "max_continuations": 2,
    }
    with tempfile.TemporaryDirectory() as gate_dir:  # the gate's files, outside the workdir
        task = Path(gate_dir) / "audit.yaml"
        task.write_text(yaml.safe_dump(spec))
        result = asyncio.run(gated(os.environ[ADDRESS_ENV], task))
    if result.status != "done":
        print(f"not done: {result.status}: {result.reason}", file=sys.stderr)
        return 1
    print(ANSWER[0] if ANSWER else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
