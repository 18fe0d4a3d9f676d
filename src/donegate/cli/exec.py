"""``donegate exec --task TASK [--json] [--max-continuations N] [--agent NAME] -- AGENT ARGS...``.

Runs ``claude``, ``codex`` or ``gemini`` headless with the completion gate installed for this run
only, then decides from the harness. Exit codes: 0 done (the checks pass at the end; a signed
certificate is written), 3 escalated (the hook's report is written) or, for a ``closure: human``
task, awaiting a person's approval, 4 failed (the agent crashed,
hit a provider error, or ended with failing checks and budget left), 2 usage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from donegate.cli._app import app
from donegate.harness.agents import AGENTS
from donegate.harness.agents.execute import exec_agent, recognise
from donegate.harness.spec import load_task

__all__ = ["EXIT_CODES"]

EXIT_CODES = {"done": 0, "awaiting_review": 3, "escalated": 3, "failed": 4}
"""The exit code of each outcome (2 is a usage error)."""


@app.command("exec", context_settings={"ignore_unknown_options": True})
@click.option("--task", "task", required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--max-continuations", type=click.IntRange(min=0),
              help="Override the task's max_continuations.")  # fmt: skip
@click.option("--agent", "agent_name", type=click.Choice(sorted(AGENTS)),
              help="Which CLI AGENT is (default: recognised by its name).")  # fmt: skip
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def exec_command(
    *,
    task: str,
    as_json: bool,
    max_continuations: int | None,
    agent_name: str | None,
    command: tuple[str, ...],
) -> None:
    """Run AGENT ARGS... headless with TASK's gate; exit 0 only when its checks pass."""
    spec = load_task(task)
    agent = recognise(command[0], AGENTS, agent_name)
    result = exec_agent(
        spec,
        Path(task),
        list(command),
        agent=agent,
        max_continuations=max_continuations,
        progress=lambda line: click.echo(line, err=True),
    )
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
    sys.exit(EXIT_CODES[result.status])
