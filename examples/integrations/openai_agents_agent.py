"""An Agents SDK agent for `donegate audit --api openai-responses --finish-tool task_complete
-- python openai_agents_agent.py [--gated]`.

Plain: the SDK's own rules: text with no tool calls is the final output, and so is a call to its
finish tool ``task_complete`` (``StopAtTools``, the tool's output is the final output).
``--gated``: ``Runner.run_sync(DoneGate(task).wrap(agent), prompt)``, where ``task_complete`` is
the gate's (the only way a gated run ends). Both finish through the same tool, so the audit's
``--finish-tool task_complete`` pack compares them on the same endings. The SDK reads
OPENAI_BASE_URL.
"""

import os
import sys

from _task import bash, task
from agents import Agent, Runner, StopAtTools, function_tool, set_tracing_disabled

from donegate import Escalated

set_tracing_disabled(True)  # the emulator has no tracing endpoint


def task_complete(summary: str) -> str:
    """Call this once, when the whole task is finished."""
    return summary


def main() -> int:
    prompt, gated = sys.argv[-1], "--gated" in sys.argv[1:-1]
    agent = Agent(name="audited", instructions="Use bash to do the work.",
                  tools=[function_tool(bash)])  # fmt: skip
    if gated:
        from donegate.integrations.openai_agents import DoneGate

        agent = DoneGate(task(prompt)).wrap(agent)
    else:
        agent = agent.clone(
            tools=[*agent.tools, function_tool(task_complete)],
            tool_use_behavior=StopAtTools(stop_at_tool_names=["task_complete"]),
        )
    try:
        result = Runner.run_sync(agent, prompt)
    except Escalated as exc:
        print(f"escalated: {exc.reason}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 (the contract: any failure is non-zero)
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(result.final_output)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown, where an SDK client can hang (see the docs)
