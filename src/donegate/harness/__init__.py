"""The completion gate: task specs, acceptance checks, checklist, evidence, verifier, runner.

`run_task` runs a task's agent loop behind the gate and ends ``done`` (with a certificate),
``escalated`` (with a report) or ``failed`` (with the loop's reason).
"""

import typing as _typing

if _typing.TYPE_CHECKING:
    from donegate.harness.certificate import verify_certificate
    from donegate.harness.checklist import Checklist
    from donegate.harness.checks import run_check, run_checks
    from donegate.harness.evidence import Evidence
    from donegate.harness.gate import CompletionGate, GateRound
    from donegate.harness.runner import TaskResult, arun_task, run_task
    from donegate.harness.spec import TaskSpec, TaskSpecError, load_task
    from donegate.harness.verifier import Verifier, VerifierAnswer
    from donegate.records.check import CheckResult
    from donegate.records.checklist import ChecklistItem
    from donegate.records.evidence import EvidenceRecord

__all__ = [
    "CheckResult",
    "Checklist",
    "ChecklistItem",
    "CompletionGate",
    "Evidence",
    "EvidenceRecord",
    "GateRound",
    "TaskResult",
    "TaskSpec",
    "TaskSpecError",
    "Verifier",
    "VerifierAnswer",
    "arun_task",
    "load_task",
    "run_check",
    "run_checks",
    "run_task",
    "verify_certificate",
]

_LAZY = {
    "CheckResult": "donegate.records.check",
    "Checklist": "donegate.harness.checklist",
    "ChecklistItem": "donegate.records.checklist",
    "CompletionGate": "donegate.harness.gate",
    "Evidence": "donegate.harness.evidence",
    "EvidenceRecord": "donegate.records.evidence",
    "GateRound": "donegate.harness.gate",
    "TaskResult": "donegate.harness.runner",
    "TaskSpec": "donegate.harness.spec",
    "TaskSpecError": "donegate.harness.spec",
    "Verifier": "donegate.harness.verifier",
    "VerifierAnswer": "donegate.harness.verifier",
    "arun_task": "donegate.harness.runner",
    "load_task": "donegate.harness.spec",
    "run_check": "donegate.harness.checks",
    "run_checks": "donegate.harness.checks",
    "run_task": "donegate.harness.runner",
    "verify_certificate": "donegate.harness.certificate",
}
"""Each name's module, imported when the name is first used: importing one part of the gate
(``donegate.harness.agents`` for a hook, ``donegate.harness.spec`` for a task file) does not
load every other part (the runner, the certificate's proof, the verifier)."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        value: object = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'donegate.harness' has no attribute {name!r}")
