"""`DoneGateMiddleware`: the completion gate as a LangChain 1.x ``create_agent`` middleware.

```python
gate = DoneGateMiddleware("task.yaml")
agent = create_agent(model, tools=[...], middleware=[gate])
agent.invoke({"messages": [{"role": "user", "content": prompt}]})
gate.certificate                # the signed certificate's path
```

LangChain's agent ends on any AI message without tool calls. The gate plugs into
``after_model`` (declared ``can_jump_to=["model"]``):

1. The last `AIMessage` is classified from LangChain's ``normalized_finish_reason`` where the
   installed langchain-core provides it, else the provider's own ``finish_reason`` /
   ``stop_reason`` in ``response_metadata``, plus an OpenAI ``refusal`` in
   ``additional_kwargs`` (`message_turn`).
2. The gate decides (`HostGate.observe`): tool calls go on to the tools; a truncated or empty
   turn, or a claim of done the checks refute, jumps back to the model with the nudge as a
   user message (a call cut mid-arguments is removed from the message first, so it never
   runs); a claim the checks accept ends the run with the certificate written.
3. When the gate gives up (continuations spent, a refusal, a content filter): with a
   checkpointer, an ``interrupt()`` carrying ``{"reason", "report"}``, and a person resumes with
   ``Command(resume=...)``: a string is sent to the model as guidance (with a fresh budget),
   anything else ends the run. Without a checkpointer it raises `donegate.Escalated`.

LangGraph re-runs a node from its start on resume; the gate remembers the message it escalated
on, so the resumed node neither judges it again nor writes a second report.
"""

from __future__ import annotations

import json
from typing import Any

from donegate.errors import Escalated, MissingExtra
from donegate.integrations._gate import FrameworkGate, assistant_turn
from donegate.messages import Ending, ToolCall, Turn

try:
    import langchain
    from langchain.agents.middleware import AgentMiddleware, hook_config
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.config import get_config
    from langgraph.types import interrupt
except ImportError:  # pragma: no cover - the extra is missing
    raise MissingExtra(["langchain", "langgraph"], "langchain") from None

__all__ = ["DoneGateMiddleware", "message_turn"]

HOST = "langchain"
_CHECKPOINTER = "__pregel_checkpointer"  # langgraph's config key for the graph's checkpointer

_REASONS = {
    "stop": Ending.COMPLETE,
    "end_turn": Ending.COMPLETE,
    "stop_sequence": Ending.COMPLETE,
    "STOP": Ending.COMPLETE,
    "length": Ending.TRUNCATED,
    "max_tokens": Ending.TRUNCATED,
    "MAX_TOKENS": Ending.TRUNCATED,
    "content_filter": Ending.FILTERED,
    "SAFETY": Ending.FILTERED,
    "refusal": Ending.REFUSED,
    "tool_calls": Ending.TOOL_USE,
    "tool_use": Ending.TOOL_USE,
    "tool_call": Ending.TOOL_USE,
    "pause_turn": Ending.PAUSED,
    "error": Ending.ERROR,
}


def message_turn(message: AIMessage) -> Turn:
    """A donegate `Turn` from a LangChain `AIMessage` (step 1 of the module docstring)."""
    meta = message.response_metadata or {}
    raw = meta.get("normalized_finish_reason") or meta.get("finish_reason")
    raw = raw or meta.get("stop_reason")
    text = message.text if isinstance(message.text, str) else str(message.text)
    calls = tuple(
        ToolCall.from_raw(
            id=c.get("id") or f"call_{i}", name=c["name"], arguments_raw=json.dumps(c["args"])
        )
        for i, c in enumerate(message.tool_calls)
    )
    refusal = message.additional_kwargs.get("refusal")
    ending = _REASONS.get(str(raw), Ending.COMPLETE) if raw is not None else Ending.COMPLETE
    if isinstance(refusal, str) and refusal:
        ending = Ending.REFUSED
    elif message.invalid_tool_calls:
        ending = Ending.MALFORMED_TOOL_CALL
    elif calls:
        ending = Ending.TRUNCATED if ending is Ending.TRUNCATED else Ending.TOOL_USE
        if ending is Ending.TRUNCATED:
            ending = Ending.MALFORMED_TOOL_CALL  # arguments cut at the output limit
    elif ending is Ending.TOOL_USE or (ending is Ending.COMPLETE and not text.strip()):
        ending = Ending.EMPTY
    return assistant_turn(
        text=text,
        calls=calls,
        refusal=refusal if isinstance(refusal, str) else None,
        ending=ending,
        raw_reason=str(raw) if raw is not None else None,
        model=meta.get("model_name") or meta.get("model"),
        api=HOST,
    )


class DoneGateMiddleware(FrameworkGate, AgentMiddleware):
    """The task file's completion gate as a ``create_agent`` middleware."""

    host = HOST
    host_version = langchain.__version__
    _escalated: tuple[str | None, Escalated] | None = None  # the verdict an interrupt awaits

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """A fresh gate for each run (protected-file digests, budget, transcript)."""
        self.gate.start()
        self._escalated = None
        return None

    @hook_config(can_jump_to=["model", "end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Judge the model's last message: on to the tools, back to the model, or the end."""
        message = state["messages"][-1]
        if not isinstance(message, AIMessage):
            return None
        pending = self._escalated
        if pending is not None and pending[0] == message.id:  # re-run on resume: same verdict
            return self._to_person(pending[1])
        try:
            decision = self.gate.observe(message_turn(message))
        except Escalated as exc:
            self._escalated = (message.id, exc)
            return self._to_person(exc)
        if decision.action == "continue":
            nudge = HumanMessage(content=decision.message or "Continue.")
            if message.tool_calls or message.invalid_tool_calls:  # cut calls: never run them
                bare = AIMessage(content=message.content, id=message.id, tool_calls=[])
                return {"messages": [bare, nudge], "jump_to": "model"}
            return {"messages": [nudge], "jump_to": "model"}
        return None

    def _to_person(self, exc: Escalated) -> dict[str, Any] | None:
        """Step 3: an interrupt for a person (with a checkpointer), else raise."""
        if not get_config().get("configurable", {}).get(_CHECKPOINTER):
            raise exc
        answer = interrupt({"reason": exc.reason, "report": str(exc.report)})
        self._escalated = None
        if isinstance(answer, str) and answer.strip():
            self.gate.gate.continuations = 0  # a person's word: a fresh budget
            return {"messages": [HumanMessage(content=answer)], "jump_to": "model"}
        return {"jump_to": "end"}
