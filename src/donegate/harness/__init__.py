"""The completion gate: task specs, acceptance checks, checklist, evidence, verifier, runner.

`run_task` runs a task's agent loop behind the gate and ends ``done`` (with a certificate),
``escalated`` (with a report) or ``failed`` (with the loop's reason).
"""

from donegate.harness.certificate import verify_certificate
from donegate.harness.checklist import Checklist, ChecklistItem
from donegate.harness.checks import CheckResult, run_check, run_checks
from donegate.harness.evidence import Evidence, EvidenceRecord
from donegate.harness.gate import CompletionGate, GateRound
from donegate.harness.runner import TaskResult, arun_task, run_task
from donegate.harness.spec import TaskSpec, TaskSpecError, load_task
from donegate.harness.verifier import Verifier, VerifierAnswer

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
