"""``donegate exec --agent command``: gate any agent program, one donegate has no hook for.

An agent without a Stop hook cannot be stopped mid-session and told it is not done, but it can
be run again. So exec itself is the gate, around the program:

1. Split ``--resume`` (like ``run_command``: shell words, never a shell) before anything runs;
   record the run under ``data_dir()/exec/<run id>/`` with the protected-file digests taken
   before the agent starts.
2. Run the command through `start_program`, the one place this mode starts a program.
3. Judge as the hooks do (`judge_world`): the task's checks through the gate's check path
   (`deadline.run_checks_by`), and the protected files against the digests of step 1.
   Nothing open: ``done``, with a signed certificate (``awaiting_review`` for a
   ``closure: human`` task).
4. Otherwise, with ``--resume`` and budget left: one continuation. The gate's reason (the
   same nudge the hooks send) goes to the resume command as one argument in place of
   ``{reason}`` and in ``DONEGATE_REASON``; each continuation is a ``blocked`` line in the
   run's ``events.jsonl``, the record the hooks keep for exec. Then back to 3.
5. Budget spent: ``escalated``, with the harness's escalation report. No ``--resume``:
   ``failed``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from donegate.config import DATA_DIR_ENV, REASON_ENV, data_path
from donegate.errors import UserError
from donegate.harness.agents import protected
from donegate.harness.agents.core import exec_dir
from donegate.harness.agents.deadline import run_checks_by
from donegate.harness.agents.execute import (
    EXEC_HOOK_TIMEOUT_S,
    ExecEscalation,
    ExecResult,
    new_run_id,
    start_program,
)
from donegate.harness.agents.report import certify
from donegate.harness.agents.sandboxed import install_roots
from donegate.harness.custody import child_env
from donegate.harness.decision import nudge_text
from donegate.harness.escalation import build_report, write_report
from donegate.harness.poison import review_changes
from donegate.harness.preflight import check_outputs
from donegate.harness.spec import TaskSpec
from donegate.harness.world import agent_world
from donegate.records.check import CheckResult
from donegate.records.report import Claim
from donegate.records.status import TaskStatus
from donegate.sandbox import resolve

__all__ = ["COMMAND", "REASON_ENV", "REASON_PLACEHOLDER", "exec_command", "resume_argv"]

COMMAND = "command"
"""The ``--agent`` name of this mode."""
REASON_PLACEHOLDER = "{reason}"
"""The resume command's argument replaced by the gate's reason (one argument, never split)."""
_CLAIM_CHARS = 4000


def parse_resume(resume: str) -> list[str]:
    """``--resume``'s words (shell-split, no shell); `UserError` naming what is wrong."""
    try:
        words = shlex.split(resume)
    except ValueError as exc:
        raise UserError(f"--resume {resume!r}: cannot split the command: {exc}") from None
    if not words:
        raise UserError("--resume: the command is empty")
    return words


def resume_argv(words: Sequence[str], reason: str) -> list[str]:
    """The resume command for this continuation: each ``{reason}`` inside a word becomes the
    reason, and the word stays one argument whatever the reason holds."""
    return [w.replace(REASON_PLACEHOLDER, reason) for w in words]


def exec_command(
    spec: TaskSpec,
    task_path: Path,
    argv: Sequence[str],
    *,
    resume: str | None = None,
    max_continuations: int | None = None,
    cwd: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
    env: dict[str, str] | None = None,
) -> ExecResult:
    """Run `argv`, then the checks; resume with the gate's reason until done or out of budget.

    In the sandbox the program's home folder is one of its own for the run (kept across its
    resumes, so a ``--continue`` finds its session; removed at the end): donegate knows no state
    folders of an arbitrary program, and the user's home stays out of the agent's reach.
    """
    with tempfile.TemporaryDirectory(prefix="donegate-agent-home-") as home:
        return _exec_command(spec, task_path, argv, resume=resume, home=Path(home),
                             max_continuations=max_continuations, cwd=cwd, progress=progress,
                             env=env)  # fmt: skip


def _exec_command(
    spec: TaskSpec,
    task_path: Path,
    argv: Sequence[str],
    *,
    resume: str | None,
    home: Path,
    max_continuations: int | None,
    cwd: Path | None,
    progress: Callable[[str], None],
    env: dict[str, str] | None,
) -> ExecResult:
    if not argv:
        raise UserError("no agent command given (donegate exec --task TASK -- COMMAND ARGS...)")
    words = parse_resume(resume) if resume is not None else None
    executable = shutil.which(argv[0])
    if executable is None:
        raise UserError(f"{argv[0]}: command not found")
    if words is not None and shutil.which(words[0]) is None:
        raise UserError(f"--resume: {words[0]}: command not found")
    root = Path(cwd or spec.workdir or Path.cwd()).resolve()
    if not root.is_dir():
        raise UserError(f"{spec.id}: workdir is not a directory: {root}")
    budget = spec.max_continuations if max_continuations is None else max_continuations
    run_id = new_run_id()
    run_dir = exec_dir(run_id)
    run_dir.mkdir(parents=True, mode=0o700)
    started = time.time()
    manifest = protected.take(spec, root, str(task_path))
    record = {"task": str(task_path.resolve()), "task_id": spec.id, "agent": COMMAND,
              "argv": list(argv), "resume": words, "cwd": str(root), "started": started,
              "budget": budget, "protected": manifest}  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    check_outputs()  # the data directory and the key, before the agent starts
    # the program needs its provider keys, never the gate's secrets, a task's `secret:` or
    # where the gate keeps its data (it has no hook to reach it with)
    base_env = child_env(os.environ if env is None else env, provider_keys=True)
    base_env.pop(DATA_DIR_ENV, None)
    programs = [executable, *([shutil.which(words[0]) or words[0]] if words else [])]
    roots = [folder for program in programs for folder in install_roots(program)]
    world = agent_world(spec, workdir=root, isolation=resolve(), task_path=task_path,
                        writable=[home], readable=roots)  # fmt: skip
    if world.sandboxed:  # a home of its own (XDG folders default under it)
        base_env = {k: v for k, v in base_env.items() if not k.startswith("XDG_")}
        base_env["HOME"] = str(home)

    progress(f"donegate: {argv[0]} under the gate (budget {budget}): {shlex.join(argv)}")
    args, run_env, continuations = [executable, *argv[1:]], base_env, 0
    rounds: list[Claim] = []
    while True:
        code, out = start_program(args, env=run_env, cwd=root, run_dir=run_dir, progress=progress,
                                  world=world)  # fmt: skip
        claim = _claim(out)
        info = {"name": COMMAND, "version": None, "exit_code": code, "result": claim,
                "error": None}  # fmt: skip
        checks, problems = judge_world(spec, root, manifest)
        common: dict[str, Any] = {"continuations": continuations, "agent": info,
                                  "checks": checks, "run_dir": run_dir,
                                  "problems": tuple(problems)}  # fmt: skip
        if not problems:
            agent = {"name": COMMAND, "command": argv[0], "exit_code": code}
            path = certify(spec, root=root, checks=checks, manifest=manifest, agent=agent,
                           started=started, continuations=continuations)  # fmt: skip
            _event(run_dir, "passed", continuations, "every check passed", certificate=path)
            if spec.closure == "human":
                reason = "every check passed; a person's approval closes it (donegate escalations)"
                return ExecResult(status=TaskStatus.AWAITING_REVIEW, reason=reason,
                                  certificate=path, **common)  # fmt: skip
            return ExecResult(status=TaskStatus.DONE, reason="every check passed", certificate=path,
                              **common)  # fmt: skip
        rounds.append(Claim(round=len(rounds) + 1, step=f"run #{len(rounds) + 1}",
                            claim=claim or f"({argv[0]} exited with code {code})",
                            problems=tuple(problems),
                            failed_checks=tuple(c.name for c in checks if not c.passed),
                            verdict="continue"))  # fmt: skip
        if words is None:
            reason = f"{argv[0]} exited with code {code}; no --resume to continue it"
            return ExecResult(status=TaskStatus.FAILED, reason=f"{reason}; {'; '.join(problems)}",
                              **common)  # fmt: skip
        if continuations >= budget:
            reason = f"not done after {continuations} continuation(s): {'; '.join(problems)}"
            rounds[-1] = rounds[-1].model_copy(update={"verdict": "escalate"})
            report = _escalate(spec, reason, budget=budget, checks=checks, rounds=rounds,
                               continuations=continuations, root=root, claim=claim)  # fmt: skip
            _event(run_dir, "escalated", continuations, reason, report=report.json)
            return ExecResult(status=TaskStatus.ESCALATED,
                              reason=f"escalated by the gate: {reason}",
                              escalation=report, **common)  # fmt: skip
        message = nudge_text(problems)
        continuations += 1
        _event(run_dir, "blocked", continuations, message)
        progress(f"donegate: continuation {continuations} of {budget}: {message}")
        args = resume_argv(words, message)
        run_env = {**base_env, REASON_ENV: message}


def judge_world(
    spec: TaskSpec, root: Path, manifest: dict[str, Any]
) -> tuple[tuple[CheckResult, ...], list[str]]:
    """The checks as they stand and what stands between the agent and done."""
    deadline = time.monotonic() + max(60.0, float(EXEC_HOOK_TIMEOUT_S))
    start = protected.manifest(manifest, root)
    review = review_changes(start, spec.checks)  # files that change how checks run
    ran = tuple(run_checks_by(spec.checks, root, deadline=deadline, snapshot_of=start))
    checks = review.results(verifier=False) + ran
    problems = list(protected.changes(manifest, root)) + review.problems(verifier=False)
    failed = [c for c in ran if not c.passed]
    if failed:
        problems.append("failed checks: " + ", ".join(f"{c.name} ({c.detail})" for c in failed))
    return checks, problems


def _claim(output: str) -> str | None:
    """The agent's last words: the tail of what it printed (its claim, for the summary)."""
    text = output.strip()
    return text[-_CLAIM_CHARS:] if text else None


def _event(run_dir: Path, outcome: str, blocks: int, reason: str, **paths: Path | None) -> None:
    """One line of the run's ``events.jsonl``, in the form the hooks write for exec."""
    line: dict[str, Any] = {"at": time.time(), "agent": COMMAND, "event": "exit",
                            "session_id": run_dir.name, "subagent_id": None,
                            "outcome": outcome, "blocks": blocks, "reason": reason}  # fmt: skip
    line.update({k: str(v) if v is not None else None for k, v in paths.items()})
    with open(run_dir / "events.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def _escalate(
    spec: TaskSpec,
    reason: str,
    *,
    budget: int,
    checks: Sequence[CheckResult],
    rounds: Sequence[Claim],
    continuations: int,
    root: Path,
    claim: str | None,
) -> ExecEscalation:
    report = build_report(
        task_id=spec.id,
        reason=reason,
        prompt=spec.prompt,
        completion_condition=spec.completion_condition,
        continuations=continuations,
        max_continuations=budget,
        checks=checks,
        rounds=rounds,
        extra={"agent": COMMAND, "cwd": str(root), "last_claim": claim},
    )
    json_path, md_path = write_report(report, data_path("escalations"))
    return ExecEscalation(json=json_path, markdown=md_path, report=report)
