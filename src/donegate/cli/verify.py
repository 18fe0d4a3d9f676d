"""``donegate verify CERT``: re-prove a completion certificate.

The signature and every digest are checked first; a certificate failing them runs nothing (no
check, no process) and is one line. The checks re-run are the certified ones, or, with
``--task``, the task file's, once they are shown equal to the certified ones.

Exit codes: 0 signature, digests and every re-run check hold; 1 they do not (or the task is
still awaiting review); 2 bad input (not a certificate, no signing key, a bad task file).
"""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.harness.certificate import verify_certificate
from donegate.harness.spec import load_task


@app.command("verify")
@click.argument("cert", type=click.Path(dir_okay=False))
@click.option("--workdir", type=click.Path(file_okay=False), help="Re-run the checks here.")
@click.option(
    "--task",
    "task_path",
    type=click.Path(dir_okay=False),
    help="Re-run this task file's checks (they must equal the certified ones).",
)
@click.option("--no-rerun", is_flag=True, help="Confirm the signature and digests only.")
@click.option("--strict-output", is_flag=True, help="Check outputs must match byte for byte.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def verify_command(
    cert: str,
    *,
    workdir: str | None,
    task_path: str | None,
    no_rerun: bool,
    strict_output: bool,
    as_json: bool,
) -> None:
    """Confirm CERT's signature and digests, then re-run its checks."""
    task = load_task(task_path) if task_path is not None else None
    ok, problems = verify_certificate(
        cert, workdir=workdir, rerun=not no_rerun, strict_output=strict_output, task=task
    )
    if as_json:
        click.echo(json.dumps({"ok": ok, "problems": problems}))
    else:
        console = make_console()
        if ok:
            console.print(f"[bold green]verified[/] {escape(cert)}")
        elif len(problems) == 1:
            console.print(f"[bold red]mismatch[/] {escape(cert)}: {escape(problems[0])}")
        else:
            console.print(f"[bold red]mismatch[/] {escape(cert)}")
            for problem in problems:
                console.print(f"  - {escape(problem)}")
    sys.exit(0 if ok else 1)
