"""The ``donegate`` command: the only place that prints or exits.

Exit codes: 0 success, 1 an expectation or invariant failed, 2 bad input or usage, 3 escalated,
4 failed.
"""

from __future__ import annotations

import sys

import click

from donegate.cli import serve  # noqa: F401 - registers ``donegate serve``
from donegate.cli._app import app
from donegate.errors import DonegateError

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs `app`, turning donegate errors into one line on stderr and exit 2."""
    try:
        app.main(args=argv, prog_name="donegate", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.Abort:
        click.echo("aborted", err=True)
        sys.exit(2)
    except DonegateError as exc:
        click.echo(f"donegate: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"donegate: {exc.filename or ''}: {exc.strerror or exc}", err=True)
        sys.exit(2)
