"""``donegate check TASK`` (or ``validate``): every problem in a task file at once, running nothing.

Each problem is one line, ``FILE: field: message``: every field the task format refuses, then
what only shows when the task runs: a ``python:`` check or an imported tool whose module cannot
be found, a ``run:`` check whose command is not on PATH, a ``script:`` model whose file is
missing or invalid, a workdir that is not a folder. Nothing is imported, run or sent: modules
are looked up, not imported, and a model client is not called.

Exit codes: 0 the task is fine (``ok: ...`` on stdout), 2 it is not (the problems on stderr,
then their count when there are several).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from donegate.cli._app import app
from donegate.errors import ScriptError
from donegate.harness.preflight import mode_problems, task_file_problems
from donegate.harness.runner import COMPLETION_TOOL
from donegate.harness.spec import BUILTIN_TOOLS, load_task

__all__ = ["find_problems", "refuse_bad_task"]


@click.command("check")
@click.argument("task", type=click.Path(dir_okay=False))
def check_command(task: str) -> None:
    """Report every problem in TASK (a task file) without running anything."""
    problems, warnings = find_problems(task)
    for line in warnings:
        click.echo(f"{task}: warning: {line}", err=True)
    for line in problems:
        click.echo(" ".join(line.split()), err=True)
    if len(problems) > 1:
        click.echo(f"{task}: {len(problems)} problems", err=True)
    if problems:
        sys.exit(2)
    spec = load_task(task)
    s = "" if len(spec.checks) == 1 else "s"
    model = f", model {spec.model}" if spec.model else ", no model (pass --model to run)"
    click.echo(f"ok: {task}: task {spec.id}, {len(spec.checks)} check{s}{model}")


app.add_command(check_command)
app.add_command(
    click.Command(
        "validate",
        callback=check_command.callback,
        params=check_command.params,
        help="The same as `donegate check TASK`: report every problem in TASK, running nothing.",
    )
)


def find_problems(task: str, *, machine: bool = True) -> tuple[list[str], list[str]]:
    """The task file's problems (``FILE: field: message``) and warnings (``field: message``):
    `donegate.harness.preflight.task_file_problems`, with ``script:`` models read too."""
    return task_file_problems(task, machine=machine, scripts=_script_problems)


def refuse_bad_task(task: str, *, machine: bool = True, mode: str | None = None) -> None:
    """Exit 2 with every problem `check` reports, before anything runs (``run``, ``submit``,
    ``exec`` and ``hook install`` call it first); print its warnings. `machine` False skips the
    look at this machine (programs on PATH); `mode` (``exec``...) adds the fields it cannot
    honour."""
    problems, warnings = find_problems(task, machine=machine)
    if mode is not None:
        refused, unused = mode_problems(task, mode)
        problems += refused
        warnings += unused
    if not problems:  # a refusal is its problems only: warnings wait for a task that runs
        for line in warnings:
            click.echo(f"{task}: warning: {line}", err=True)
        return
    for line in problems:  # as every command's bad input reads: ``donegate: FILE: field: ...``
        click.echo("donegate: " + " ".join(line.split()), err=True)
    if len(problems) > 1:
        click.echo(f"donegate: {task}: {len(problems)} problems; nothing was run", err=True)
    sys.exit(2)


def _script_problems(path: Path, field: str, data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """A ``script:`` model file's problems, and a script that does not fit the task."""
    from donegate.testing.script import check_for_task, load_script

    warnings: list[str] = []
    try:
        script = load_script(path)
        if field == "model" and isinstance(data.get("prompt"), str):
            value = data.get("tools", list(BUILTIN_TOOLS))
            tools = value if isinstance(value, list) else []
            names = [t if isinstance(t, str) else str(t.get("name", "")) for t in tools]
            warnings += check_for_task(
                script, prompt=data["prompt"], tools=[*names, COMPLETION_TOOL]
            )
    except ScriptError as exc:
        return [str(exc)], warnings
    return [], warnings
