"""The verifier: a separate (usually smaller) model that compares a claim with the evidence.

It is given the completion condition, the worker's claim, the tool calls the harness recorded
(never the worker's account of them) and the checklist items ticked without evidence, and
answers through a ``report_verdict`` tool ``{complete: bool, reason: str}`` (or, failing that,
a JSON object in its text). Anything else (no answer, a provider error) counts as *not
complete*: the gate fails closed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from donegate.models.base import Model
from donegate.results import RunResult

if TYPE_CHECKING:
    from donegate.spend import Meter

__all__ = [
    "VERDICT_SCHEMA",
    "VERDICT_TOOL",
    "Verifier",
    "VerifierAnswer",
    "build_prompt",
    "parse_answer",
]

VERDICT_TOOL = "report_verdict"
"""The finish tool the verifier answers with."""

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "complete": {
            "type": "boolean",
            "description": "True only if the evidence shows the completion condition is met.",
        },
        "reason": {
            "type": "string",
            "description": "One or two sentences: what the evidence shows, or what is missing.",
        },
    },
    "required": ["complete", "reason"],
    "additionalProperties": False,
}

SYSTEM = (
    "You check whether an agent's task is really complete. You see the completion condition, "
    "the agent's claim, and the tool calls the harness itself recorded with their raw outputs. "
    "Judge only from the recorded evidence: a claim the evidence does not show (tests said to "
    "pass with no test run recorded, files said to exist that were never written) is not "
    "complete. Checklist items listed as ticked without evidence deserve particular doubt. "
    f"Answer by calling {VERDICT_TOOL} once."
)


@dataclass(frozen=True, kw_only=True, slots=True)
class VerifierAnswer:
    """What the verifier decided."""

    complete: bool
    """True when the verifier found the condition met."""
    reason: str
    """Its reason, sent back to the worker when it says not complete."""
    model_calls: int = 0
    """Calls the verifier model took."""
    prompt: str = ""
    """The input it was given (kept for reports and tests)."""


class Verifier:
    """Asks `model` whether a claim meets the completion condition, given the evidence."""

    def __init__(self, model: Model, *, max_steps: int = 3, meter: Meter | None = None) -> None:
        self.model = model
        """The verifier model; any `Model` (a scripted one in tests)."""
        self.max_steps = max_steps
        """Calls allowed per check (an invalid verdict is fed back)."""
        self.calls = 0
        """Model calls made so far, over every check."""
        self.meter = meter
        """The task budget's ``verifier`` view: its calls count against the task's budget."""

    def check(
        self,
        *,
        condition: str,
        claim: str,
        evidence: str,
        checklist: str = "",
        flagged: Sequence[tuple[str, str]] = (),
    ) -> VerifierAnswer:
        """Ask once; an unusable answer is `complete=False` with the reason why."""
        prompt = build_prompt(
            condition=condition,
            claim=claim,
            evidence=evidence,
            checklist=checklist,
            flagged=flagged,
        )
        from donegate.run import run  # the loop loads when a verifier asks, not with the gate

        result = run(
            prompt,
            model=self.model,
            system=SYSTEM,
            finish_tool=VERDICT_SCHEMA,
            finish_tool_name=VERDICT_TOOL,
            max_steps=self.max_steps,
            run_id="verifier",
            meter=self.meter,
        )
        self.calls += result.model_calls
        complete, reason = _read(result)
        return VerifierAnswer(
            complete=complete, reason=reason, model_calls=result.model_calls, prompt=prompt
        )


def build_prompt(
    *,
    condition: str,
    claim: str,
    evidence: str,
    checklist: str = "",
    flagged: Sequence[tuple[str, str]] = (),
) -> str:
    """The verifier's user message."""
    parts = [
        f"## Completion condition\n{condition or '(none stated: judge from the task claim)'}",
        f"## The agent's claim\n{claim or '(no text)'}",
        f"## Tool calls recorded by the harness\n{evidence}",
    ]
    if checklist:
        parts.append(f"## Checklist\n{checklist}")
    if flagged:
        lines = "\n".join(f"- {item}: {why}" for item, why in flagged)
        parts.append(f"## Checklist items ticked without supporting evidence\n{lines}")
    return "\n\n".join(parts)


def _read(result: RunResult) -> tuple[bool, str]:
    if result.complete and isinstance(result.output, dict):
        return bool(result.output["complete"]), str(result.output["reason"])
    if result.complete:
        parsed = parse_answer(result.text)
        if parsed is not None:
            return parsed
        return False, f"the verifier gave no verdict: {_short(result.text)!r}"
    return False, f"the verifier failed ({result.status.value}: {result.reason})"


def parse_answer(text: str) -> tuple[bool, str] | None:
    """``(complete, reason)`` from a JSON object in `text` (fenced or bare), or None."""
    for candidate in re.findall(r"\{.*\}", text, re.DOTALL):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("complete"), bool):
            return value["complete"], str(value.get("reason", ""))
    return None


def _short(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
