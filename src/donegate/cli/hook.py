"""``donegate hook claude-stop --task TASK``: the completion gate as a Claude Code Stop hook.

Register it in ``.claude/settings.json``::

    {"hooks": {"Stop": [{"hooks": [{"type": "command",
        "command": "donegate hook claude-stop --task task.yaml"}]}]}}

It always exits 0: blocking is said in JSON on stdout. A problem with the hook itself exits 1
(a non-blocking error in Claude Code), never 2, which Claude Code reads as "block".
"""

from __future__ import annotations

import json
import sys

import click

from donegate._files import read_stream
from donegate.cli._app import app
from donegate.errors import DonegateError
from donegate.harness.claude_hook import claude_stop, parse_hook_input
from donegate.harness.spec import load_task


@app.group("hook")
def hook_group() -> None:
    """Run donegate's completion gate as another agent's hook."""


@hook_group.command("claude-stop")
@click.option("--task", "task", required=True)  # a folder is load_task's one line, exit 1
def claude_stop_command(task: str) -> None:
    """Read Claude Code's Stop-hook JSON on stdin; block while TASK's checks fail."""
    try:
        spec = load_task(task)
        text = read_stream(sys.stdin.buffer, source="hook input")  # sized, UTF-8
        decision = claude_stop(spec, parse_hook_input(text))
    except (DonegateError, OSError) as exc:
        click.echo(f"donegate hook: {exc}", err=True)
        sys.exit(1)
    if decision.output is not None:
        click.echo(json.dumps(decision.output))
    else:
        click.echo(f"donegate: {decision.reason}", err=True)
        if decision.report is not None:
            click.echo(f"donegate: escalation report {decision.report}", err=True)
