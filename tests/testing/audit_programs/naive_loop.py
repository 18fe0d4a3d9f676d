"""A naive agent loop: the openai SDK, ends on any turn without tool calls (the usual bug).

Modes (first argument before the prompt): ``naive`` stops on any tool-less turn;
``extra`` asks the model once more after its answer (one call too many);
``cut`` runs tool calls even when the turn was cut at the output limit; ``finish`` also offers
a ``task_complete(summary)`` tool and ends on its call, printing the summary.
"""

import json
import subprocess
import sys

import openai

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
FINISH = {
    "type": "function",
    "function": {
        "name": "task_complete",
        "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}},
    },
}


def bash(raw: str) -> str:
    try:
        command = json.loads(raw)["command"]
    except ValueError:
        command = raw.partition('"command": "')[2]  # "repairs" cut arguments
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=10)
    return done.stdout + done.stderr


def main() -> int:
    mode, prompt = sys.argv[1], sys.argv[-1]
    client = openai.OpenAI(max_retries=2)
    messages: list[dict[str, object]] = [{"role": "user", "content": prompt}]
    tools = [*TOOLS, FINISH] if mode == "finish" else TOOLS
    while True:
        choice = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=tools
        ).choices[0]
        calls = choice.message.tool_calls or []
        for call in calls:
            if call.function.name == "task_complete":
                print(json.loads(call.function.arguments)["summary"])
                return 0
        if not calls:
            if mode == "extra" and messages[-1].get("content") != "Are you sure?":
                messages.append({"role": "assistant", "content": choice.message.content})
                messages.append({"role": "user", "content": "Are you sure?"})
                continue
            print(choice.message.content or "")
            return 0
        if choice.finish_reason == "length" and mode != "cut":
            print("cut off", file=sys.stderr)
            return 1
        messages.append(choice.message.model_dump(exclude_none=True))
        for call in calls:
            output = bash(call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})


if __name__ == "__main__":
    sys.exit(main())
