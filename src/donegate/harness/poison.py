"""The agent's changes judged at a claim: one function every path that judges a claim calls.

`review_changes` diffs the workdir against the task's start record (`Manifest`) and returns
what it found: files that change how checks run (`donegate.harness.tamper`, always a failed
check) and lines that may tamper with the runner from inside (`donegate.harness.scan`: for
the verifier to weigh when there is one, a failed check naming ``file:line`` when there is
none). The loop's gate (``run``, the worker), the hooks, ``exec`` and ``verify`` all call it,
so none of them judges a claim without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from donegate.harness._pyfiles import python_files
from donegate.harness.protect import Manifest, ProtectError
from donegate.harness.scan import Flag, scan_changes
from donegate.harness.spec import CheckSpec
from donegate.harness.tamper import Finding, changed_files, findings
from donegate.records.check import CheckResult

__all__ = ["ChangeReview", "review_changes"]

_WHY = "files that change how checks run may not be added or changed"


@dataclass(frozen=True, kw_only=True, slots=True)
class ChangeReview:
    """What the agent's changes hold that bears on how the checks run."""

    findings: tuple[Finding, ...] = ()
    """Files that change how checks run (each fails the claim)."""
    flags: tuple[Flag, ...] = ()
    """Lines that may tamper with the runner from inside."""
    error: str | None = None
    """Why the workdir could not be judged (the claim fails closed)."""

    def results(self, *, verifier: bool) -> tuple[CheckResult, ...]:
        """Failed check results: each finding; each flag too when no `verifier` weighs them."""
        out = [
            CheckResult(
                name=f.text,
                kind="tamper",
                passed=False,
                detail=f"{f.path} was {'added' if f.added else 'changed'} after the task "
                f"started; {_WHY} (a task's allow: globs opt a path out)",
            )
            for f in self.findings
        ]
        if self.error is not None:
            out.append(
                CheckResult(
                    name="files that change how checks run",
                    kind="tamper",
                    passed=False,
                    detail=self.error,
                )
            )
        if not verifier:
            out += [
                CheckResult(
                    name=f.text,
                    kind="scan",
                    passed=False,
                    detail=f"{f.path}:{f.line}: the agent's change {f.why}; with no verifier "
                    "to weigh it, the claim fails",
                )
                for f in self.flags
            ]
        return tuple(out)

    def problems(self, *, verifier: bool) -> list[str]:
        """The parts of a nudge naming what was found."""
        out = []
        names = [f.text for f in self.findings]
        if self.error is not None:
            names.append(f"files that change how checks run ({self.error})")
        if names:
            out.append(f"{', '.join(names)} ({_WHY})")
        if self.flags and not verifier:
            out.append("runner tampering flagged: " + ", ".join(f.text for f in self.flags))
        return out

    def evidence(self) -> str:
        """The flags as a section of the verifier's evidence ("" when there are none)."""
        if not self.flags:
            return ""
        lines = "\n".join(f"- {f.text}" for f in self.flags)
        return (
            "\n\n## Flagged by the harness in the agent's changes (possible runner tampering)\n"
            "Lines in non-test files the agent added or changed that import or patch the test "
            "runner, replace builtins or leave the process at import. The checks ran this "
            f"code; weigh whether their result can be trusted.\n{lines}"
        )


def review_changes(manifest: Manifest | None, checks: Sequence[CheckSpec]) -> ChangeReview:
    """Judge the workdir against `manifest`'s start record (nothing without one)."""
    if manifest is None:
        return ChangeReview()
    try:
        if manifest.tree is None:  # a record from before the tree was kept: not judged
            return ChangeReview()
        now = python_files(manifest.root)
        changed = changed_files(manifest, now) or {}
        return ChangeReview(
            findings=tuple(findings(manifest, checks, now, changed)),
            flags=tuple(scan_changes(manifest, changed)),
        )
    except (ProtectError, OSError) as exc:
        return ChangeReview(error=f"cannot check the workdir: {exc}")
