"""Escalation reports: a stuck task handed to a human with its whole state, in JSON and Markdown.

A report answers four questions: what was attempted (every tool call the harness recorded), what
is left (open checklist items, failed checks), why it is stuck (the gate's reasons, claim by
claim), and the full state (checklist, transcript) so the task can be resumed or judged.

The same report, with a ``review`` section naming the certificate to approve, asks a person to
review a ``closure: human`` task whose claim passed every gate.

A report is a typed, frozen `EscalationReport` (`donegate.records.report`) whose JSON form
(``kind: donegate.escalation``, ``version: 1``) is what the files, the store's review queue and
the JSON API hold; `EscalationReport.as_data` gives exactly the keys it was built or read with.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from donegate.codec import messages_to_json
from donegate.harness.gate import GateRound
from donegate.records.check import CheckResult
from donegate.records.evidence import EvidenceRecord
from donegate.records.report import (
    REPORT_KIND,
    REPORT_VERSION,
    Attempted,
    Claim,
    EscalationReport,
    Left,
    OutcomeUnknown,
    ReportCheck,
    ReportFlag,
    ReportItem,
    ReportState,
    ReviewRequest,
    VerifierNote,
)
from donegate.results import Spend

__all__ = [
    "build_report",
    "check_data",
    "render_markdown",
    "round_data",
    "write_report",
]

OUTPUT_TAIL = 2000
"""Characters of each tool output kept in the attempted list (the transcript keeps all)."""


def check_data(check: CheckResult) -> ReportCheck:
    """A check result as reported (output cut to its tail)."""
    return ReportCheck(
        name=check.name,
        kind=check.kind,
        passed=check.passed,
        detail=check.detail,
        command=check.command,
        exit_code=check.exit_code,
        output_digest=check.output_digest,
        output_tail=check.output[-OUTPUT_TAIL:],
    )


def round_data(round_: GateRound) -> Claim:
    """One gate judgement as reported."""
    return Claim(
        round=round_.number,
        step=round_.step,
        via=round_.via,
        claim=round_.claim,
        problems=tuple(round_.problems),
        failed_checks=tuple(c.name for c in round_.checks if not c.passed),
        unfinished=tuple(round_.unfinished),
        flagged=tuple(ReportFlag(item=i, why=w) for i, w in round_.flagged),
        verifier=None
        if round_.verifier is None
        else VerifierNote(complete=round_.verifier.complete, reason=round_.verifier.reason),
        verdict=round_.verdict.action,
    )


def build_report(
    *,
    task_id: str,
    reason: str,
    prompt: str = "",
    completion_condition: str = "",
    continuations: int = 0,
    max_continuations: int = 0,
    model_calls: int = 0,
    attempted: Sequence[EvidenceRecord] = (),
    checklist: Sequence[Mapping[str, Any]] = (),
    checks: Sequence[CheckResult] = (),
    rounds: Sequence[Claim] = (),
    transcript: Any = (),
    extra: Mapping[str, Any] | None = None,
    review: ReviewRequest | None = None,
    outcome_unknown: OutcomeUnknown | None = None,
    spend: Spend | None = None,
) -> EscalationReport:
    """The report; `review` (the certificate to approve) makes it a request for review rather
    than an escalation. `extra` adds to ``state`` (the hook's session, the last text)."""
    items = tuple(ReportItem.model_validate(dict(i)) for i in checklist)
    state = ReportState.model_validate(
        {
            "checklist": items,
            "checks": tuple(check_data(c) for c in checks),
            "transcript": messages_to_json(transcript),
            **(dict(extra) if extra else {}),
        }
    )
    fields: dict[str, Any] = {}
    if review is not None:
        fields["review"] = review
    if outcome_unknown is not None:
        fields["outcome_unknown"] = outcome_unknown
    if spend is not None and spend.lines:
        fields["spend"] = spend.as_data()
    return EscalationReport(
        kind=REPORT_KIND,
        version=REPORT_VERSION,
        task_id=task_id,
        created_at=time.time(),
        reason=reason,
        prompt=prompt,
        completion_condition=completion_condition,
        continuations=continuations,
        max_continuations=max_continuations,
        model_calls=model_calls,
        attempted=tuple(
            Attempted(
                index=r.index,
                step=r.step,
                tool=r.tool,
                arguments=dict(r.arguments),
                executed=r.executed,
                is_error=r.is_error,
                idempotency_key=r.idempotency_key,
                output_digest=r.output_digest,
                output_tail=r.output[-OUTPUT_TAIL:],
            )
            for r in attempted
        ),
        left=Left(
            open_items=tuple(i for i in items if i.status != "done"),
            failed_checks=tuple(check_data(c) for c in checks if not c.passed),
        ),
        why_stuck=tuple(rounds),
        state=state,
        **fields,
    )


def render_markdown(report: EscalationReport) -> str:
    """The report for a person to read."""
    review = report.review
    title = "Awaiting review" if review else "Escalated"
    lines = [
        f"# {title}: {report.task_id}",
        "",
        f"**Why:** {report.reason}",
        "",
        f"Continuations: {report.continuations} of {report.max_continuations}; "
        f"model calls: {report.model_calls}.",
    ]
    if report.completion_condition:
        lines += ["", f"**Completion condition:** {report.completion_condition}"]
    if review is not None:
        lines += [
            "",
            "Every gate passed; the task closes when a person approves it "
            "(`donegate escalations approve`).",
            f"Certificate to approve: `{review.certificate}`",
        ]
    if report.spend:
        spent = Spend.from_data(report.spend)
        lines += ["", "## Spend", spent.render()]
    lines += ["", "## What is left"]
    left = report.left
    if not left.open_items and not left.failed_checks:
        lines.append("- (no open items or failed checks; see why it is stuck)")
    for item in left.open_items:
        note = f" ({item.note})" if item.note else ""
        lines.append(f"- [ ] {item.item}: {item.status}{note}")
    for check in left.failed_checks:
        lines.append(f"- check failed: `{check.name}`: {check.detail}")
    lines += ["", "## Why it is stuck"]
    if not report.why_stuck:
        lines.append("- (no claim of completion was judged)")
    for r in report.why_stuck:
        claim = _short(r.claim or "")
        step = "?" if r.step is None else r.step
        lines.append(f"{r.round}. step {step}: claimed {claim!r}")
        lines.extend(f"   - {p}" for p in r.problems)
        lines.append(f"   - gate: {r.verdict}")
    lines += ["", "## What was attempted"]
    if not report.attempted:
        lines.append("- (no tool calls)")
    for a in report.attempted:
        state = "not run" if not a.executed else "error" if a.is_error else "ok"
        args = _short(json.dumps(a.arguments, ensure_ascii=False), 100)
        lines.append(f"- step {a.step}: `{a.tool}` {args} [{state}]")
    checklist = report.state.checklist
    if checklist:
        lines += ["", "## Checklist"]
        marks = {"done": "[x]", "open": "[ ]", "blocked": "[!]"}
        for item in checklist:
            note = f" - {item.note}" if item.note else ""
            lines.append(f"- {marks.get(item.status, '[?]')} {item.item}{note}")
    lines += ["", "The full transcript is in the JSON report (`state.transcript`).", ""]
    return "\n".join(lines)


def write_report(report: EscalationReport, directory: Path) -> tuple[Path, Path]:
    """Write ``<task>-<time>.json`` and ``.md`` under `directory`; return both paths."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{_safe(report.task_id)}-{time.strftime('%Y%m%dT%H%M%S')}"
    json_path = _unique(directory / f"{stem}.json")
    md_path = json_path.with_suffix(".md")
    text = json.dumps(report.as_data(), indent=2, ensure_ascii=False, default=str)
    json_path.write_text(text + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(report), encoding="utf-8")
    return json_path, md_path


def _unique(path: Path) -> Path:
    n = 1
    candidate = path
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "task"


def _short(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
