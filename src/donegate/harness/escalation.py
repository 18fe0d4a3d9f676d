"""Escalation reports: a stuck task handed to a human with its whole state, in JSON and Markdown.

A report answers four questions: what was attempted (every tool call the harness recorded), what
is left (open checklist items, failed checks), why it is stuck (the gate's reasons, claim by
claim), and the full state (checklist, transcript) so the task can be resumed or judged.

The same report, with a ``review`` section naming the certificate to approve, asks a person to
review a ``closure: human`` task whose claim passed every gate.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from donegate.codec import messages_to_json
from donegate.harness.checks import CheckResult
from donegate.harness.evidence import EvidenceRecord
from donegate.harness.gate import GateRound

__all__ = [
    "build_report",
    "check_data",
    "render_markdown",
    "round_data",
    "write_report",
]

OUTPUT_TAIL = 2000
"""Characters of each tool output kept in the attempted list (the transcript keeps all)."""


def check_data(check: CheckResult) -> dict[str, Any]:
    """A check result as plain values (output cut to its tail)."""
    return {
        "name": check.name,
        "kind": check.kind,
        "passed": check.passed,
        "detail": check.detail,
        "command": check.command,
        "exit_code": check.exit_code,
        "output_digest": check.output_digest,
        "output_tail": check.output[-OUTPUT_TAIL:],
    }


def round_data(round_: GateRound) -> dict[str, Any]:
    """One gate judgement as plain values."""
    return {
        "round": round_.number,
        "step": round_.step,
        "via": round_.via,
        "claim": round_.claim,
        "problems": list(round_.problems),
        "failed_checks": [c.name for c in round_.checks if not c.passed],
        "unfinished": list(round_.unfinished),
        "flagged": [{"item": i, "why": w} for i, w in round_.flagged],
        "verifier": None
        if round_.verifier is None
        else {"complete": round_.verifier.complete, "reason": round_.verifier.reason},
        "verdict": round_.verdict.action,
    }


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
    rounds: Sequence[Mapping[str, Any]] = (),
    transcript: Any = (),
    extra: Mapping[str, Any] | None = None,
    review: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The report as plain JSON-ready values; `review` (the certificate to approve) makes it a
    request for review rather than an escalation."""
    open_items = [dict(i) for i in checklist if i.get("status") != "done"]
    report: dict[str, Any] = {
        "kind": "donegate.escalation",
        "version": 1,
        "task_id": task_id,
        "created_at": time.time(),
        "reason": reason,
        "prompt": prompt,
        "completion_condition": completion_condition,
        "continuations": continuations,
        "max_continuations": max_continuations,
        "model_calls": model_calls,
        "attempted": [
            {
                "index": r.index,
                "step": r.step,
                "tool": r.tool,
                "arguments": dict(r.arguments),
                "executed": r.executed,
                "is_error": r.is_error,
                "idempotency_key": r.idempotency_key,
                "output_digest": r.output_digest,
                "output_tail": r.output[-OUTPUT_TAIL:],
            }
            for r in attempted
        ],
        "left": {
            "open_items": open_items,
            "failed_checks": [check_data(c) for c in checks if not c.passed],
        },
        "why_stuck": [dict(r) for r in rounds],
        "state": {
            "checklist": [dict(i) for i in checklist],
            "checks": [check_data(c) for c in checks],
            "transcript": messages_to_json(transcript),
            **(dict(extra) if extra else {}),
        },
    }
    if review is not None:
        report["review"] = dict(review)
    return report


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report for a person to read."""
    review = report.get("review")
    title = "Awaiting review" if review else "Escalated"
    lines = [
        f"# {title}: {report['task_id']}",
        "",
        f"**Why:** {report['reason']}",
        "",
        f"Continuations: {report['continuations']} of {report['max_continuations']}; "
        f"model calls: {report['model_calls']}.",
    ]
    if report.get("completion_condition"):
        lines += ["", f"**Completion condition:** {report['completion_condition']}"]
    if isinstance(review, Mapping):
        lines += [
            "",
            "Every gate passed; the task closes when a person approves it "
            "(`donegate escalations approve`).",
            f"Certificate to approve: `{review.get('certificate')}`",
        ]
    lines += ["", "## What is left"]
    left = report["left"]
    if not left["open_items"] and not left["failed_checks"]:
        lines.append("- (no open items or failed checks; see why it is stuck)")
    for item in left["open_items"]:
        note = f" ({item.get('note')})" if item.get("note") else ""
        lines.append(f"- [ ] {item['item']}: {item['status']}{note}")
    for check in left["failed_checks"]:
        lines.append(f"- check failed: `{check['name']}`: {check['detail']}")
    lines += ["", "## Why it is stuck"]
    if not report["why_stuck"]:
        lines.append("- (no claim of completion was judged)")
    for r in report["why_stuck"]:
        claim = _short(r.get("claim") or "")
        lines.append(f"{r['round']}. step {r.get('step', '?')}: claimed {claim!r}")
        lines.extend(f"   - {p}" for p in r.get("problems", []))
        lines.append(f"   - gate: {r['verdict']}")
    lines += ["", "## What was attempted"]
    if not report["attempted"]:
        lines.append("- (no tool calls)")
    for a in report["attempted"]:
        state = "not run" if not a["executed"] else "error" if a["is_error"] else "ok"
        args = _short(json.dumps(a["arguments"], ensure_ascii=False), 100)
        lines.append(f"- step {a['step']}: `{a['tool']}` {args} [{state}]")
    checklist = report["state"]["checklist"]
    if checklist:
        lines += ["", "## Checklist"]
        marks = {"done": "[x]", "open": "[ ]", "blocked": "[!]"}
        for item in checklist:
            note = f" - {item['note']}" if item.get("note") else ""
            lines.append(f"- {marks.get(item['status'], '[?]')} {item['item']}{note}")
    lines += ["", "The full transcript is in the JSON report (`state.transcript`).", ""]
    return "\n".join(lines)


def write_report(report: Mapping[str, Any], directory: Path) -> tuple[Path, Path]:
    """Write ``<task>-<time>.json`` and ``.md`` under `directory`; return both paths."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{_safe(str(report['task_id']))}-{time.strftime('%Y%m%dT%H%M%S')}"
    json_path = _unique(directory / f"{stem}.json")
    md_path = json_path.with_suffix(".md")
    json_path.write_text(
        json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )
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
