"""`scaffold`: the files of ``donegate init``, a task a new user can run at once and then edit.

The example is a real gated task: a tiny module whose unit test fails, a task file whose check
runs that test (the test file protected), and a scripted agent that first posts a progress
report (a text-only turn the gate judges, and continues, since the test still fails), then
writes the fix, runs the test and calls the completion tool. The task file and the script sit
beside the workdir, never in it: nothing the gate trusts lives where the agent writes.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from donegate.errors import UserError
from donegate.records.task import task_id_problem

__all__ = ["DEFAULT_DIR", "check_command", "scaffold"]

DEFAULT_DIR = "my-task"
"""Where ``donegate init`` writes when no folder is given."""

_GREET = '''"""Greetings."""


def greet(name):
    raise NotImplementedError("write me")
'''

_GREET_FIXED = '''"""Greetings."""


def greet(name):
    return f"Hello, {name}!"
'''

_TEST = """import unittest

from greet import greet


class GreetTest(unittest.TestCase):
    def test_greet(self):
        self.assertEqual(greet("Ada"), "Hello, Ada!")


if __name__ == "__main__":
    unittest.main()
"""

_TASK = """\
# A task for `donegate run task.yaml`. Every field: docs/tasks.md.
id: {task_id}
prompt: >-
  Make the unit test in test_greet.py pass: greet(name) in greet.py must return
  "Hello, <name>!". Do not change the test.
model: script:agent.yaml       # a scripted agent; or run with --model anthropic:claude-sonnet-4-5
workdir: work                  # tools and checks are confined here (relative to this file)
tools: [read_file, write_file, run_command]
checks:                        # the harness runs these itself when the agent says it is done
  - run: {command_yaml}
    name: unit tests
    timeout: 60
protect: [test_greet.py]       # the agent may not change the test to make it pass
max_continuations: 2           # nudges before the gate escalates to a person
"""

_AGENT = """\
# A scripted agent (docs/models.md): each turn is what the model would answer. Built-in tools
# (read_file, write_file, run_command) really run; the task's prompt is the one sent.
turns:
  - tool_call: read_file
    args: {{path: test_greet.py}}
  # A progress report ends the turn: a naive loop would stop here. The gate runs the check,
  # sees the test fail, and continues the agent.
  - text: "Progress: I read the test; greet.py is next."
  - tool_call: write_file
    args:
      path: greet.py
      content: |
{fixed}
  - tool_call: run_command
    args: {{command: {command_yaml}}}
  - tool_call: task_complete
    args: {{summary: "greet() returns Hello, <name>!; the unit test passes"}}
"""

_README = """\
# {task_id}: a gated task

```
donegate check task.yaml     # validate the task file (nothing runs)
donegate run task.yaml       # run the agent behind the completion gate
```

- `task.yaml`: the task: prompt, the check that decides "done", protected files.
- `agent.yaml`: a scripted agent that plays it (replace with `--model provider:name`).
- `work/`: the agent's workdir; `greet.py` is what it fixes, `test_greet.py` is protected.

The run prints a progress report, the gate's "not done" (the test still fails), the fix, and
"gate: accepted" with the path of a signed completion certificate (`donegate verify PATH`).
"""


def check_command() -> str:
    """The check's command: ``python3 -m unittest ...`` where ``python3`` is on PATH."""
    python = "python3" if shutil.which("python3") else sys.executable
    return shlex.join([python, "-m", "unittest", "-q", "test_greet"])


def scaffold(directory: str | Path = DEFAULT_DIR) -> list[Path]:
    """Write the example task into `directory`; return the files written.

    Refuses (`UserError`, before writing anything) when any of the files exists already.
    """
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise UserError(f"{root}: exists and is not a folder")
    name = root.resolve().name
    task_id = name if task_id_problem(name) is None else DEFAULT_DIR
    command = check_command()
    fixed = "\n".join(f"        {line}" if line else "" for line in _GREET_FIXED.splitlines())
    files = {
        "task.yaml": _TASK.format(task_id=task_id, command_yaml=_yaml_str(command)),
        "agent.yaml": _AGENT.format(fixed=fixed, command_yaml=_yaml_str(command)),
        "README.md": _README.format(task_id=task_id),
        "work/greet.py": _GREET,
        "work/test_greet.py": _TEST,
    }
    for relative in files:
        if (root / relative).exists():
            raise UserError(f"{root / relative}: already exists; init writes only new files")
    written = []
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _yaml_str(text: str) -> str:
    """`text` as a double-quoted YAML scalar (a path may hold ``:`` or ``#``)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
