"""``donegate run TASK``: run a task behind the completion gate.

Exit codes: 0 done, 3 escalated or awaiting review (``closure: human``: a person must act either
way; ``donegate escalations approve`` closes a review), 4 failed, 2 usage error (a bad task
file, an unknown model).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from donegate.cli._app import app
from donegate.cli._types import isolation_option
from donegate.errors import UserError

if TYPE_CHECKING:
    from rich.console import Console

    from donegate.harness.runner import TaskResult
    from donegate.harness.spec import CheckSpec, TaskSpec
    from donegate.models.base import Model

# The runner, the task models, rich and the model adapters are imported by the functions that
# use them: `run --help` (and an option click refuses) needs none of them.

__all__ = ["EXIT_CODES", "check_line", "resolve_model"]

EXIT_CODES = {"done": 0, "awaiting_review": 3, "escalated": 3, "failed": 4}
"""The exit code of each task status."""


def resolve_model(value: str, what: str = "model", *, task: TaskSpec | None = None) -> Model:
    """A model from ``provider:model``, or a script player from ``script:FILE``.

    A script's turns drive the task's real tools; its stubs are not used. Given the `task` the
    script plays, a prompt in the script must be the task's, and stubs named like a task tool
    are reported as ignored.
    """
    from donegate.models.infer import SCRIPT_SCHEME, infer_model

    try:
        model = infer_model(value)
    except UserError as exc:
        if not value.startswith(SCRIPT_SCHEME):
            raise
        raise UserError(f"{what} {exc}") from None
    script = getattr(model, "script", None) if value.startswith(SCRIPT_SCHEME) else None
    if script is not None and task is not None:
        from donegate.harness.runner import COMPLETION_TOOL
        from donegate.testing.script import check_for_task

        names = [t if isinstance(t, str) else t.tool_name for t in task.tools]
        for line in check_for_task(script, prompt=task.prompt, tools=[*names, COMPLETION_TOOL]):
            click.echo(f"donegate: warning: {line}", err=True)
    return model


@app.command("run")
@click.argument("task", type=click.Path(dir_okay=False))
@click.option("--model", "model_opt", help="provider:model, or script:FILE (a script file).")
@click.option("--verifier", "verifier_opt", help="The verifier model (overrides the task's).")
@click.option("--workdir", type=click.Path(file_okay=False), help="Override the task's workdir.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@isolation_option
@click.option("--budget-usd", type=float, help="The task's budget in US dollars (budget.usd).")
@click.option("--budget-tokens", type=int, help="The task's budget in tokens (budget.tokens).")
@click.option("--max-continuations", type=click.IntRange(min=0),
              help="Override the task's max_continuations.")  # fmt: skip
@click.option("--no-preflight", is_flag=True,
              help="Skip the checks that look at this machine (programs on PATH).")  # fmt: skip
def run_command(
    task: str,
    *,
    model_opt: str | None,
    verifier_opt: str | None,
    workdir: str | None,
    as_json: bool,
    budget_usd: float | None,
    budget_tokens: int | None,
    max_continuations: int | None,
    no_preflight: bool,
) -> None:
    """Run TASK (YAML or JSON) until its completion gate accepts, escalates or fails.

    Every problem `donegate check` reports refuses the task before any model call.
    """
    from rich.markup import escape

    from donegate.cli._console import make_console
    from donegate.cli._progress import LiveProgress
    from donegate.cli.check import refuse_bad_task
    from donegate.harness.runner import run_task
    from donegate.harness.spec import load_task, with_budget

    refuse_bad_task(task, machine=not no_preflight)
    spec = with_budget(load_task(task), usd=budget_usd, tokens=budget_tokens)
    if max_continuations is not None:
        spec = spec.model_copy(update={"max_continuations": max_continuations})
    model_name = model_opt or spec.model
    if model_name is None:
        raise UserError(f"{task}: no model: pass --model or set `model` in the task")
    model = resolve_model(model_name, task=spec)
    verifier_name = verifier_opt or spec.verifier
    verifier = resolve_model(verifier_name, "verifier") if verifier_name else None
    err = make_console(stderr=True)
    live = LiveProgress(
        err,
        max_continuations=spec.max_continuations,
        header=f"[bold]{escape(spec.id)}[/] with {escape(model.name)}",
    )
    result = run_task(
        spec,
        model=model,
        verifier_model=verifier,
        workdir=workdir,
        events=live.event,
        on_round=live.round,
        task_file=task,
        on_check=lambda check: check_line(err, check),
    )
    for line in getattr(model, "warnings", ()):  # a script's calls to tools the task lacks
        click.echo(f"donegate: warning: {line}", err=True)
    if as_json:
        click.echo(json.dumps(result.summary()))
    else:
        print_result(make_console(), result)
    sys.exit(EXIT_CODES[result.status])


@contextlib.contextmanager
def check_line(console: Console, check: CheckSpec) -> Iterator[None]:
    """While `check` runs: on a terminal a live line with its name and elapsed time (gone when
    it ends), else one plain ``running check NAME...`` line, so a long test run never looks
    hung. Checks running at once (``run:`` checks do) get the plain line but for the first:
    a terminal holds one live display."""
    from rich.markup import escape

    name = escape(check.name)
    if not console.is_terminal or not _LIVE.acquire(blocking=False):
        console.print(f"  running check {name}...", highlight=False)
        yield
        return
    try:
        with _live_line(console, name):
            yield
    finally:
        _LIVE.release()


_LIVE = threading.Lock()


@contextlib.contextmanager
def _live_line(console: Console, name: str) -> Iterator[None]:
    """One transient live line (rich imported only when a terminal shows it)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn(f"running check {name}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        progress.add_task("check", total=None)
        yield


def print_result(console: Console, result: TaskResult) -> None:
    """The result for a person."""
    from rich.markup import escape

    from donegate.records.status import TaskStatus

    style = {"done": "green", "awaiting_review": "yellow", "escalated": "yellow", "failed": "red"}[
        result.status
    ]
    console.print(
        f"[bold {style}]{result.status}[/] {escape(result.task_id)}: {escape(result.reason)}"
    )
    console.print(
        f"  model calls {result.model_calls}, continuations {result.continuations}"
        + (f", verifier calls {result.verifier_calls}" if result.verifier_calls else "")
    )
    for check in result.checks:
        mark = "[green]pass[/]" if check.passed else "[red]FAIL[/]"
        console.print(f"  {mark} {escape(check.name)}: {escape(check.detail)}")
    if result.certificate is not None:
        console.print(f"  certificate {escape(str(result.certificate))}")
    if result.status == TaskStatus.AWAITING_REVIEW:
        console.print(
            f"  approve it: donegate escalations approve {escape(str(result.certificate))}"
        )
    if result.escalation is not None:
        files = result.escalation.files
        what = {"awaiting_review": "review report", "failed": "failure report"}.get(
            result.status, "escalation report"
        )
        console.print(f"  {what} {escape(files.markdown if files is not None else '')}")
