"""`DoneGate`: the completion gate as a pydantic-ai capability (pydantic-ai 2.x).

```python
gate = DoneGate("task.yaml")
agent = Agent(model, tools=[...], capabilities=[gate])
agent.run_sync(prompt)          # raises donegate.Escalated when the gate gives up
gate.certificate                # the signed certificate's path
```

pydantic-ai ends a run on any text response without tool calls, a truncated one included, and
its output hooks do not fire for plain text. The gate plugs in where every response passes:

1. ``after_model_request`` classifies each `ModelResponse` from its normalized
   ``finish_reason`` and ``provider_details`` (the raw reason, a refusal) and asks the gate
   (`HostGate.observe`): a refusal or a content filter raises `Escalated` there, before pydantic-ai
   would hand the model the same request again; a text end is judged by the task's checks (run on
   a thread, off the event loop). A tool call cut at the output limit is dropped from the
   response, so pydantic-ai never runs it with repaired arguments.
2. ``after_node_run`` sees the run about to end (`End`): when the gate said continue, it returns
   a new `ModelRequestNode` carrying the nudge instead, so the run goes on. A nudge is a user
   turn, not a `ModelRetry`, so it does not spend the agent's output-retry budget; the gate's
   own budget (``max_continuations``) bounds it.
3. ``wrap_run`` starts the gate afresh for each run (protected-file digests, budget).

Durable execution: the checks run inside ``after_model_request``; under `TemporalDurability` or
`DBOSDurability` that hook is a capability hook the engine can run as a durable operation (an
activity or a step), so a replayed workflow does not run the checks again. See
docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from donegate.errors import MissingExtra
from donegate.integrations._gate import Decision, FrameworkGate, assistant_turn
from donegate.messages import Ending, ToolCall, Turn

try:
    import pydantic_ai
    from pydantic_ai import ModelRequestNode, RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        UserPromptPart,
    )
    from pydantic_graph import End
except ImportError:  # pragma: no cover - the extra is missing
    raise MissingExtra("pydantic-ai-slim", "pydantic-ai") from None

__all__ = ["DoneGate", "PydanticAIGate", "response_turn"]

HOST = "pydantic-ai"

_ENDINGS = {
    "stop": Ending.COMPLETE,
    "length": Ending.TRUNCATED,
    "content_filter": Ending.FILTERED,
    "tool_call": Ending.TOOL_USE,
    "error": Ending.ERROR,
}


def response_turn(response: ModelResponse) -> Turn:
    """A donegate `Turn` from pydantic-ai's `ModelResponse` (its normalized finish reason, the
    raw one in ``provider_details``, and an OpenAI-style ``refusal`` there too)."""
    details = response.provider_details or {}
    raw = details.get("finish_reason") or response.finish_reason
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    calls = tuple(
        ToolCall.from_raw(id=p.tool_call_id, name=p.tool_name, arguments_raw=p.args_as_json_str())
        for p in response.parts
        if isinstance(p, ToolCallPart)
    )
    refusal = details.get("refusal")
    if isinstance(refusal, str) and refusal:
        ending = Ending.REFUSED
    elif calls and response.finish_reason != "length":
        ending = Ending.TOOL_USE
    elif calls:  # arguments cut at the output limit
        ending = Ending.MALFORMED_TOOL_CALL
    else:
        ending = _ENDINGS.get(response.finish_reason or "stop", Ending.COMPLETE)
        blank = ending is Ending.COMPLETE and not text.strip()
        if blank or ending is Ending.TOOL_USE:  # no text, or a tool_call reason with no call
            ending = Ending.EMPTY
    return assistant_turn(
        text=text,
        calls=calls,
        refusal=refusal if isinstance(refusal, str) else None,
        ending=ending,
        raw_reason=str(raw) if raw is not None else None,
        model=response.model_name,
        api=response.provider_name,
    )


class PydanticAIGate(FrameworkGate, AbstractCapability[Any]):
    """The task file's completion gate as a pydantic-ai capability (exported as `DoneGate`)."""

    host = HOST
    host_version = pydantic_ai.__version__
    _decision: Decision | None = None  # the gate's word on the last response
    _last: Turn | None = None  # the last response, as a turn

    def get_instructions(self) -> Any:
        """The gate's note to the model: the completion condition, the checks, protected files."""
        return self._gate.system_note or None

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Any) -> Any:
        """A fresh gate for each run."""
        self._gate.start()
        self._decision, self._last = None, None
        return await handler()

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: Any, response: ModelResponse
    ) -> ModelResponse:
        """Classify the response and let the gate decide (step 1)."""
        turn = response_turn(response)
        self._last = turn
        self._decision = await asyncio.to_thread(self._gate.observe, turn)
        if turn.ending is Ending.MALFORMED_TOOL_CALL:  # never run a call cut mid-arguments
            kept = [p for p in response.parts if not isinstance(p, ToolCallPart)]
            return dataclasses.replace(response, parts=kept)
        return response

    async def after_node_run(self, ctx: RunContext[Any], *, node: Any, result: Any) -> Any:
        """Turn an end the gate did not accept into one more model request (step 2)."""
        if not isinstance(result, End):
            if isinstance(node, ModelRequestNode):
                return result
            self._decision = None  # the framework goes on by itself (tools, its own retry)
            return result
        decision, self._decision = self._decision, None
        proceeding = decision is None or decision.action == "proceed"
        if proceeding and self._last is not None:  # an output tool ended the run: a claim
            output = getattr(result.data, "output", None)
            claimed = {"output": output if isinstance(output, str | int | float) else str(output)}
            decision = await asyncio.to_thread(self._gate.claim, self._last, claimed)
        if decision is not None and decision.action == "continue":
            nudge = UserPromptPart(content=decision.message or "Continue.")
            return ModelRequestNode(ModelRequest(parts=[nudge]))
        return result


DoneGate = PydanticAIGate
"""The name the issue and the docs use: ``donegate.integrations.pydantic_ai.DoneGate``."""
