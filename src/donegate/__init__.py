"""donegate: run tool-calling LLM agents to a finish that can be proven.

```python
import donegate

result = donegate.run("order 55219 arrived smashed", model="anthropic:claude-sonnet-4-5",
                      tools=[get_order, start_refund], max_steps=8)
result.status   # "complete" only for a real finish: never a truncated, filtered or empty turn

task = donegate.load_task("my-task/task.yaml")     # or donegate.TaskSpec(id=..., prompt=...)
donegate.run_task(task, model=model).status         # "done" only when the task's checks pass
```

The root holds what that example needs; everything else is imported from its module
(`donegate.messages`, `donegate.results`, `donegate.events`, `donegate.models`, ...).
Each name here is imported when first used (PEP 562), so ``import donegate`` costs next to
nothing: a ``donegate`` command or an agent CLI's hook, which import the package on their
way to their own modules, do not pay for the loop, and nothing loads a provider SDK.
"""

import sys as _sys
import types as _types

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing is most of this file's cost
if TYPE_CHECKING:
    from donegate.errors import DonegateError, Escalated
    from donegate.harness.runner import TaskResult, run_task
    from donegate.harness.spec import TaskSpec, load_task
    from donegate.models.registry import classify
    from donegate.results import RunResult
    from donegate.run import arun, run, stream
    from donegate.tools import Tool, tool
del TYPE_CHECKING

__all__ = [
    "DonegateError",
    "Escalated",
    "RunResult",
    "TaskResult",
    "TaskSpec",
    "Tool",
    "arun",
    "classify",
    "load_task",
    "run",
    "run_task",
    "stream",
    "tool",
]

_LAZY = {
    "DonegateError": "donegate.errors",
    "Escalated": "donegate.errors",
    "RunResult": "donegate.results",
    "TaskResult": "donegate.harness.runner",
    "TaskSpec": "donegate.harness.spec",
    "Tool": "donegate.tools",
    "arun": "donegate.run",
    "classify": "donegate.models.registry",
    "load_task": "donegate.harness.spec",
    "run": "donegate.run",
    "run_task": "donegate.harness.runner",
    "stream": "donegate.run",
    "tool": "donegate.tools",
}
"""Each public name's module, imported when the name is first used."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        value: object = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'donegate' has no attribute {name!r}")


class _Root(_types.ModuleType):
    """The package, whose ``run`` stays the function when the ``donegate.run`` module loads.

    Importing a submodule binds it on its package (``donegate.run = <module>``). Bound eagerly
    (``from donegate.run import run`` in this file), the function replaced it at once; bound
    lazily, a module importing ``donegate.run`` first would leave ``donegate.run`` the module.
    So a module bound under one of the names above is bound as that name's value instead.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, _types.ModuleType) and _LAZY.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Root
