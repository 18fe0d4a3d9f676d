"""``donegate init [DIR]``: scaffold a gated example task that ``donegate run`` passes at once.

Exit codes: 0 written, 2 a file it would write exists already (nothing is written).
"""

from __future__ import annotations

import click

from donegate.cli._app import app
from donegate.cli._console import escape, make_console
from donegate.harness.scaffold import DEFAULT_DIR, scaffold


@app.command("init")
@click.argument("directory", default=DEFAULT_DIR, type=click.Path(file_okay=False))
def init_command(directory: str) -> None:
    """Write an example task into DIRECTORY (default: my-task): a task file, a scripted agent
    that plays it, a README, and the workdir the agent fixes."""
    written = scaffold(directory)
    console = make_console()
    for path in written:
        console.print(f"wrote {escape(str(path))}")
    task = escape(str(written[0]))
    console.print(f"next: donegate check {task} && donegate run {task}")
