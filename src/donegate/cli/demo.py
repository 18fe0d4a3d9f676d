"""``donegate demo``: seed 002's failure and its fix, offline, in a few seconds.

A small repository with a failing test; a scripted agent, served by the provider emulator over
loopback HTTP to the real Anthropic SDK, that posts a progress report mid-task and then claims
"all tests pass" without running them. A naive loop stops at the progress report; the gate
continues the run until the harness's own test run passes, and writes a completion certificate.
With ``--model`` (or ``ANTHROPIC_API_KEY`` set) the same task runs against a real model.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from donegate._extras import require
from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.cli._progress import LiveProgress
from donegate.harness.checks import run_checks
from donegate.harness.demo import demo_script, demo_task, make_repo, run_naive
from donegate.harness.runner import run_task
from donegate.models.base import Model
from donegate.models.infer import infer_model
from donegate.records.status import TaskStatus
from donegate.testing.emulator import CONVERSATION_HEADER, Emulator

MODEL = "claude-opus-5-5"


def scripted_model(emulator: Emulator) -> Model:
    """A fresh scripted agent on the emulator, reached through the official Anthropic SDK."""
    import anthropic

    from donegate.models.sdk import AnthropicModel
    from donegate.testing.script import parse_script

    name = f"demo{len(emulator.conversations)}"
    emulator.load(parse_script(demo_script(), source="demo"), name=name)
    client = anthropic.Anthropic(
        api_key="demo", base_url=emulator.base_url, default_headers={CONVERSATION_HEADER: name}
    )
    return AnthropicModel(client, MODEL)


@app.command("demo")
@click.option("--dir", "directory", type=click.Path(file_okay=False), help="Where to build.")
@click.option("--model", help="Run against a real model, e.g. anthropic:claude-sonnet-4-5.")
def demo_command(directory: str | None, model: str | None) -> None:
    """Show a naive loop stopping early beside the gate finishing the task (offline)."""
    if model is None and os.environ.get("ANTHROPIC_API_KEY"):
        model = f"anthropic:{MODEL}"
    # Everything that can be missing is named now, in one line, before anything is printed.
    if model is None:
        require("anthropic")
    else:
        infer_model(model)
    with contextlib.ExitStack() as stack:
        if model is None:
            emulator = stack.enter_context(Emulator())
            make: Callable[[], Model] = lambda: scripted_model(emulator)  # noqa: E731
        else:
            make = lambda: infer_model(model)  # noqa: E731
        _demo(directory, make)


def _demo(directory: str | None, make_model: Callable[[], Model]) -> None:
    console = make_console()
    base = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="donegate-demo-"))
    naive_root = make_repo(base / "naive")
    gated_root = make_repo(base / "gated")
    spec = demo_task(gated_root)
    console.print(f"[bold]donegate demo[/]: {escape(spec.prompt)}")
    console.print(
        f"  repository: {escape(str(base))} (a bug in stats.mean, a failing test)\n",
        soft_wrap=True,
    )

    console.print("[bold]1. naive loop[/] (any text-only turn ends the run)")
    naive = run_naive(spec, make_model(), naive_root)
    naive_checks = run_checks(spec.checks, naive_root)
    console.print(f"  stopped after {naive.model_calls} model calls: {escape(repr(naive.text))}\n")

    console.print("[bold]2. gated run[/] (checks, checklist, bounded continuation)")
    live = LiveProgress(console, max_continuations=spec.max_continuations, prefix="  ")
    result = run_task(
        spec, model=make_model(), events=live.event, on_round=live.round, completion_tool=None,
        output_dir=base / "out",  # beside the repositories, outside the agent's workdir
    )  # fmt: skip

    table = Table(title="the same agent, the same task")
    table.add_column("")
    table.add_column("naive loop")
    table.add_column("donegate gate")
    gated_tests = all(c.passed for c in result.checks)
    table.add_row("model calls", str(naive.model_calls), str(result.model_calls))
    table.add_row("continuations", "0", str(result.continuations))
    table.add_row("ended on", _short(naive.text), _short(result.run.text))
    table.add_row(
        "harness test run",
        "[red]FAILS[/]" if not all(c.passed for c in naive_checks) else "[green]passes[/]",
        "[green]passes[/]" if gated_tests else "[red]FAILS[/]",
    )
    table.add_row("status", f"{naive.status.value} (believed)", result.status)
    console.print()
    console.print(table)
    if result.certificate is not None:
        # paths and commands are printed unwrapped, so they can be pasted as printed
        console.print(f"\ncertificate: {escape(str(result.certificate))}", soft_wrap=True)
        console.print(
            f"re-check it: {escape(command_name())} verify {escape(str(result.certificate))}",
            soft_wrap=True,
        )
    if result.status != TaskStatus.DONE:
        console.print(f"[red]the gated run did not finish: {escape(result.reason)}[/]")
        sys.exit(1)


def _short(text: str, limit: int = 48) -> str:
    line = " ".join(text.split())
    return escape(line if len(line) <= limit else line[: limit - 3] + "...")


def command_name() -> str:
    """How to call donegate again from this shell: ``donegate`` when it is on PATH, else the
    path it was started by (``.venv/bin/donegate`` from the README, whose venv is not active),
    else ``python -m donegate``."""
    if shutil.which("donegate"):
        return "donegate"
    started = sys.argv[0] if sys.argv else ""
    if Path(started).name == "donegate":
        return started
    return f"{sys.executable} -m donegate"
