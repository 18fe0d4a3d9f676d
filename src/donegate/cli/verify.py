"""``donegate verify CERT``: re-prove a completion certificate.

Exit codes: 0 every digest matches and every check passes again, 1 a mismatch, 2 bad input.
"""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.harness.certificate import verify_certificate


@app.command("verify")
@click.argument("cert", type=click.Path(dir_okay=False))
@click.option("--workdir", type=click.Path(file_okay=False), help="Re-run the checks here.")
@click.option("--no-rerun", is_flag=True, help="Confirm the digests only.")
@click.option("--strict-output", is_flag=True, help="Check outputs must match byte for byte.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def verify_command(
    cert: str, workdir: str | None, no_rerun: bool, strict_output: bool, as_json: bool
) -> None:
    """Confirm CERT's digests and re-run its checks."""
    ok, problems = verify_certificate(
        cert, workdir=workdir, rerun=not no_rerun, strict_output=strict_output
    )
    if as_json:
        click.echo(json.dumps({"ok": ok, "problems": problems}))
    else:
        console = make_console()
        if ok:
            console.print(f"[bold green]verified[/] {escape(cert)}")
        else:
            console.print(f"[bold red]mismatch[/] {escape(cert)}")
            for problem in problems:
                console.print(f"  - {escape(problem)}")
    sys.exit(0 if ok else 1)
