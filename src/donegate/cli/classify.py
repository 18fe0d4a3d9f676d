"""``donegate classify``: how did this provider response end?

Prints one JSON object: ``ending``, ``tool_calls``, ``text_nonempty``, ``raw_reason`` and the
turn's ``detail`` (why: "stream ended before its final event", "no finish reason", the filter
categories...). A body shaped like another wire format than ``--api`` gets a one-line hint on
stderr naming the format it looks like.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from donegate._files import read_stream, read_text
from donegate.cli._app import app
from donegate.cli._types import STATUS
from donegate.errors import UserError, WireFormatError
from donegate.models.registry import APIS, classify
from donegate.models.sniff import looks_like, same_family

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
    hint = _other_format(api, body) if 200 <= status < 300 else None
    try:
        turn = classify(api, body, stream=stream, status=status)
    except WireFormatError as exc:
        raise UserError(f"{exc}{'; ' + hint if hint else ''}") from None
    if hint:
        click.echo(f"donegate: {hint}", err=True)
    click.echo(
        json.dumps(
            {
                "ending": turn.ending.value,
                "tool_calls": len(turn.tool_calls),
                "text_nonempty": bool(turn.text.strip()),
                "raw_reason": turn.raw_reason,
                "detail": turn.detail,
            }
        )
    )


def _other_format(api: str, body: Any) -> str | None:
    """A one-line hint when `body` looks like another wire format than `api`, else None.

    Reading a body as the wrong format is rarely an exception (an OpenAI body read as Gemini
    has no candidates: a quiet `error`), so the shape is checked on its own.
    """
    seen = looks_like(body)
    if seen is None or same_family(seen, api):
        return None
    return f"the body looks like {seen}, not {api}: try --api {seen}"
