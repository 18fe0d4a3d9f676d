"""The command group, with each command's module imported only when that command runs.

Every command lives in its own module and registers itself on `app` when imported (its
``@app.command`` decorator). `COMMANDS` names, for each command, the module that registers it
and its one-line help, so ``donegate --help`` lists every command without importing any of them
and ``donegate hook claude`` imports the hook's module alone: a command path pays only for what
it uses (click's lazy-group pattern). A contract test (tests/cli/test_lazy.py) checks the table
against the commands' own help, so the listing cannot drift from what the modules say.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click

__all__ = ["COMMANDS", "LazyCommand", "app"]


class LazyCommand(NamedTuple):
    """Where a top-level command is registered, and what ``donegate --help`` says of it."""

    module: str
    """The module whose import adds the command to `app`."""
    summary: str
    """The first paragraph of the command's help, on one line (what the listing shortens)."""


_CLI = "donegate.cli."
COMMANDS: dict[str, LazyCommand] = {
    "audit": LazyCommand(_CLI + "audit",
        "Run COMMAND once per scenario against a fresh emulator and judge each ending."),
    "certificate": LazyCommand(_CLI + "certificate", "Export completion certificates."),
    "check": LazyCommand(_CLI + "check",
        "Report every problem in TASK (a task file) without running anything."),
    "classify": LazyCommand(_CLI + "classify",
        "Classify one provider response body (FILE, or - for stdin) and print its ending."),
    "demo": LazyCommand(_CLI + "demo",
        "Show a naive loop stopping early beside the gate finishing the task (offline)."),
    "emulate": LazyCommand(_CLI + "emulate",
        "Serve SCRIPTS on the providers' real endpoints until interrupted."),
    "escalations": LazyCommand(_CLI + "escalations",
        "Tasks handed to a person: read the report, then resolve, requeue or approve."),
    "exec": LazyCommand(_CLI + "exec",
        "Run AGENT ARGS... headless with TASK's gate; exit 0 only when its checks pass."),
    "hook": LazyCommand(_CLI + "hook",
        "Run donegate's completion gate as an agent CLI's hook, and install it."),
    "init": LazyCommand(_CLI + "init",
        "Write an example task into DIRECTORY (default: my-task): a task file, a scripted "
        "agent that plays it, a README, and the workdir the agent fixes."),
    "key": LazyCommand(_CLI + "key",
        "The signing key: make it, show its public half, export it for verifiers."),
    "outbox": LazyCommand(_CLI + "outbox",
        "Notifications of tasks' ends: webhooks and commands, and how their delivery stands."),
    "record": LazyCommand(_CLI + "emulate",
        "Record a real conversation through a proxy into a script file (checked by replay)."),
    "replay": LazyCommand(_CLI + "replay",
        "Replay SCRIPT: exit 0 when every invariant and expectation holds, 1 when one fails."),
    "reviewers": LazyCommand(_CLI + "reviewers",
        "The people who may approve, resolve and requeue: a secret each, only its hash kept."),
    "run": LazyCommand(_CLI + "run",
        "Run TASK (YAML or JSON) until its completion gate accepts, escalates or fails."),
    "serve": LazyCommand(_CLI + "serve",
        "Serve the review UI: escalations to resolve or requeue, tasks, stop reasons."),
    "stats": LazyCommand(_CLI + "stats",
        "How runs ended in the window, by task type, status and ending; spikes are flagged."),
    "submit": LazyCommand(_CLI + "tasks", "Queue TASK (a YAML or JSON task file) for the workers."),
    "tasks": LazyCommand(_CLI + "tasks", "Inspect and steer queued tasks."),
    "validate": LazyCommand(_CLI + "check",
        "The same as `donegate check TASK`: report every problem in TASK, running nothing."),
    "verify": LazyCommand(_CLI + "verify",
        "Confirm CERT's signature and digests, then re-run its checks."),
    "worker": LazyCommand(_CLI + "worker",
        "Claim queued tasks, run them behind the completion gate, and record how they ended."),
}  # fmt: skip
"""Every top-level command by name: a new command module adds its row, or it is never loaded."""


class _LazyGroup(click.Group):
    """A group that imports a command's module the first time the command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(COMMANDS[cmd_name].module)  # registers it on `app`
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing from `COMMANDS`, shortened as click shortens a command's own help."""
        listed = {
            name: self.commands.get(name) or click.Command(name, help=COMMANDS[name].summary)
            for name in self.list_commands(ctx)
        }
        shown = {name: cmd for name, cmd in listed.items() if not cmd.hidden}
        if shown:
            limit = formatter.width - 6 - max(map(len, shown))
            with formatter.section("Commands"):
                formatter.write_dl([(n, c.get_short_help_str(limit)) for n, c in shown.items()])


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="donegate")
def app() -> None:
    """Run tool-calling LLM agents to a finish that can be proven."""
