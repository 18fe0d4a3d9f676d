"""The completion gate inside the agent frameworks people already use.

Each module plugs a task file's gate into one framework, behind its own extra, and imports that
framework (``import donegate`` imports none of them):

- `donegate.integrations.pydantic_ai`: ``DoneGate(task)``, a capability
  (``pip install "donegate[pydantic-ai]"``);
- `donegate.integrations.openai_agents`: ``DoneGate(task).wrap(agent)``, the Agents SDK's
  finish tool and ``tool_use_behavior`` (``donegate[openai-agents]``);
- `donegate.integrations.langchain`: ``DoneGateMiddleware(task)``, a ``create_agent``
  middleware (``donegate[langchain]``).

Every one has the same face: a gate made from the task file; after a run it accepted,
``gate.certificate`` is the signed certificate's path; when it gives up it raises
`donegate.Escalated`, whose ``report`` is the escalation report's path. See
docs/integrations.md.
"""

__all__: list[str] = []
