"""A pydantic-ai agent for `donegate audit -- python pydantic_ai_agent.py [--gated]`.

Plain: pydantic-ai's own rule (any text ends the run). ``--gated``: the same agent with
``capabilities=[DoneGate(task)]``. pydantic-ai's OpenAI provider reads OPENAI_BASE_URL.
"""

import os
import sys

from _task import bash, task
from pydantic_ai import Agent

from donegate import Escalated


def main() -> int:
    prompt, gated = sys.argv[-1], "--gated" in sys.argv[1:-1]
    capabilities = []
    if gated:
        from donegate.integrations.pydantic_ai import DoneGate

        capabilities.append(DoneGate(task(prompt)))
    agent = Agent("openai:gpt-4o-mini", tools=[bash], capabilities=capabilities)
    try:
        result = agent.run_sync(prompt)
    except Escalated as exc:
        print(f"escalated: {exc.reason}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 (the contract: any failure is non-zero)
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(result.output)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown, where an SDK client can hang (see the docs)
