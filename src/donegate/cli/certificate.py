"""``donegate certificate export CERT --in-toto [--output FILE] [--workdir DIR] [--subject GLOB]``.

Writes the certificate as an in-toto Statement v1 (`donegate.harness.intoto`) that
``actions/attest`` signs. Exit codes: 0 written, 2 bad input (not a certificate, no file to
attest, a pattern leaving the workdir).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from donegate.cli._app import app
from donegate.errors import UserError
from donegate.harness.intoto import statement


@app.group("certificate")
def certificate_group() -> None:
    """Export completion certificates."""


@certificate_group.command("export")
@click.argument("cert", type=click.Path(dir_okay=False))
@click.option("--in-toto", "in_toto", is_flag=True, help="As an in-toto Statement v1.")
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="Write to FILE (default: standard output).")  # fmt: skip
@click.option("--workdir", type=click.Path(file_okay=False),
              help="Where the delivered files are (default: the certificate's).")  # fmt: skip
@click.option("--subject", "subjects", multiple=True, metavar="GLOB",
              help="A delivered file or glob in the workdir (repeatable).")  # fmt: skip
def export_command(
    cert: str, *, in_toto: bool, output: str | None, workdir: str | None, subjects: tuple[str, ...]
) -> None:
    """Write CERT in another form (--in-toto: subjects are the delivered files' digests)."""
    if not in_toto:
        raise UserError("donegate certificate export: name a form (--in-toto)")
    text = json.dumps(statement(cert, workdir=workdir, subjects=subjects), ensure_ascii=False)
    if output is None:
        click.echo(text)
    else:
        Path(output).write_text(text + "\n", encoding="utf-8")
