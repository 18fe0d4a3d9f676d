"""An openai-agents agent wrapped for `donegate audit --api openai-responses -- python ...`.

The Agents SDK reads OPENAI_BASE_URL and OPENAI_API_KEY; tracing is disabled, since the
emulator has no tracing endpoint.
"""

import subprocess
import sys

from agents import Agent, Runner, function_tool, set_tracing_disabled

set_tracing_disabled(True)


@function_tool
def bash(command: str) -> str:
    """Run a shell command."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True)
    return done.stdout + done.stderr


def main() -> int:
    agent = Agent(name="audited", instructions="Use bash to do the work.", tools=[bash])
    try:
        result = Runner.run_sync(agent, sys.argv[-1])
    except Exception as exc:  # noqa: BLE001 (the contract: any failure is non-zero)
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(result.final_output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
