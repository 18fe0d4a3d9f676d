"""`DoneGate`: the completion gate for the OpenAI Agents SDK (openai-agents 0.24).

```python
gate = DoneGate("task.yaml")
result = Runner.run_sync(gate.wrap(agent), prompt)   # raises donegate.Escalated on giving up
gate.certificate                                     # the signed certificate's path
```

The SDK's final-output rule is "text output with the desired type, and no tool calls", with no
finish-reason check, and its output guardrails can halt a run but not continue it. `wrap`
returns a clone of the agent with three changes:

1. **The finish tool**, ``task_complete`` (as ``donegate run`` offers it). Calling it is a
   claim: the tool runs the task's checks (`HostGate.claim`) and returns what they found, so a
   failed claim's tool result names the failures the model must fix.
2. **A ``tool_use_behavior`` function** reading that verdict: accepted ->
   ``ToolsToFinalOutputResult(is_final_output=True)`` with the summary as the final output;
   failed -> ``is_final_output=False``, so the model runs again with the failures as the tool's
   result; given up -> `Escalated`.
3. **A model wrapper** (`GatedModel`), because ``tool_use_behavior`` sees only tool turns. It
   classifies each response before the SDK does: a refusal escalates at once (the same model is
   not asked again); a text answer without the finish tool, an empty turn, or a turn cut at the
   output limit (the Responses API's ``incomplete``, which the SDK raises as a
   ``ModelBehaviorError``) is never the final output: the wrapper asks the model again with the
   nudge, counted against ``max_continuations``, and escalates when they are spent.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from donegate.errors import Escalated, MissingExtra
from donegate.integrations._gate import (
    FINISH_DESCRIPTION,
    FINISH_TOOL,
    Decision,
    FrameworkGate,
    HostGate,
    assistant_turn,
)
from donegate.messages import Ending, ToolCall, Turn

try:
    from agents import Agent, FunctionTool, ModelBehaviorError, RunContextWrapper
    from agents.agent import ToolsToFinalOutputResult
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.models.openai_provider import OpenAIProvider
    from agents.tool import FunctionToolResult
    from agents.version import __version__ as agents_version
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputRefusal,
        ResponseOutputText,
    )
except ImportError:  # pragma: no cover - the extra is missing
    raise MissingExtra("openai-agents", "openai-agents") from None

__all__ = ["DoneGate", "GatedModel", "OpenAIAgentsGate", "response_turn"]

HOST = "openai-agents"
TEXT_NUDGE = (
    f"A text answer does not finish this task. Keep working; call {FINISH_TOOL} when the whole "
    "task is finished."
)
_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string", "description": "What was done."}},
    "required": ["summary"],
    "additionalProperties": False,
}


def response_turn(response: ModelResponse, model: str | None = None) -> Turn:
    """A donegate `Turn` from the Agents SDK's `ModelResponse` (Responses-format output items)."""
    text, refusal, calls = "", "", []
    for item in response.output:
        if isinstance(item, ResponseOutputMessage):
            for part in item.content:
                if isinstance(part, ResponseOutputText):
                    text += part.text
                elif isinstance(part, ResponseOutputRefusal):
                    refusal += part.refusal
        elif isinstance(item, ResponseFunctionToolCall):
            calls.append(
                ToolCall.from_raw(id=item.call_id, name=item.name, arguments_raw=item.arguments)
            )
    if refusal:
        ending = Ending.REFUSED
    elif calls:
        ending = Ending.TOOL_USE
    elif text.strip():
        ending = Ending.COMPLETE
    else:
        ending = Ending.EMPTY
    raw = "refusal" if refusal else "function_call" if calls else "completed"
    return assistant_turn(
        text=text,
        calls=tuple(calls),
        refusal=refusal or None,
        ending=ending,
        raw_reason=raw,
        model=model,
        api="openai-agents",
    )


class GatedModel(Model):
    """Wraps the agent's model: no text answer, refusal, empty or cut turn reaches the SDK as
    a final output (step 3 of the module docstring)."""

    def __init__(self, inner: Model, gate: HostGate, *, name: str | None = None) -> None:
        self.inner = inner
        self.gate = gate
        self.name = name
        self.last: Turn | None = None
        """The last turn the model gave (the finish call's claim is judged on it)."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> Any:
        """Ask the inner model until it answers with tool calls (or the gate gives up)."""
        extra: list[Any] = []
        while True:
            items: list[Any] = (
                [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
            )
            try:
                response = await self.inner.get_response(
                    system_instructions, items + extra, *args, **kw
                )
            except ModelBehaviorError as exc:
                if "incomplete" not in str(exc) and "length" not in str(exc):
                    raise
                ending = Ending.FILTERED if "content_filter" in str(exc) else Ending.TRUNCATED
                turn = assistant_turn(ending=ending, raw_reason=str(exc)[:200])
                decision = await asyncio.to_thread(self.gate.observe, turn)
                extra.append({"role": "user", "content": decision.message})
                continue
            turn = response_turn(response, self.name)
            self.last = turn
            decision = await asyncio.to_thread(self._observe, turn)
            if decision.action == "proceed":
                return response
            extra.extend(
                [*response.to_input_items(), {"role": "user", "content": decision.message}]
            )

    def _observe(self, turn: Turn) -> Decision:
        return self.gate.observe(turn, text_nudge=TEXT_NUDGE)

    def stream_response(self, *args: Any, **kw: Any) -> Any:
        """Streaming is not gated: refuse it rather than let an ungated answer through."""
        raise NotImplementedError(
            "donegate's Agents SDK gate supports Runner.run and Runner.run_sync, not streaming"
        )

    async def close(self) -> None:
        """Close the inner model."""
        await self.inner.close()


class OpenAIAgentsGate(FrameworkGate):
    """The task file's completion gate for the Agents SDK (exported as `DoneGate`)."""

    host = HOST
    host_version = agents_version
    _model: GatedModel | None = None
    _verdict: Decision | Escalated | None = None

    def wrap(self, agent: Agent[Any]) -> Agent[Any]:
        """A clone of `agent` with the finish tool, the gate's ``tool_use_behavior`` and its
        model wrapped; each `wrap` starts a fresh run of the gate."""
        self.gate.start()
        self._verdict = None
        inner = agent.model
        if not isinstance(inner, Model):  # a name, or the SDK's default: its OpenAI provider
            inner = OpenAIProvider().get_model(inner)
        name = agent.model if isinstance(agent.model, str) else getattr(inner, "model", None)
        self._model = GatedModel(inner, self.gate, name=name if isinstance(name, str) else None)
        finish = FunctionTool(
            name=FINISH_TOOL,
            description=FINISH_DESCRIPTION,
            params_json_schema=_SCHEMA,
            on_invoke_tool=self._finish,
        )
        note = self.gate.system_note
        instructions = agent.instructions
        if note and (instructions is None or isinstance(instructions, str)):
            instructions = f"{instructions}\n\n{note}" if instructions else note
        return agent.clone(
            model=self._model,
            tools=[*agent.tools, finish],
            tool_use_behavior=self._behavior,
            instructions=instructions,
        )

    async def _finish(self, ctx: Any, arguments: str) -> str:
        """The finish tool: run the checks on the claim; say what they found."""
        try:
            claimed = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            claimed = {"summary": arguments}
        last = self._model.last if self._model is not None else None
        turn = last or assistant_turn(ending=Ending.TOOL_USE)
        try:
            decision = await asyncio.to_thread(self.gate.claim, turn, claimed)
        except Escalated as exc:
            self._verdict = exc
            return f"Escalated to a person: {exc.reason}"
        self._verdict = decision
        if decision.action == "accept":
            return "Accepted: every acceptance check passed."
        return decision.message or "Not done yet."

    def _behavior(
        self, ctx: RunContextWrapper[Any], results: list[FunctionToolResult]
    ) -> ToolsToFinalOutputResult:
        """Final only when the finish call was accepted (step 2 of the module docstring)."""
        finish = [r for r in results if r.tool.name == FINISH_TOOL]
        verdict, self._verdict = self._verdict, None
        if not finish or verdict is None:
            return ToolsToFinalOutputResult(is_final_output=False)
        if isinstance(verdict, Escalated):
            raise verdict
        if verdict.action == "accept":
            last = self._model.last if self._model is not None else None
            summary = _summary(last)
            return ToolsToFinalOutputResult(is_final_output=True, final_output=summary)
        return ToolsToFinalOutputResult(is_final_output=False)


def _summary(turn: Turn | None) -> str:
    """The accepted finish call's ``summary``."""
    for call in turn.tool_calls if turn is not None else ():
        if call.name == FINISH_TOOL and call.arguments is not None:
            return str(call.arguments.get("summary", ""))
    return ""


DoneGate = OpenAIAgentsGate
"""The name the issue and the docs use: ``donegate.integrations.openai_agents.DoneGate``."""
