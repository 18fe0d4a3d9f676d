"""``donegate verify CERT``: re-prove a completion certificate.

The signature and every digest are checked first; a certificate failing them runs nothing (no
check, no process) and is one line. The checks re-run are the certified ones, or, with
``--task``, the task file's, once they are shown equal to the certified ones.

With no flags every check kind re-runs: the certificate records the task file, the ``python:``
checks' ``check_path`` and their modules' digests; one of those gone or changed is named, with
the hint to pass ``--task``.

The signature is checked with a public key only: ``--public-key`` (repeatable), else the keys
in ``$DONEGATE_TRUSTED_KEYS``, else the local key's public half. A certificate signed by any
other key is exit 1, one line. A legacy (HMAC) certificate verifies with its old key and is
reported ``legacy``. CERT must be a regular file (a FIFO is refused, unread).

Exit codes: 0 signature, digests and every re-run check hold; 1 they do not (or the task is
still awaiting review, or a recorded task file or check module is gone or changed); 2 bad input
(not a certificate, no key to check with, a bad task file); 4 a check cannot run on this machine
(a module, program or driver it needs is missing here: the environment, not the certificate).
"""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.cli._types import isolation_option
from donegate.errors import CheckEnvironmentError, UserError
from donegate.harness.certificate import verify_certificate
from donegate.harness.signing import signature_scheme, trusted_keys
from donegate.harness.spec import load_task
from donegate.records.certificate import read_certificate
from donegate.sandbox import resolve


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
@click.option(
    "--public-key",
    "public_keys",
    multiple=True,
    metavar="FILE|TEXT",
    help="Trust this public key (ed25519:BASE64, or a file of them); repeatable. Default: "
    "$DONEGATE_TRUSTED_KEYS, else the local key's public half.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@isolation_option
def verify_command(
    cert: str,
    *,
    workdir: str | None,
    task_path: str | None,
    no_rerun: bool,
    strict_output: bool,
    as_json: bool,
    public_keys: tuple[str, ...],
) -> None:
    """Confirm CERT's signature and digests, then re-run its checks."""
    task = load_task(task_path) if task_path is not None else None
    trusted = trusted_keys(public_keys)
    raw = read_certificate(cert)  # a FIFO or a huge file is one line here, before anything
    scheme = signature_scheme(raw)
    try:
        ok, problems = verify_certificate(
            cert,
            workdir=workdir,
            rerun=not no_rerun,
            strict_output=strict_output,
            task=task,
            trusted=trusted,
        )
    except CheckEnvironmentError as exc:
        reason = " ".join(str(exc).split())
        if as_json:
            click.echo(json.dumps({"ok": False, "problems": [], "environment": reason}))
        else:
            click.echo(
                f"donegate: cannot re-run a check on this machine: {reason} (the signature and "
                "digests hold: --no-rerun; or pass --task TASK for the task's check_path)",
                err=True,
            )
        sys.exit(4)
    certified, now = _isolation(cert), resolve().as_data()
    if as_json:
        isolation = {"certified": certified, "rerun": None if no_rerun else now}
        click.echo(
            json.dumps(
                {"ok": ok, "problems": problems, "signature": scheme, "isolation": isolation}
            )
        )
    else:
        console = make_console()
        legacy = " (legacy HMAC signature)" if scheme == "legacy" else ""
        if ok:
            console.print(f"[bold green]verified[/]{legacy} {escape(cert)}")
            rerun = "" if no_rerun else f"; checks re-run under {_shown(now)}"
            console.print(f"isolation: certified under {escape(_shown(certified))}{rerun}")
        elif len(problems) == 1:
            console.print(f"[bold red]mismatch[/] {escape(cert)}: {escape(problems[0])}")
        else:
            console.print(f"[bold red]mismatch[/] {escape(cert)}")
            for problem in problems:
                console.print(f"  - {escape(problem)}")

    sys.exit(0 if ok else 1)


def _isolation(path: str) -> dict[str, str] | None:
    """The isolation the certificate records (None: made before it was recorded)."""
    try:
        found = read_certificate(path).get("isolation")
    except UserError:
        return None
    return found if isinstance(found, dict) else None


def _shown(isolation: dict[str, str] | None) -> str:
    if isolation is None:
        return "unrecorded (a certificate older than isolation records)"
    version = isolation.get("version")
    return f"{isolation.get('backend')}" + (f" ({version})" if version else "")
