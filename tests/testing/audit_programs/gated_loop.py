"""A loop built on `donegate.run` behind a task gate: done only when audit_work.txt exists.

`donegate.run` classifies every ending (a cut, a refusal, an empty turn is not ``complete``);
the gate turns a ``complete`` run whose work is not done into one more round with a user
message naming what is missing, as the harness's continuation does.
"""

import subprocess
import sys
from pathlib import Path

import openai

import donegate
from donegate.messages import Message, TextPart


def bash(command: str) -> str:
    """Run a shell command in the working directory."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=10)
    return done.stdout + done.stderr


def main() -> int:
    prompt: str | list[Message] = sys.argv[-1]
    client = openai.OpenAI(max_retries=3)
    for _ in range(3):
        result = donegate.run(
            prompt, model=client, model_name="gpt-4o-mini", tools=[bash], max_steps=8
        )
        if result.status != "complete":
            print(f"not done: {result.status}: {result.reason}", file=sys.stderr)
            return 1
        if Path("audit_work.txt").exists():
            print(result.text)
            return 0
        missing = "audit_work.txt does not exist yet: the work is not done. Continue."
        prompt = [*result.transcript, Message(role="user", parts=(TextPart(text=missing),))]
    print("gate never passed", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
