"""The completion gate: a claim of completion is judged in code the model cannot talk past.

At every text-only end of turn, and at every call of a completion tool (never trusted as such),
`CompletionGate.judge`:

1. runs the task's acceptance checks in the workdir (the world, not the model's account), and
   re-digests the protected files before and after them: a file changed, added or deleted
   since the task started fails the claim (``protected file changed: tests/test_calc.py``);
2. asks the verifier, when configured, with the completion condition, the claim, the
   harness-recorded evidence and the checklist items ticked without evidence; it is asked only
   when gates 1 and 3 pass, so a claim the world already refutes costs no verifier call;
3. reads the checklist: open items block completion; when every unfinished item is
   ``blocked`` the model has stated its blocker, and the gate stops at once for a human.

All pass: accept. Otherwise the model is continued with a short nudge naming what is missing;
after `max_continuations` continuations the gate stops and the runner escalates.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from donegate.actions import Verdict
from donegate.harness.checklist import Checklist
from donegate.harness.checks import run_check, run_checks
from donegate.harness.decision import decide
from donegate.harness.evidence import Evidence
from donegate.harness.poison import review_changes
from donegate.harness.protect import Manifest, ProtectError
from donegate.harness.spec import CheckSpec
from donegate.harness.verifier import Verifier, VerifierAnswer
from donegate.messages import Message, Turn
from donegate.records.check import CheckResult
from donegate.records.checklist import TodoItem
from donegate.records.judgement import Judgement

if TYPE_CHECKING:  # imported in `judge`: a hook, which only renders a nudge, never loads the loop
    from donegate.loop import Verdict

__all__ = ["CheckWatcher", "CompletionGate", "GateRound", "protected_results"]

CheckWatcher = Callable[[CheckSpec], AbstractContextManager[object]]
"""Entered around each check while it runs (a live "running check X" line)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class GateRound:
    """One judgement of one claim, kept for the result and the escalation report."""

    number: int
    """1-based count of claims judged in this run."""
    step: int
    """The model call that made the claim."""
    claim: str
    """The claim: the turn's text, or the completion tool's arguments as JSON."""
    via: Literal["text", "completion_tool"]
    """How the model claimed completion."""
    checks: tuple[CheckResult, ...]
    """Gate 1: every check's result."""
    unfinished: tuple[str, ...]
    """Gate 3: checklist items not done, with their state (``blocked: why``)."""
    flagged: tuple[tuple[str, str], ...]
    """Items ticked done without supporting evidence, and why they were flagged."""
    verifier: VerifierAnswer | None
    """Gate 2: the verifier's answer (None when not configured or not reached)."""
    problems: tuple[str, ...]
    """What stands between the claim and done; empty when accepted."""
    verdict: Verdict
    """What the gate told the loop."""


def protected_results(manifest: Manifest | None, *, clear: bool = False) -> tuple[CheckResult, ...]:
    """A failed ``protect`` check result per protected file changed, added or deleted.

    With `clear`, the protected sources' cached bytecode is removed too (before checks run). A
    manifest that cannot be re-digested (or cleared) fails closed, as one result naming why.
    """
    if manifest is None or manifest.empty:
        return ()
    try:
        changes = manifest.changes()
        if clear:
            manifest.clear_bytecode()
    except (ProtectError, OSError) as exc:
        return (
            CheckResult(
                name="protected files", kind="protect", passed=False, detail=f"cannot check: {exc}"
            ),
        )
    return tuple(
        CheckResult(
            name=c.text,
            kind="protect",
            passed=False,
            detail=f"{c.path} was {c.kind} after the task started; protected files may not change",
        )
        for c in changes
    )


class CompletionGate:
    """Implements the loop's `Gate` protocol for one task run."""

    def __init__(
        self,
        *,
        checks: Sequence[CheckSpec],
        workdir: Path,
        checklist: Checklist | None = None,
        evidence: Evidence | None = None,
        verifier: Verifier | None = None,
        completion_condition: str = "",
        max_continuations: int = 3,
        check_timeout: float = 120.0,
        on_round: Callable[[GateRound], None] | None = None,
        protected: Manifest | None = None,
        on_check: CheckWatcher | None = None,
    ) -> None:
        self.checks = tuple(checks)
        self.on_check = on_check
        self.workdir = Path(workdir)
        self.checklist = checklist if checklist is not None else Checklist()
        self.evidence = evidence if evidence is not None else Evidence()
        self.verifier = verifier
        self.completion_condition = completion_condition
        self.max_continuations = max_continuations
        self.check_timeout = check_timeout
        self.on_round = on_round
        self.protected = protected
        """The protected files' digests taken when the task started."""
        self.continuations = 0
        """Continuations granted so far."""
        self.rounds: list[GateRound] = []
        """Every judgement, in order."""

    @property
    def last_checks(self) -> tuple[CheckResult, ...]:
        """The check results of the last judgement (empty before the first)."""
        return self.rounds[-1].checks if self.rounds else ()

    def judge(self, claim: Turn, transcript: Sequence[Message], output: Any) -> Verdict:
        """Run the gates on a claim; accept, continue with a nudge, or stop."""

        via: Literal["text", "completion_tool"] = "text" if output is None else "completion_tool"
        claim_text = claim.text if output is None else _as_text(output)
        before = protected_results(self.protected, clear=True)
        review = review_changes(self.protected, self.checks)  # what the checks will run with
        poisoned = review.results(verifier=self.verifier is not None)
        # all: a report shows each; adjacent run: checks at once, results in declared order
        ran = tuple(
            run_checks(self.checks, self.workdir, runner=self._run, snapshot_of=self._snapshot())
        )
        # after too: a check run (the agent's code under test) may touch protected files
        tampered = tuple({c.name: c for c in before + protected_results(self.protected)}.values())
        checks = tampered + poisoned + ran
        unfinished = self.checklist.unfinished()
        flagged = tuple(self.checklist.unsupported(self.evidence.records))
        failed = [c for c in ran if not c.passed]

        problems: list[str] = []
        if unfinished:
            problems.append(
                "open checklist items: "
                + ", ".join(
                    f"{i.name} (blocked: {i.note})" if i.status == "blocked" else i.name
                    for i in unfinished
                )
            )
        if tampered:
            problems.append(
                ", ".join(c.name for c in tampered)
                + " (protected files must stay as they were when the task started)"
            )
        problems += review.problems(verifier=self.verifier is not None)
        if failed:
            problems.append("failed checks: " + ", ".join(f"{c.name} ({c.detail})" for c in failed))
        if via == "completion_tool" and problems:
            problems.insert(0, "the completion call was not accepted")

        answer: VerifierAnswer | None = None
        if self.verifier is not None and not problems:
            answer = self.verifier.check(
                condition=self.completion_condition,
                claim=claim_text,
                evidence=self.evidence.render() + review.evidence(),
                checklist=self.checklist.render() if self.checklist.items else "",
                flagged=flagged,
            )
            if not answer.complete:
                problems.append(f"verifier: {answer.reason}")

        found = Judgement(
            checks=checks,
            todos=tuple(
                TodoItem(text=i.name, status=i.status, raw_status=i.status, source="checklist")
                for i in unfinished
            ),
            problems=tuple(problems),
        )
        verdict = decide(found, self.continuations, self.max_continuations)
        if verdict.action == "continue":  # the count lives here, in memory
            self.continuations += 1
            self.checklist.nudged()

        record = GateRound(
            number=len(self.rounds) + 1,
            step=self.evidence.step,
            claim=claim_text,
            via=via,
            checks=checks,
            unfinished=tuple(
                f"{i.name} (blocked: {i.note})" if i.status == "blocked" else i.name
                for i in unfinished
            ),
            flagged=flagged,
            verifier=answer,
            problems=tuple(problems),
            verdict=verdict,
        )
        self.rounds.append(record)
        if self.on_round is not None:
            self.on_round(record)
        return verdict

    def _snapshot(self) -> Manifest | None:
        """The start snapshot written over the clean room (the protected files' manifest)."""
        return self.protected if self.protected is not None and not self.protected.empty else None

    def _run(self, check: CheckSpec) -> CheckResult:
        with self.on_check(check) if self.on_check is not None else nullcontext():
            return run_check(check, workdir=self.workdir, timeout=self.check_timeout)


def _as_text(output: Any) -> str:
    if hasattr(output, "model_dump_json"):
        return str(output.model_dump_json())
    return json.dumps(output, default=str, ensure_ascii=False)
