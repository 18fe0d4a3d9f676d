"""donegate: run tool-calling LLM agents to a finish that can be proven.

```python
import donegate

result = donegate.run("order 55219 arrived smashed", model="anthropic:claude-sonnet-4-5",
                      tools=[get_order, start_refund], max_steps=8)
result.status   # "complete" only for a real finish: never a truncated, filtered or empty turn

task = donegate.load_task("my-task/task.yaml")     # or donegate.TaskSpec(id=..., prompt=...)
donegate.run_task(task, model=model).status         # "done" only when the task's checks pass
```
"""

import typing as _typing

from donegate.errors import DonegateError
from donegate.events import Event, EventSink
from donegate.finish import FinishTool
from donegate.loop import Policies
from donegate.messages import Ending, Message, ToolCall, ToolResult, Turn, Usage
from donegate.models.base import Model, ModelSettings
from donegate.models.registry import classify
from donegate.results import RunResult, Status
from donegate.run import arun, run, stream
from donegate.tools import Tool, tool

if _typing.TYPE_CHECKING:
    from donegate.harness.runner import TaskResult, run_task
    from donegate.harness.spec import TaskSpec, load_task

__all__ = [
    "DonegateError",
    "Ending",
    "Event",
    "EventSink",
    "FinishTool",
    "Message",
    "Model",
    "ModelSettings",
    "Policies",
    "RunResult",
    "Status",
    "TaskResult",
    "TaskSpec",
    "Tool",
    "ToolCall",
    "ToolResult",
    "Turn",
    "Usage",
    "arun",
    "classify",
    "load_task",
    "run",
    "run_task",
    "stream",
    "tool",
]

_LAZY = {
    "TaskResult": "donegate.harness.runner",
    "TaskSpec": "donegate.harness.spec",
    "load_task": "donegate.harness.spec",
    "run_task": "donegate.harness.runner",
}
"""The gate's names, imported when first used: the task-file parsers (YAML) load only then."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        value: object = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'donegate' has no attribute {name!r}")
