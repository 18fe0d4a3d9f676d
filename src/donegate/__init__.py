"""donegate: run tool-calling LLM agents to a finish that can be proven.

```python
import donegate

result = donegate.run("order 55219 arrived smashed", model="anthropic:claude-sonnet-4-5",
                      tools=[get_order, start_refund], max_steps=8)
result.status   # "complete" only for a real finish: never a truncated, filtered or empty turn
```
"""

from donegate.events import Event, EventSink
from donegate.finish import FinishTool
from donegate.loop import Policies, RunResult, Status
from donegate.messages import Ending, Message, ToolCall, ToolResult, Turn, Usage
from donegate.models.base import Model, ModelSettings
from donegate.models.registry import classify
from donegate.run import arun, run, stream
from donegate.tools import Tool, tool

__all__ = [
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
    "Tool",
    "ToolCall",
    "ToolResult",
    "Turn",
    "Usage",
    "arun",
    "classify",
    "run",
    "stream",
    "tool",
]
