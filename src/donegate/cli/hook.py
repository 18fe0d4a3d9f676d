"""``donegate hook claude|codex|gemini --task TASK``: the completion gate as an agent CLI's hook.

``claude-stop`` is kept as an alias of ``claude``. A hook always exits 0 with its decision as JSON
on stdout (nothing: the stop goes ahead). Every problem of the hook itself, a usage error
included, is one line on stderr and a blocking decision naming it, counted against the budget
(`donegate.harness.agents.core`); ``--fail-open`` lets the stop through instead.

``donegate hook install|uninstall claude|codex|gemini --task TASK [--dir DIR] [--dry-run]``
writes or removes the hook in the CLI's project config (`donegate.harness.agents.install`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from donegate.cli._app import app
from donegate.cli._types import isolation_option
from donegate.harness.agents import AGENTS, HookOptions, agent_named, run_hook
from donegate.harness.agents.base import MAX_PAYLOAD_BYTES, AgentCLI

# `install`, `uninstall` and `doctor` import what they use (the task preflight, the config
# planners, the doctor) in their own bodies: an agent CLI's stop waits on this module's import.

_USAGE = "donegate.usage_error"
_STARTED = "donegate.started"


class _HookCommand(click.Command):
    """A hook command: a usage error becomes a fail-closed decision, never usage text."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_STARTED] = time.monotonic()
        raw = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            ctx.meta[_USAGE] = " ".join(exc.format_message().split()).rstrip(".")
            for param in self.params:
                if param.name is not None and param.name not in ctx.params:
                    ctx.params[param.name] = _default(param)
            if not ctx.params.get("task"):
                ctx.params["task"] = _task_arg(raw)
            return []


class _HookGroup(click.Group):
    """An unknown hook name run by an agent CLI fails closed too."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        unknown = bool(name) and name not in self.commands and not name.startswith("-")
        if unknown and not sys.stdin.isatty():
            return name, _unknown_hook(name), args[1:]
        return super().resolve_command(ctx, args)


@app.group("hook", cls=_HookGroup)
def hook_group() -> None:
    """Run donegate's completion gate as an agent CLI's hook, and install it."""


def _hook_options(fn: Any) -> Any:
    options = [
        click.option("--task", "task", help="The task file whose checks decide."),
        click.option("--subagent-task", help="The task judging subagent stops (default: TASK)."),
        click.option("--deadline", type=click.FloatRange(min=1.0),
                     help="Seconds the hook may take (default: well inside the CLI's timeout)."),
        click.option("--fail-open", is_flag=True,
                     help="Let the stop through when the hook itself fails (default: block)."),
        click.option("--max-continuations", type=click.IntRange(min=0),
                     help="Override the task's max_continuations."),
        click.option("--budget-usd", type=click.FloatRange(min=0.0, min_open=True),
                     help="Override the task's budget.usd."),
        click.option("--budget-tokens", type=click.IntRange(min=1),
                     help="Override the task's budget.tokens."),
        click.option("--check-timeout", type=click.FloatRange(min=0.1), default=120.0,
                     show_default=True, help="A check's timeout when it sets none."),
        click.option("--exec-run", hidden=True, help="The donegate exec run this hook serves."),
        click.option("--freeze-pid", type=click.IntRange(min=1), hidden=True,
                     help="The sandbox whose processes stop while the hook looks (exec)."),
        isolation_option,
    ]  # fmt: skip
    for option in reversed(options):
        fn = option(fn)
    return fn


def _run(agent: AgentCLI, **params: Any) -> None:
    ctx = click.get_current_context()
    options = HookOptions(
        task=params.get("task"),
        subagent_task=params.get("subagent_task"),
        deadline=params.get("deadline"),
        fail_open=bool(params.get("fail_open")),
        max_continuations=params.get("max_continuations"),
        budget_usd=params.get("budget_usd"),
        budget_tokens=params.get("budget_tokens"),
        exec_run=params.get("exec_run"),
        freeze=(params["freeze_pid"],) if params.get("freeze_pid") else (),
        check_timeout=params.get("check_timeout") or 120.0,
        usage_error=ctx.meta.get(_USAGE),
    )
    stdin = b"" if sys.stdin.isatty() else sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    outcome = run_hook(agent, stdin, options, started=ctx.meta.get(_STARTED))
    for line in outcome.log:
        click.echo(line, err=True)
    if outcome.output is not None:
        click.echo(json.dumps(outcome.output, ensure_ascii=False))
    sys.exit(0)


def _make(name: str, agent: AgentCLI, help_text: str) -> None:
    @hook_group.command(name, cls=_HookCommand, help=help_text)
    @_hook_options
    def command(**params: Any) -> None:
        _run(agent, **params)


for _agent in AGENTS.values():
    _make(
        _agent.name,
        _agent,
        f"{_agent.title}'s hook: read its JSON on stdin; block while TASK is not done.",
    )
_make("claude-stop", AGENTS["claude"], "Alias of `donegate hook claude`.")


def _unknown_hook(name: str) -> click.Command:
    known = ", ".join(AGENTS)

    def command(**params: Any) -> None:
        ctx = click.get_current_context()
        ctx.meta.setdefault(_USAGE, f"no such hook {name!r} (expected {known})")
        _run(AgentCLI(), **params)  # no CLI known: the answer every CLI accepts

    made: click.Command = click.command(name, cls=_HookCommand)(_hook_options(command))
    return made


@hook_group.command("install")
@click.argument("agent_name", metavar="claude|codex|gemini")
@click.option("--task", required=True, type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="The project folder whose config is written.",
)
@click.option("--dry-run", is_flag=True, help="Show the change as a diff; write nothing.")
@click.option(
    "--timeout",
    "timeout_s",
    type=click.IntRange(min=10),
    default=600,
    show_default=True,
    help="The hook timeout written to the CLI's config (seconds).",
)
@click.option(
    "--trust",
    is_flag=True,
    help="Codex: record the hooks' trusted_hash in $CODEX_HOME/config.toml.",
)
@click.option("--no-doctor", is_flag=True, help="Skip `hook doctor` after installing.")
def install_command(
    *,
    agent_name: str,
    task: str,
    directory: str,
    dry_run: bool,
    timeout_s: int,
    trust: bool,
    no_doctor: bool,
) -> None:
    """Add the gate to a CLI's project config, merging with what is there."""
    from donegate.cli.check import refuse_bad_task
    from donegate.harness.agents.install import plan_codex_trust, plan_install

    agent = agent_named(agent_name)
    if trust and agent.name != "codex":
        raise click.UsageError("--trust is for codex only")
    # a gate installed on a task it cannot read or run would only ever block
    refuse_bad_task(task, mode="hook install")
    plans = plan_install(agent, Path(task), Path(directory), timeout_s=timeout_s, trust=trust)
    _show(plans, dry_run)
    if trust:
        if dry_run:
            click.echo(
                "codex: --trust would then record the hooks' hashes in config.toml", err=True
            )
        else:
            _show([plan_codex_trust(agent, Path(task), Path(directory))], dry_run=False)
    if not (dry_run or no_doctor):
        from donegate.cli._doctor import run_doctor

        run_doctor(agent, Path(directory), Path(task))


@hook_group.command("doctor")
@click.argument("agent_name", metavar="claude|codex|gemini")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="The project folder whose hook is checked.",
)
@click.option("--task", type=click.Path(dir_okay=False, exists=True),
              help="The task the hook gates (default: any donegate hook).")  # fmt: skip
@click.option(
    "--static",
    is_flag=True,
    help="Read the config only; do not run the CLI against a local emulator.",
)
@click.option(
    "--probe-timeout",
    type=click.FloatRange(min=5.0),
    default=180.0,
    show_default=True,
    help="Seconds the live probe's CLI run may take.",
)
def doctor_command(
    agent_name: str, directory: str, task: str | None, static: bool, probe_timeout: float
) -> None:
    """Prove AGENT's installed hook fires: run the CLI headless against a local emulator, with
    a probe task that must block once; report what stands in the way; exit 1 if anything does."""
    from donegate.cli._doctor import run_doctor

    agent = agent_named(agent_name)
    ok = run_doctor(agent, Path(directory), Path(task) if task else None, live=not static,
                    timeout=probe_timeout)  # fmt: skip
    sys.exit(0 if ok else 1)


@hook_group.command("uninstall")
@click.argument("agent_name", metavar="claude|codex|gemini")
@click.option("--task", required=True, type=click.Path(dir_okay=False))
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="The project folder whose config is changed.",
)
@click.option("--dry-run", is_flag=True, help="Show the change as a diff; write nothing.")
def uninstall_command(agent_name: str, task: str, directory: str, dry_run: bool) -> None:
    """Remove exactly the hooks install added for TASK."""
    from donegate.harness.agents.install import plan_uninstall

    agent = agent_named(agent_name)
    _show(plan_uninstall(agent, Path(task), Path(directory)), dry_run)


def _show(plans: Sequence[Any], dry_run: bool) -> None:
    from donegate.harness.agents.install import apply_plan

    for plan in plans:
        if not plan.changed:
            click.echo(f"{plan.path}: unchanged")
        elif dry_run:
            click.echo(plan.diff(), nl=False)
        else:
            done = apply_plan(plan)
            click.echo(f"{done.path}: {done.summary}")
        for note in plan.notes:
            click.echo(note, err=True)


def _default(param: click.Parameter) -> Any:
    if isinstance(param, click.Option) and param.is_flag:
        return False
    default = param.default
    return default if isinstance(default, str | int | float) else None


def _task_arg(args: list[str]) -> str | None:
    """``--task`` from raw arguments that did not parse (so the count lands in its place)."""
    for i, arg in enumerate(args):
        if arg == "--task" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--task="):
            return arg.removeprefix("--task=")
    return None
