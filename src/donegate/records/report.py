"""The escalation report as a typed, frozen value, and its versioned JSON form.

Reports are written by the harness (`donegate.harness.escalation.build_report`), by the agent
CLI hooks (with their session in ``state``), by the worker (``outcome_unknown``) and, short, by
the store for a task whose workers kept dying (``attempts``); the store keeps them as JSON and
gives them back through `EscalationReport.from_data`. Every field therefore has a default, and
`as_data` gives exactly the keys a report was built or read with (`exclude_unset`): the JSON
form of version 1 stays what it was. Keys no field names (a newer writer's) are kept as they
were (``extra="allow"``), so a report read and written again loses nothing.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import pydantic

__all__ = [
    "REPORT_KIND",
    "REPORT_VERSION",
    "Attempted",
    "Claim",
    "EscalationReport",
    "Left",
    "OutcomeUnknown",
    "ReportCheck",
    "ReportFiles",
    "ReportFlag",
    "ReportItem",
    "ReportState",
    "ReviewRequest",
    "VerifierNote",
]

REPORT_KIND: Final = "donegate.escalation"
REPORT_VERSION: Final = 1


class _Part(pydantic.BaseModel):
    """A frozen part of a report; keys it does not name are kept, not refused."""

    model_config = pydantic.ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    def as_data(self) -> dict[str, Any]:
        """The JSON form: the keys it was built or read with, nothing added."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


class ReportCheck(_Part):
    """A check result as reported (its output cut to the tail)."""

    name: str = ""
    kind: str = ""
    passed: bool = False
    detail: str = ""
    command: str | None = None
    exit_code: int | None = None
    output_digest: str = ""
    output_tail: str = ""


class Attempted(_Part):
    """One tool call the harness answered."""

    index: int = 0
    step: int = 0
    tool: str = ""
    arguments: dict[str, Any] = pydantic.Field(default_factory=dict)
    executed: bool = True
    is_error: bool = False
    idempotency_key: str | None = None
    output_digest: str = ""
    output_tail: str = ""


class ReportItem(_Part):
    """One checklist (or agent todo) item."""

    item: str = ""
    status: str = ""
    note: str | None = None
    since_step: int | None = None
    updated_step: int | None = None
    added_by_model: bool | None = None


class Left(_Part):
    """What is left: the open items and the failed checks."""

    open_items: tuple[ReportItem, ...] = ()
    failed_checks: tuple[ReportCheck, ...] = ()


class ReportFlag(_Part):
    """A checklist item marked done with no evidence behind it."""

    item: str = ""
    why: str = ""


class VerifierNote(_Part):
    """The verifier's answer to one claim."""

    complete: bool = False
    reason: str = ""


class Claim(_Part):
    """One claim of completion and the gate's judgement of it (``why_stuck``)."""

    round: int | None = None
    step: int | str | None = None
    """The model call (the harness), or the hook event (an agent CLI)."""
    via: str | None = None
    claim: str | None = None
    problems: tuple[str, ...] = ()
    failed_checks: tuple[str, ...] = ()
    unfinished: tuple[str, ...] = ()
    flagged: tuple[ReportFlag, ...] = ()
    verifier: VerifierNote | None = None
    todos: tuple[dict[str, Any], ...] = ()
    """An agent CLI's todo items at the stop."""
    error: str | None = None
    """The hook's own error in this round."""
    verdict: str = ""
    """``continue``, ``stop`` or ``escalate``."""


class OutcomeUnknown(_Part):
    """A side effect that may or may not have happened (a run died between begin and end)."""

    key: str = ""
    tool: str = ""
    arguments: Any = None
    call: str = ""
    why: str = ""
    attempt: int = 0


class ReportState(_Part):
    """The full state, to resume or judge the task."""

    checklist: tuple[ReportItem, ...] = ()
    checks: tuple[ReportCheck, ...] = ()
    transcript: tuple[Any, ...] | dict[str, Any] = ()
    """The messages (the harness) or a pointer to the agent CLI's transcript (path, digest)."""
    last_text: str | None = None
    workdir: str | None = None
    agent: str | None = None
    session_id: str | None = None
    subagent_id: str | None = None
    task_path: str | None = None
    cwd: str | None = None
    last_claim: str | None = None
    errors: tuple[str, ...] = ()
    hook_state: str | None = None
    outcome_unknown: OutcomeUnknown | None = None


class ReviewRequest(_Part):
    """What a review asks a person to approve."""

    certificate: str = ""
    """The path of the certificate awaiting review."""


class ReportFiles(_Part):
    """Where the report was written."""

    json_path: str = pydantic.Field(default="", alias="json")
    markdown: str = ""


class EscalationReport(_Part):
    """A stuck task handed to a person (or a passing one awaiting review), with its state."""

    kind: Literal["donegate.escalation"] = REPORT_KIND
    version: Literal[1] = REPORT_VERSION
    task_id: str = ""
    created_at: float = 0.0
    reason: str = ""
    prompt: str = ""
    completion_condition: str = ""
    continuations: int = 0
    max_continuations: int = 0
    model_calls: int = 0
    attempts: int | None = None
    """How many times the task's workers were lost (the store's short report)."""
    attempted: tuple[Attempted, ...] = ()
    left: Left = Left()
    why_stuck: tuple[Claim, ...] = ()
    state: ReportState = ReportState()
    review: ReviewRequest | None = None
    """Set on a request for review (``closure: human``)."""
    files: ReportFiles | None = None
    """Where the report was written (not in the written file itself)."""
    outcome_unknown: OutcomeUnknown | None = None
    """The call whose effect is unknown (the worker's report)."""
    spend: dict[str, Any] | None = None
    """What the task's model calls spent (`donegate.results.Spend.as_data`: totals, and a line
    per model and role), when it was metered."""

    @classmethod
    def from_data(cls, data: Any) -> EscalationReport:
        """A report from its JSON form, read leniently: a part that does not fit is left out
        (and a value that is not a report reads as an empty one), since a queue must still show
        the entry."""
        if not isinstance(data, dict):
            return cls()
        for _ in range(3):  # drop the top-level keys that do not fit, then try again
            try:
                return cls.model_validate(data)
            except pydantic.ValidationError as exc:
                bad = {e["loc"][0] for e in exc.errors() if e["loc"]}
                data = {k: v for k, v in data.items() if k not in bad}
        return cls()

    def with_files(self, json_path: str, markdown: str) -> EscalationReport:
        """This report, noting where it was written."""
        files = ReportFiles.model_validate({"json": json_path, "markdown": markdown})
        return self.model_copy(update={"files": files})
