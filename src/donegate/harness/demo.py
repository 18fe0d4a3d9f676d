"""The offline demo's material: a small repository with a real failing test, its task, and the
scripted agent seed 002 describes.

The agent reads the code, posts a progress report that ends its turn ("2 of 3 done"), then
claims "all tests pass" without running them; only after the gate's nudges does it fix the bug
and run the tests. A naive loop takes the progress report as the answer; the gate continues the
run until the harness's own test run passes. The script is plain data in script-file format: the
CLI plays it through the test kit (this layer may not import it).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from donegate.harness.checklist import Checklist
from donegate.harness.spec import TaskSpec
from donegate.harness.task_tools import build_tools
from donegate.models.base import Model
from donegate.results import RunResult
from donegate.run import run

__all__ = ["BUGGY", "FIXED", "demo_script", "demo_task", "make_repo", "run_naive"]

BUGGY = '''"""Small statistics helpers."""


def total(values):
    return sum(values)


def mean(values):
    return total(values) / (len(values) + 1)
'''

FIXED = BUGGY.replace("(len(values) + 1)", "len(values)")

TESTS = """import unittest

from stats import mean, total


class StatsTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total([1, 2, 3]), 6)

    def test_mean(self):
        self.assertEqual(mean([2, 4, 6]), 4)


if __name__ == "__main__":
    unittest.main()
"""

ITEMS = ("read the code", "find the bug", "fix the bug and run the tests")


def make_repo(root: Path) -> Path:
    """Write the buggy module and its test into `root`; return `root`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "stats.py").write_text(BUGGY, encoding="utf-8")
    (root / "test_stats.py").write_text(TESTS, encoding="utf-8")
    (root / "README.md").write_text("# stats\n\nRun the tests: python -m unittest\n", "utf-8")
    return root


def _test_command() -> list[str]:
    return [sys.executable, "-m", "unittest", "-q"]


def demo_task(root: Path) -> TaskSpec:
    """The task: make the test suite pass; the harness runs it to decide."""
    return TaskSpec.model_validate(
        {
            "id": "fix-mean",
            "prompt": "The test suite of this repository fails. Fix the bug so the tests pass.",
            "checklist": list(ITEMS),
            "completion_condition": "python -m unittest passes in the repository",
            "checks": [{"run": _test_command(), "name": "unit tests"}],
            "max_continuations": 3,
            "tools": ["read_file", "write_file", "run_command", "update_checklist"],
            "workdir": str(root),
        }
    )


def demo_script() -> dict[str, Any]:
    """The agent's turns, in script-file format (tool stubs only satisfy the format)."""
    test_cmd = shlex.join(_test_command())
    stub = {"returns": "(the harness runs the real tool)"}
    tick = "update_checklist"
    return {
        "prompt": "The test suite of this repository fails. Fix the bug so the tests pass.",
        "tools": {name: stub for name in ("read_file", "write_file", "run_command", tick)},
        "turns": [
            {
                "tool_calls": [
                    {"tool": "read_file", "args": {"path": "stats.py"}},
                    {"tool": "read_file", "args": {"path": "test_stats.py"}},
                ]
            },
            {
                "tool_calls": [
                    {"tool": tick, "args": {"item": ITEMS[0], "status": "done"}},
                    {
                        "tool": tick,
                        "args": {"item": ITEMS[1], "status": "done", "note": "mean() is off"},
                    },
                ]
            },
            {
                "thinking": "Read the code and found the bug: 2 of 3 done.",
                "text": "Progress update: 2 of 3 done. mean() divides by len(values) + 1; "
                "fixing it next.",
            },
            {
                "tool_call": tick,
                "args": {"item": ITEMS[2], "status": "done"},
            },
            {"text": "All tests pass. The task is complete."},
            {"tool_call": "write_file", "args": {"path": "stats.py", "content": FIXED}},
            {"tool_call": "run_command", "args": {"command": test_cmd}},
            {
                "tool_call": tick,
                "args": {"item": ITEMS[2], "status": "done", "note": "2 tests pass"},
            },
            {"text": "Fixed mean() to divide by len(values); I ran the tests and both pass."},
        ],
    }


def run_naive(spec: TaskSpec, model: Model, root: Path) -> RunResult:
    """The same task in a plain loop with no gate: any text-only turn ends it."""
    tools = build_tools(spec, root, Checklist(spec.checklist))
    return run(spec.prompt, model=model, tools=tools, max_steps=spec.max_steps, run_id=spec.id)
