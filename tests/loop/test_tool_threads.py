"""Plain tools a step calls together run side by side, on threads the calling thread keeps
across its runs (`run._tool_threads`): a nested run and a forked child get their own."""

from __future__ import annotations

import gc
import multiprocessing
import sys
import threading
import time
from typing import Any

import pytest

import donegate
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script


def two_calls(tool: str, text: str = "Both done.") -> ScriptedModel:
    script = {
        "turns": [
            {
                "tool_calls": [
                    {"tool": tool, "args": {"n": 1}, "id": "c1"},
                    {"tool": tool, "args": {"n": 2}, "id": "c2"},
                ]
            },
            {"text": text},
        ]
    }
    return ScriptedModel(parse_script(script, source="inline"))


def run_two(tool: donegate.Tool) -> donegate.RunResult:
    return donegate.run("go", model=two_calls(tool.name), tools=[tool], max_steps=4)


def meeting_tool(seen: list[str]) -> donegate.Tool:
    barrier = threading.Barrier(2, timeout=5)

    def meet(n: int) -> str:
        """Wait for the other call of the step: passes only when both run at once."""
        seen.append(f"{threading.current_thread().name}@{threading.get_ident()}")
        barrier.wait()
        return f"met {n}"

    return donegate.Tool.from_function(meet)


def test_the_calls_of_a_step_run_side_by_side() -> None:
    seen: list[str] = []
    result = run_two(meeting_tool(seen))
    assert result.status == "complete", result.reason
    assert [r.result.content for r in result.tool_calls] == ["met 1", "met 2"]
    assert all(name.startswith("donegate-tool") for name in seen)


def tool_threads() -> set[int]:
    return {t.ident or 0 for t in threading.enumerate() if t.name.startswith("donegate-tool")}


def test_a_thread_keeps_its_tool_threads_across_runs() -> None:
    first: list[str] = []
    second: list[str] = []
    assert run_two(meeting_tool(first)).status == "complete"
    kept = tool_threads()
    assert run_two(meeting_tool(second)).status == "complete"
    assert tool_threads() == kept  # no thread started for the second run
    assert {int(name.rsplit("@", 1)[1]) for name in second} <= kept


def test_threads_of_their_own_serve_each_calling_thread() -> None:
    names: dict[str, list[str]] = {}
    both_ran = threading.Barrier(2, timeout=10)  # both callers (and their pools) alive at once

    def drive(label: str) -> None:
        names[label] = []
        assert run_two(meeting_tool(names[label])).status == "complete"
        both_ran.wait()

    threads = [threading.Thread(target=drive, args=(label,)) for label in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert len(names["a"]) == len(names["b"]) == 2
    assert set(names["a"]).isdisjoint(names["b"])


def test_the_tool_threads_go_with_the_thread_that_kept_them() -> None:
    """A program that calls `run` from many short-lived threads does not pile up idle ones."""
    before = tool_threads()
    callers = [threading.Thread(target=run_two, args=(meeting_tool([]),)) for _ in range(6)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(20)
    deadline = time.monotonic() + 10
    while tool_threads() - before and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert not tool_threads() - before


def test_a_run_nested_in_a_tool_does_not_wait_on_its_parent() -> None:
    inner: list[str] = []

    def delegate(n: int) -> str:
        """Run a sub-agent whose step calls two tools at once."""
        result = run_two(meeting_tool(inner))
        return f"{n}: {result.status}"

    outer = donegate.Tool.from_function(delegate)
    result = run_two(outer)
    assert result.status == "complete", result.reason
    assert [r.result.content for r in result.tool_calls] == ["1: complete", "2: complete"]
    assert len(inner) == 4


def _in_child(queue: Any) -> None:
    seen: list[str] = []
    queue.put(run_two(meeting_tool(seen)).status)


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method: Linux")
def test_a_forked_child_makes_its_own_tool_threads() -> None:
    """The child's copy of the parent's pool has no threads: using it would hang."""
    assert run_two(meeting_tool([])).status == "complete"  # this thread now keeps a pool
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_in_child, args=(queue,))
    child.start()
    child.join(20)
    if child.is_alive():
        child.kill()
    assert queue.get(timeout=1) == "complete"
