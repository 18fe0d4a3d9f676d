"""A LangChain agent for `donegate audit -- python langchain_agent.py [--gated]`.

Plain: ``create_agent``'s rule (an AI message without tool calls ends the run). ``--gated``:
the same agent with ``middleware=[DoneGateMiddleware(task)]``. ChatOpenAI reads
OPENAI_BASE_URL.
"""

import os
import sys

from _task import bash, task
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from donegate import Escalated


def main() -> int:
    prompt, gated = sys.argv[-1], "--gated" in sys.argv[1:-1]
    middleware = []
    if gated:
        from donegate.integrations.langchain import DoneGateMiddleware

        middleware.append(DoneGateMiddleware(task(prompt)))
    agent = create_agent(ChatOpenAI(model="gpt-4o-mini"), tools=[tool(bash)],
                         middleware=middleware)  # fmt: skip
    try:
        state = agent.invoke({"messages": [{"role": "user", "content": prompt}]})
    except Escalated as exc:
        print(f"escalated: {exc.reason}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 (the contract: any failure is non-zero)
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(state["messages"][-1].text)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown, where an SDK client can hang (see the docs)
