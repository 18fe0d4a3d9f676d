"""A pydantic-ai agent wrapped for `donegate audit -- python examples/audit/pydantic_ai_agent.py`.

pydantic-ai's OpenAI provider reads OPENAI_BASE_URL and OPENAI_API_KEY, so the audit's emulator
answers it. Exit 0 only when the run ends with output; any exception is a non-zero exit.
"""

import subprocess
import sys

from pydantic_ai import Agent

agent = Agent("openai:gpt-4o-mini")


@agent.tool_plain
def bash(command: str) -> str:
    """Run a shell command."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True)
    return done.stdout + done.stderr


def main() -> int:
    try:
        result = agent.run_sync(sys.argv[-1])
    except Exception as exc:  # noqa: BLE001 (the contract: any failure is non-zero)
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(result.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
