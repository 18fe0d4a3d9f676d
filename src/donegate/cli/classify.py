"""``donegate classify``: how did this provider response end?"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from donegate._files import read_stream, read_text
from donegate.cli._app import app
from donegate.cli._types import STATUS
from donegate.errors import UserError
from donegate.models.registry import APIS, classify

MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest response body classified (a whole recorded stream fits)."""


def read_input(path: str) -> str:
    """The text of FILE, or of stdin for ``-``; a `UserError` names an unreadable file."""
    if path == "-":
        return read_stream(sys.stdin.buffer, source="stdin", limit=MAX_BODY_BYTES)
    return read_text(path, limit=MAX_BODY_BYTES)


@app.command("classify")
@click.option("--api", "api", required=True, type=click.Choice(APIS), help="The wire format.")
@click.option("--stream", is_flag=True, help="FILE is raw SSE text, as a server sends it.")
@click.option(
    "--status", default=200, show_default=True, type=STATUS, help="The HTTP status of the body."
)
@click.argument("file")
def classify_command(api: str, stream: bool, status: int, file: str) -> None:
    """Classify one provider response body (FILE, or - for stdin) and print its ending."""
    text = read_input(file)
    body: Any = text
    if not stream or not 200 <= status < 300:
        try:
            body = json.loads(text)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
            if 200 <= status < 300:
                raise UserError(f"{file}: not valid JSON: {exc}") from None
            body = text  # error bodies may be plain text or HTML
    turn = classify(api, body, stream=stream, status=status)
    click.echo(
        json.dumps(
            {
                "ending": turn.ending.value,
                "tool_calls": len(turn.tool_calls),
                "text_nonempty": bool(turn.text.strip()),
                "raw_reason": turn.raw_reason,
            }
        )
    )
