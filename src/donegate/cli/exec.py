"""``donegate exec --task TASK [--json] [--max-continuations N] [--agent NAME] [--resume CMD]
[--summary FILE] -- AGENT ARGS...``.

Runs ``claude``, ``codex`` or ``gemini`` headless with the completion gate installed for this run
only, then decides from the harness. Any other program runs with ``--agent command`` (or
``--resume``): exec runs it, then the checks, and resumes it with the gate's reason
(`donegate.harness.agents.command`). With ``GITHUB_OUTPUT`` / ``GITHUB_STEP_SUMMARY`` set it
writes step outputs and a Markdown summary (`donegate.harness.agents.ci`).

Exit codes: 0 done (the checks pass at the end; a signed certificate is written), 3 escalated
(the gate's report is written) or, for a ``closure: human`` task, awaiting a person's approval,
4 failed (the agent crashed, hit a provider error, or ended with failing checks and budget
left), 2 usage.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from donegate.cli._app import app
from donegate.cli._types import isolation_option
from donegate.cli.check import refuse_bad_task
from donegate.errors import UserError
from donegate.harness.agents import AGENTS, ci
from donegate.harness.agents.command import COMMAND, exec_command
from donegate.harness.agents.execute import ExecResult, exec_agent, recognise
from donegate.harness.spec import load_task, with_budget

__all__ = ["EXIT_CODES"]

EXIT_CODES = {"done": 0, "awaiting_review": 3, "escalated": 3, "failed": 4}
"""The exit code of each outcome (2 is a usage error)."""


@app.command("exec", context_settings={"ignore_unknown_options": True})
@click.option("--task", "task", required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--max-continuations", type=click.IntRange(min=0),
              help="Override the task's max_continuations.")  # fmt: skip
@click.option("--agent", "agent_name", type=click.Choice([*sorted(AGENTS), COMMAND]),
              help="Which CLI AGENT is (default: recognised by its name); "
                   "'command' for any other program.")  # fmt: skip
@click.option("--resume", metavar="CMD",
              help="Any other program: the command that continues it, {reason} replaced by "
                   "the gate's reason (also in DONEGATE_REASON).")  # fmt: skip
@click.option("--summary", "summary_file", type=click.Path(dir_okay=False),
              help="Write a Markdown summary of the run to FILE.")  # fmt: skip
@isolation_option
@click.option("--budget-usd", type=float, help="The task's budget in US dollars (budget.usd).")
@click.option("--budget-tokens", type=int, help="The task's budget in tokens (budget.tokens).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def exec_cli(
    *,
    task: str,
    as_json: bool,
    max_continuations: int | None,
    agent_name: str | None,
    budget_usd: float | None,
    budget_tokens: int | None,
    resume: str | None,
    summary_file: str | None,
    command: tuple[str, ...],
) -> None:
    """Run AGENT ARGS... headless with TASK's gate; exit 0 only when its checks pass.

    With a budget, the gate reads the session's spend from the CLI's transcript at each stop
    and continues no session past it (escalated, exit 3); the spend the CLI reports at the end
    (Claude Code's total_cost_usd, Codex CLI's usage events, Gemini CLI's stats) is read too.
    """
    refuse_bad_task(task, mode="exec")
    spec = with_budget(load_task(task), usd=budget_usd, tokens=budget_tokens)
    progress = lambda line: click.echo(line, err=True)  # noqa: E731
    as_command = agent_name == COMMAND or (
        agent_name is None and resume is not None and command[0] not in AGENTS
    )
    result: ExecResult
    if as_command:
        result = exec_command(spec, Path(task), list(command), resume=resume,
                              max_continuations=max_continuations, progress=progress)  # fmt: skip
    else:
        if resume is not None:
            raise UserError(
                "--resume is for --agent command: a hooked CLI is continued by its hook"
            )
        agent = recognise(command[0], AGENTS, agent_name)
        result = exec_agent(spec, Path(task), list(command), agent=agent,
                            max_continuations=max_continuations, progress=progress)  # fmt: skip
    code = EXIT_CODES[result.status]
    _report_to_ci(result, task_id=spec.id, exit_code=code, summary_file=summary_file)
    if as_json:
        click.echo(json.dumps(result.summary(), ensure_ascii=False))
    else:
        click.echo(f"{result.status} {spec.id}: {result.reason}")
        for check in result.checks:
            click.echo(f"  {'pass' if check.passed else 'FAIL'} {check.name}: {check.detail}")
        if result.certificate is not None:
            click.echo(f"  certificate {result.certificate}")
        if result.escalation is not None:
            click.echo(f"  escalation report {result.escalation.markdown}")
    sys.exit(code)


def _report_to_ci(
    result: ExecResult, *, task_id: str, exit_code: int, summary_file: str | None
) -> None:
    """Step outputs and the summary, where CI (or ``--summary``) asks for them."""
    output = os.environ.get("GITHUB_OUTPUT")
    if output:
        ci.append_outputs(Path(output), ci.step_outputs(result, exit_code))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not (step_summary or summary_file):
        return
    text = ci.summary_markdown(result, task_id=task_id, exit_code=exit_code)
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    if summary_file:
        Path(summary_file).write_text(text, encoding="utf-8")
