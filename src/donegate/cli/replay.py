"""``donegate replay``: run the loop on a script and check its invariants and expectations."""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.cli._types import COUNT
from donegate.testing.player import SDK_APIS


@app.command("replay")
@click.argument("script", type=click.Path(dir_okay=False))
@click.option("--api", type=click.Choice(SDK_APIS), help="Serve turns in this wire format.")
@click.option("--stream", is_flag=True, help="Stream the responses (SSE).")
@click.option("--max-steps", type=COUNT, help="Override the script's step limit.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def replay_command(
    script: str, api: str | None, stream: bool, max_steps: int | None, as_json: bool
) -> None:
    """Replay SCRIPT: exit 0 when every invariant and expectation holds, 1 when one fails.

    As strict as the player: turns left unplayed fail unless `expect` declares `unused_turns`,
    and so does a call past the last turn. Calls to tools the run did not offer are warnings.
    """
    from donegate.testing.replay import replay
    from donegate.testing.script import load_script

    done = replay(load_script(script), api=api, stream=stream, max_steps=max_steps)
    summary = done.summary()
    for warning in done.warnings:
        click.echo(f"donegate: warning: {warning}", err=True)
    if as_json:
        click.echo(json.dumps(summary))
    else:
        console = make_console()
        style = "green" if summary["status"] == "complete" else "yellow"
        console.print(
            f"[bold]{escape(script)}[/] via {api or 'direct'}{' (stream)' if stream else ''}"
        )
        console.print(f"  status  [{style}]{summary['status']}[/] ({escape(summary['reason'])})")
        console.print(f"  model calls {summary['model_calls']}, tools {summary['tool_calls']}")
        if summary["text"]:
            console.print(f"  text    {escape(summary['text'])}")
        for failure in done.failures:
            console.print(f"  [red]FAIL[/] {escape(failure)}")
    sys.exit(1 if done.failures else 0)
