"""A plain openai SDK loop wrapped for `donegate audit -- python examples/audit/sdk_loop.py`.

The contract: the prompt is the last argument, exit 0 only on a real finish, the answer is the
last stdout line. Unlike a naive loop, it treats only ``finish_reason == "stop"`` with visible
text as a finish, and never runs the calls of a cut turn. Audited, it is still
``premature_stop`` on ``progress_report`` (nothing checks the work was done: that is what a
task gate adds) and ``crashed`` on ``malformed_call`` (it trusts the arguments to parse).
"""

import json
import subprocess
import sys

import openai

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}}}}]  # fmt: skip


def main() -> int:
    client = openai.OpenAI()
    messages: list[dict[str, object]] = [{"role": "user", "content": sys.argv[-1]}]
    for _ in range(20):
        choice = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS
        ).choices[0]
        if choice.finish_reason == "tool_calls" and choice.message.tool_calls:
            messages.append(choice.message.model_dump(exclude_none=True))
            for call in choice.message.tool_calls:
                command = json.loads(call.function.arguments)["command"]
                done = subprocess.run(command, shell=True, capture_output=True, text=True)
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": done.stdout + done.stderr})  # fmt: skip
            continue
        text = (choice.message.content or "").strip()
        if choice.finish_reason == "stop" and text and not choice.message.refusal:
            print(text)
            return 0
        print(f"not finished: {choice.finish_reason}", file=sys.stderr)
        return 1
    return 1


if __name__ == "__main__":
    sys.exit(main())
