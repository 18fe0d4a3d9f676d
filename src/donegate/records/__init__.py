"""One typed record per fact, below the harness and the store.

Every layer that carries a fact names its type from here, so a fact has one shape: the harness
builds these records, the store keeps them, the CLI, the server and the hooks show them.
```
status       every status vocabulary (run, task, item, escalation, outbox, effect)
task         what a task id may be
check        a check's result
checklist    a checklist item and an update to it
evidence     an answered tool call with its digests
judgement    what the gate saw at a claim
certificate  the certificate (embeds the records above) and reading one from a file
report       the escalation report
```
This package imports nothing above `errors`, `messages`, `results` and `codec` (layer 0, with
them): the store and the hooks' state read it without loading the harness. Import the modules
(`donegate.records.status`), not this package: it re-exports nothing, so importing one record
loads only its module.
"""

__all__: list[str] = []
