"""donegate: run tool-calling LLM agents to a finish that can be proven."""

from donegate.messages import Ending, Message, ToolCall, ToolResult, Turn, Usage
from donegate.models.registry import classify

__all__ = [
    "Ending",
    "Message",
    "ToolCall",
    "ToolResult",
    "Turn",
    "Usage",
    "classify",
]
