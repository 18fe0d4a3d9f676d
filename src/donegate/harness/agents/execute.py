"""``donegate exec``: run an agent CLI headless with the gate installed; the harness decides.

1. Recognise the CLI (the executable's name, or ``agent=``), record the run under
   ``data_dir()/exec/<run id>/run.json`` with the protected-file digests taken before the agent
   starts, and install the gate's hooks for this run only (the CLI module's `exec_setup`: a
   settings file, a config home or a defaults file under the run folder).
2. Run the agent in its world (`donegate.harness.world.launch_argv`; under the ``sandbox``
   backend bubblewrap, `donegate.harness.agents.sandboxed`), streaming its output (and each
   hook decision, from the run's ``events.jsonl``) to `progress` as it goes. In the sandbox
   the hook command the CLI runs is the relay (`donegate.harness.agents.relay`): it hands each
   payload to this process's `HookGateway`, which runs the gate's hook outside.
3. Decide from the harness, not from the agent: run the checks once more, compare the
   protected files, read the agent's last todo state as the hooks saw it. Nothing open:
   ``done`` with a certificate. Otherwise ``escalated`` when a hook escalated (its report
   written), else ``failed``: the agent crashed, hit a provider error, ended with failing
   checks and budget left, or its hooks never ran.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from donegate.config import DATA_DIR_ENV, data_dir, data_path
from donegate.errors import UserError
from donegate.harness.agents import protected
from donegate.harness.agents.base import AgentCLI, ExecSetup
from donegate.harness.agents.core import exec_dir
from donegate.harness.agents.deadline import run_checks_by
from donegate.harness.agents.doctor import cli_version, diagnose
from donegate.harness.agents.gateway import RELAY_SCRIPT, HookGateway, relay_command
from donegate.harness.agents.install import hook_command
from donegate.harness.agents.judge import NOT_LISTED, checklist_gaps
from donegate.harness.agents.report import certify
from donegate.harness.agents.sandboxed import cli_world
from donegate.harness.custody import child_env
from donegate.harness.escalation import build_report, write_report
from donegate.harness.poison import review_changes
from donegate.harness.preflight import check_outputs
from donegate.harness.spec import TaskSpec
from donegate.harness.world import AgentWorld, agent_env, launch_argv
from donegate.records.check import CheckResult
from donegate.records.report import EscalationReport
from donegate.records.status import TaskOutcome, TaskStatus
from donegate.results import Spend
from donegate.sandbox import Isolation, resolve
from donegate.spend import overrun, price_book

__all__ = [
    "EXEC_HOOK_TIMEOUT_S",
    "ExecEscalation",
    "ExecResult",
    "exec_agent",
    "new_run_id",
    "recognise",
    "start_program",
]

EXEC_HOOK_TIMEOUT_S = 600
"""The hook timeout exec writes into the CLI's config for its run."""
_OUTPUT_TAIL = 256 * 1024


@dataclass(frozen=True, kw_only=True, slots=True)
class ExecEscalation:
    """Where the hook's escalation report of this run is, and what it says was left."""

    json: Path
    """The report (``donegate.escalation`` JSON)."""
    markdown: Path
    """The same report for a person."""
    report: EscalationReport | None = None
    """The report as read; None when it could not be read (then only the paths are known)."""

    def summary(self) -> dict[str, Any]:
        """``escalation`` in ``donegate exec --json``: the paths, and what was left if read."""
        out: dict[str, Any] = {"json": str(self.json), "markdown": str(self.markdown)}
        if self.report is not None:
            out["open_items"] = [i.item for i in self.report.left.open_items]
            out["failed_checks"] = [c.name for c in self.report.left.failed_checks]
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class ExecResult:
    """How a gated agent run ended, decided by the harness."""

    status: TaskOutcome
    reason: str
    continuations: int
    """Blocks the gate spent on the agent's main session(s)."""
    agent: dict[str, Any]
    """``name``, ``version``, ``exit_code``, ``result``, ``error`` (a provider error it printed)."""
    checks: tuple[CheckResult, ...] = ()
    """The checks as they stood when the agent ended."""
    certificate: Path | None = None
    escalation: ExecEscalation | None = None
    """The hook's escalation report, when escalated."""
    run_dir: Path | None = None
    """This run's record folder (``run.json``, ``events.jsonl``)."""
    problems: tuple[str, ...] = ()
    isolation: Isolation | None = None
    """The backend the agent CLI ran under (None: it was not started)."""
    spend: Spend | None = None
    """The spend the CLI reported (its whole session, continuations included); None when it
    printed none."""

    def summary(self) -> dict[str, Any]:
        """The one object ``donegate exec --json`` prints."""
        return {
            "status": self.status,
            "continuations": self.continuations,
            "agent": self.agent,
            "checks": [
                {"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks
            ],
            "certificate": str(self.certificate) if self.certificate is not None else None,
            "escalation": self.escalation.summary() if self.escalation is not None else None,
            "reason": self.reason,
            "problems": list(self.problems),
            "run": str(self.run_dir) if self.run_dir is not None else None,
            "isolation": self.isolation.as_data() if self.isolation is not None else None,
            "spend": self.spend.as_data() if self.spend is not None else None,
        }


def recognise(executable: str, agents: dict[str, AgentCLI], name: str | None) -> AgentCLI:
    """The CLI module for `executable` (its file name), or the one `name` says."""
    if name is not None:
        if name not in agents:
            raise UserError(f"--agent {name!r}: expected one of {', '.join(agents)}")
        return agents[name]
    stem = Path(executable).name.removesuffix(".exe").removesuffix(".js")
    if stem not in agents:
        raise UserError(
            f"cannot tell which agent {executable!r} is: name it {', '.join(agents)} "
            "or pass --agent (--agent command runs any other program)"
        )
    return agents[stem]


def exec_agent(
    spec: TaskSpec,
    task_path: Path,
    argv: Sequence[str],
    *,
    agent: AgentCLI,
    max_continuations: int | None = None,
    cwd: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
    env: dict[str, str] | None = None,
    isolation: Isolation | None = None,
) -> ExecResult:
    """Run `argv` (an agent CLI) with the gate installed for this run; decide how it ended.

    `isolation` is the backend the CLI runs under (default: ``DONEGATE_ISOLATION``, probed).
    """
    executable, root = program_and_workdir(spec, argv, cwd)
    chosen = resolve() if isolation is None else isolation
    check_outputs()  # the data directory and the key, before the agent starts
    # The agent CLI needs its provider keys, never the gate's secrets or a task's `secret:`.
    base_env = child_env(os.environ if env is None else env, provider_keys=True)
    budget = spec.max_continuations if max_continuations is None else max_continuations
    run_id = new_run_id()
    run_dir = exec_dir(run_id)
    run_dir.mkdir(parents=True, mode=0o700)
    started = time.time()
    manifest = protected.take(spec, root, str(task_path))
    record = {"task": str(task_path.resolve()), "task_id": spec.id, "agent": agent.name,
              "argv": list(argv), "cwd": str(root), "started": started, "budget": budget,
              "protected": manifest}  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps(record, indent=1), encoding="utf-8")

    # no --max-continuations: the hook reads `budget` from run.json (`call.budget_of`)
    extra = ("--exec-run", run_id, *_budget_args(spec))
    deadline = EXEC_HOOK_TIMEOUT_S - 60
    hook = hook_command(agent, task_path, deadline=deadline, extra=extra)
    with contextlib.ExitStack() as stack:
        gateway: HookGateway | None = None
        if chosen.backend == "sandbox":  # the hook runs out here; the CLI runs the relay
            gateway = HookGateway(agent, shlex.split(hook), env={}, cwd=root,
                                  timeout_s=EXEC_HOOK_TIMEOUT_S)  # fmt: skip
            stack.enter_context(gateway)
        command = hook if gateway is None else relay_command(agent, gateway.socket_path)
        config = run_dir if gateway is None else gateway.folder / "cli"  # the CLI may see it
        config.mkdir(exist_ok=True, mode=0o700)
        setup = ExecSetup(
            run_dir=config,
            commands={event: command for event in agent.install_events},
            timeout_s=EXEC_HOOK_TIMEOUT_S,
            budget=budget,
            env=base_env,
            cwd=root,
            budget_usd=spec.budget.usd if spec.budget is not None else None,
        )
        version = cli_version(executable, base_env)
        refused = _hook_would_not_fire(agent, root, env=base_env, version=version,
                                       run_dir=run_dir)  # fmt: skip
        if refused is not None:  # the agent is not started at all
            return refused
        before = set(config.iterdir())
        try:
            args, env_changes = agent.exec_setup([executable, *argv[1:]], setup)
        except (UserError, OSError) as exc:  # the run cannot be gated: it is not run at all
            info: dict[str, Any] = {"name": agent.name, "version": version, "exit_code": None,
                                    "result": None, "error": None}  # fmt: skip
            reason = f"the gate could not be installed for {agent.title}: {exc}"
            return ExecResult(status=TaskStatus.FAILED, reason=reason, continuations=0, agent=info,
                              run_dir=run_dir)  # fmt: skip
        run_env = {**base_env, **env_changes, DATA_DIR_ENV: str(data_dir())}
        written = sorted(set(config.iterdir()) - before)  # this run's settings, config home
        relay = [RELAY_SCRIPT, gateway.socket_path] if gateway is not None else []
        world = cli_world(spec, agent, root=root, task_path=task_path, isolation=chosen,
                          envs=(base_env, run_env), executable=executable,
                          readable=[*written, *relay])  # fmt: skip
        if gateway is not None:
            gateway.env = run_env
        progress(f"donegate: {agent.title} {version or ''} with the gate (budget {budget}, "
                 f"isolation {chosen.backend}): {' '.join(argv)}")  # fmt: skip
        code, stdout = _run(
            launch_argv(args, world),
            env=agent_env(run_env, world),
            cwd=root,
            events=run_dir / "events.jsonl",
            narrate=lambda event: progress(_narrate(event, budget)),
            progress=progress,
            started=lambda pid: setattr(gateway, "freeze_pid", pid) if gateway else None,
        )
        if config != run_dir:  # kept with the run's record (its settings, a CLI's chats)
            for entry in written:
                with contextlib.suppress(OSError):
                    shutil.move(entry, run_dir / entry.name)
    result, error = agent.result_of(stdout)
    info = {"name": agent.name, "version": version, "exit_code": code, "result": result,
            "error": error}  # fmt: skip
    decided = _decide(spec, agent, root=root, run_dir=run_dir, manifest=manifest, info=info,
                      started=started, budget=budget, task_path=task_path)  # fmt: skip
    spent = agent.spend_of(stdout, prices=price_book(spec.prices))
    return _over_budget(spec, agent, replace(decided, isolation=chosen), spent)


def _budget_args(spec: TaskSpec) -> tuple[str, ...]:
    """The hook's ``--budget-*`` options: the task's spend budget, exec's own flags included."""
    usd, tokens = (spec.budget.usd, spec.budget.tokens) if spec.budget else (None, None)
    return (*(("--budget-usd", repr(usd)) if usd is not None else ()),
            *(("--budget-tokens", str(tokens)) if tokens is not None else ()))  # fmt: skip


def _over_budget(
    spec: TaskSpec, agent: AgentCLI, decided: ExecResult, spend: Spend | None
) -> ExecResult:
    """The result with the CLI's reported spend; a task not done whose spend reached its budget
    is escalated ("budget exhausted"): the gate grants no continuation past it."""
    decided = replace(decided, spend=spend)
    if spend is None or decided.status in ("done", "awaiting_review"):
        return decided
    reason = overrun(spec.budget, spend, agent.title)
    if reason is None:
        return decided
    report = build_report(
        task_id=spec.id, reason=reason, prompt=spec.prompt,
        completion_condition=spec.completion_condition, continuations=decided.continuations,
        max_continuations=spec.max_continuations, checks=decided.checks,
        extra={"last_text": decided.agent.get("result") or ""}, spend=spend,
    )  # fmt: skip
    json_path, md_path = write_report(report, data_path("escalations"))
    report = report.with_files(str(json_path), str(md_path))
    escalation = ExecEscalation(json=json_path, markdown=md_path, report=report)
    return replace(decided, status=TaskStatus.ESCALATED, reason=reason, escalation=escalation)


def program_and_workdir(spec: TaskSpec, argv: Sequence[str], cwd: Path | None) -> tuple[str, Path]:
    """The agent program's path and the folder it and the checks run in; `UserError` when
    either is missing."""
    if not argv:
        raise UserError("no agent command given (donegate exec --task TASK -- AGENT ARGS...)")
    executable = shutil.which(argv[0])
    if executable is None:
        raise UserError(f"{argv[0]}: command not found")
    root = Path(cwd or spec.workdir or Path.cwd()).resolve()  # where the agent and checks run
    if not root.is_dir():
        raise UserError(f"{spec.id}: workdir is not a directory: {root}")
    return executable, root


def _hook_would_not_fire(
    agent: AgentCLI, root: Path, *, env: dict[str, str], version: str | None, run_dir: Path
) -> ExecResult | None:
    """A failed result naming what would keep the gate's hook from firing (the doctor's
    static diagnosis), or None when nothing would."""
    blockers = [f.line for f in diagnose(agent, root, env=env, installed=False) if f.blocks]
    if not blockers:
        return None
    found: dict[str, Any] = {"name": agent.name, "version": version, "exit_code": None,
                             "result": None, "error": None}  # fmt: skip
    return ExecResult(status=TaskStatus.FAILED,
                      reason=f"the gate's hook would not fire: {blockers[0]}", continuations=0,
                      agent=found, run_dir=run_dir, problems=tuple(blockers))  # fmt: skip


def new_run_id() -> str:
    """A new exec run's id: its start time, sortable, and a random tail."""
    return time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)


def start_program(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    run_dir: Path,
    progress: Callable[[str], None],
    world: AgentWorld | None = None,
) -> tuple[int, str]:
    """Start a program exec gates (no hook of its own) and wait for it: its exit code and the
    tail of its stdout. `--agent command` starts every program, the agent and each resume,
    through this one call, in the agent's `world` (`donegate.harness.world.launch_argv`, the
    seam exec's CLIs and ``run_command`` start through too)."""
    if world is not None:
        args, env = launch_argv(args, world), agent_env(env, world)
    return _run(args, env=env, cwd=cwd, events=run_dir / "events.jsonl",
                narrate=lambda event: None, progress=progress)  # fmt: skip


def _decide(
    spec: TaskSpec,
    agent: AgentCLI,
    *,
    root: Path,
    run_dir: Path,
    manifest: dict[str, Any],
    info: dict[str, Any],
    started: float,
    budget: int,
    task_path: Path | None = None,
) -> ExecResult:
    events = _events(run_dir / "events.jsonl")
    main = [e for e in events if not e.get("subagent_id")]
    continuations = sum(1 for e in main if e.get("outcome") in ("blocked", "fault"))
    deadline = time.monotonic() + max(60.0, float(EXEC_HOOK_TIMEOUT_S))
    start = protected.manifest(manifest, root)
    review = review_changes(start, spec.checks)
    ran = tuple(run_checks_by(spec.checks, root, deadline=deadline, snapshot_of=start))
    checks = review.results(verifier=False) + ran
    problems = list(protected.changes(manifest, root)) + review.problems(verifier=False)
    judged = ("blocked", "passed", "escalated", "let_through")  # rounds that read the todos
    last_todos = next((e.get("todos") or [] for e in reversed(main) if e.get("outcome") in judged),
                      [])  # fmt: skip
    texts = [str(t.get("text")) for t in last_todos if isinstance(t, dict)]
    last_todos = [*last_todos, *({"text": item, "status": "open", "raw_status": NOT_LISTED}
                                 for item in checklist_gaps(texts, spec.checklist))]  # fmt: skip
    open_items = [t for t in last_todos if isinstance(t, dict) and t.get("status") != "done"]
    if open_items:
        problems.append(
            "open todo items: "
            + ", ".join(f"{t.get('text')} ({t.get('raw_status')})" for t in open_items)
        )
    failed = [c for c in ran if not c.passed]
    if failed:
        problems.append("failed checks: " + ", ".join(f"{c.name} ({c.detail})" for c in failed))
    common: dict[str, Any] = {"continuations": continuations, "agent": info, "checks": checks,
                              "run_dir": run_dir, "problems": tuple(problems)}  # fmt: skip
    if not problems:
        agent_info = {k: info[k] for k in ("name", "version", "exit_code")}
        path = certify(spec, root=root, checks=checks, manifest=manifest, agent=agent_info,
                       started=started, continuations=continuations,
                       task_file=task_path)  # fmt: skip
        if spec.closure == "human":
            reason = "every check passed; a person's approval closes it (donegate escalations)"
            return ExecResult(
                status=TaskStatus.AWAITING_REVIEW, reason=reason, certificate=path, **common
            )
        return ExecResult(
            status=TaskStatus.DONE, reason="every check passed", certificate=path, **common
        )
    escalated = next((e for e in reversed(events) if e.get("outcome") == "escalated"), None)
    if escalated is not None:
        report = _report(escalated.get("report"))
        reason = f"escalated by the hook: {escalated.get('reason')}"
        return ExecResult(status=TaskStatus.ESCALATED, reason=reason, escalation=report, **common)
    if info["exit_code"] != 0:
        reason = f"{agent.title} exited with code {info['exit_code']}"
    elif info["error"]:
        reason = f"{agent.title} reported an error: {info['error']}"
    elif not any(e.get("outcome") != "started" for e in main):
        reason = (
            f"the gate's hook never ran: {agent.title} ended without a stop the gate saw "
            "(hooks disabled, untrusted, or the agent crashed first)"
        )
    else:
        reason = f"{agent.title} ended with {continuations} of {budget} continuations spent"
    return ExecResult(status=TaskStatus.FAILED, reason=f"{reason}; {'; '.join(problems)}", **common)


def _report(path: Any) -> ExecEscalation | None:
    if not isinstance(path, str):
        return None
    report: EscalationReport | None = None
    with contextlib.suppress(OSError, ValueError):
        report = EscalationReport.from_data(json.loads(Path(path).read_text(encoding="utf-8")))
    return ExecEscalation(json=Path(path), markdown=Path(path).with_suffix(".md"), report=report)


def _run(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    events: Path,
    narrate: Callable[[dict[str, Any]], None],
    progress: Callable[[str], None],
    started: Callable[[int], None] = lambda pid: None,
) -> tuple[int, str]:
    """Run the agent; its output and the hook's decisions go to `progress` as they come."""
    try:
        proc = subprocess.Popen(
            args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
    except OSError as exc:
        raise UserError(f"cannot start {args[0]}: {exc.strerror or exc}") from None
    started(proc.pid)
    captured: list[bytes] = []
    done = threading.Event()

    def pump(stream: Any, keep: bool) -> None:
        for line in iter(stream.readline, b""):
            if keep:
                captured.append(line)
            progress(line.decode("utf-8", errors="replace").rstrip("\n"))

    def watch() -> None:
        seen = 0
        while True:
            finished = done.is_set()
            lines = _lines(events)
            for line in lines[seen:]:
                narrate(line)
            seen = len(lines)
            if finished:
                return
            done.wait(0.2)

    threads = [
        threading.Thread(target=pump, args=(proc.stdout, True), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, False), daemon=True),
        threading.Thread(target=watch, daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        proc.kill()
        proc.wait()
        raise
    for t in threads[:2]:
        t.join(5)
    done.set()
    threads[2].join(5)
    stdout = b"".join(captured)[-_OUTPUT_TAIL:].decode("utf-8", errors="replace")
    return code, stdout


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict):
                out.append(data)
    return out


_events = _lines


def _narrate(event: dict[str, Any], budget: int) -> str:
    who = f" (subagent {event['subagent_id']})" if event.get("subagent_id") else ""
    outcome = event.get("outcome")
    reason = " ".join(str(event.get("reason", "")).split())
    if len(reason) > 300:
        reason = reason[:297] + "..."
    count = f"{event.get('blocks')} of {budget}"
    return f"donegate: {event.get('event')}{who}: {outcome} ({count}): {reason}"
