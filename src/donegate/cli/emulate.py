"""``donegate emulate`` and ``donegate record``: the provider-emulating server on the command line.

``emulate`` serves scripts on the providers' real endpoints until interrupted, then prints what
was served; with ``--upstream URL --record OUT.yaml`` it is a recording proxy instead. ``record``
is that proxy under its own name.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any

import click

from donegate.cli._app import app
from donegate.cli._types import PORT
from donegate.errors import UserError

__all__ = ["emulate_command", "record_command"]


def _summary(emulator: object) -> dict[str, object]:
    from donegate.testing.emulator import Emulator

    assert isinstance(emulator, Emulator)
    status = emulator.status()
    return {
        "requests": status["requests"],
        "unused_turns": status["unused_turns"],
        "errors": status["errors"],
        "warnings": status["warnings"],
        "side_calls": status["side_calls"],
        "conversations": [
            {k: c[k] for k in ("name", "turns", "served")} for c in status["conversations"]
        ],
    }


def _run(
    scripts: tuple[str, ...],
    *,
    host: str,
    port: int,
    log: str | None,
    upstream: str | None,
    record: str | None,
    redact: tuple[str, ...],
    max_body: int,
    verbose: int,
    side_calls: bool = False,
) -> None:
    from donegate.testing.emulator import Emulator
    from donegate.testing.recorder import Recorder

    _log_to_stderr(verbose)
    if record and not upstream:
        raise UserError("--record needs --upstream URL: the real API to record from")
    if upstream and scripts:
        raise UserError("give scripts to serve, or --upstream to record from, not both")
    if not upstream and not scripts:
        raise UserError("give at least one script to serve (or --upstream URL --record OUT)")
    recorder = Recorder(patterns=redact)  # its redactor also cleans the --log, in both modes
    emulator = Emulator(
        *scripts, host=host, port=port, log=log, upstream=upstream, recorder=recorder,
        max_body=max_body, side_calls=side_calls,
    )  # fmt: skip

    def ready(url: str) -> None:
        what = f"proxying {upstream}" if upstream else f"serving {len(scripts)} script(s)"
        names = ", ".join(c.name for c in emulator.conversations)
        click.echo(f"donegate emulator on {url} {what}{': ' + names if names else ''}", err=True)

    emulator.serve(on_ready=ready)
    click.echo(json.dumps(_summary(emulator)))
    if upstream and record:
        saved = recorder.save(record)
        click.echo(f"recorded {len(recorder.exchanges)} exchange(s) to {saved}", err=True)


class _Lines(logging.Formatter):
    """``donegate emulator: warning: ...``: one line per record, never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"donegate emulator: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.levelno >= logging.ERROR and self._debug:
            line += "\n" + self.formatException(record.exc_info)
        return line

    def __init__(self, debug: bool) -> None:
        super().__init__()
        self._debug = debug


def _log_to_stderr(verbose: int) -> None:
    """Warnings (tools not offered, requests refused) always; debug lines (hang-ups) with -v."""
    logger = logging.getLogger("donegate.emulator")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Lines(debug=verbose > 1))
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG if verbose else logging.WARNING)
    logger.propagate = False


_SIZE = re.compile(r"(\d+)\s*(|k|ki|kib|kb|m|mi|mib|mb|g|gi|gib|gb)", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


class _Bytes(click.ParamType):  # type: ignore[type-arg]  # generic only from click 8.2
    """A positive byte count: ``33554432``, ``32MiB``, ``512K``."""

    name = "bytes"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        m = _SIZE.fullmatch(str(value).strip())
        size = int(m.group(1)) * _UNITS[m.group(2)[:1].lower()] if m else 0
        if size < 1:
            self.fail(f"expected a positive size in bytes (like 32MiB), got {value!r}", param, ctx)
        return size


_max_body = click.option(
    "--max-body",
    type=_Bytes(),
    default="32MiB",
    show_default=True,
    help="Largest request body accepted; a longer one is answered 413 without being read.",
)
_verbose = click.option(
    "-v", "--verbose", count=True, help="Also log debug lines (clients hanging up); -vv tracebacks."
)

_host = click.option("--host", default="127.0.0.1", show_default=True, help="Interface.")
_port = click.option(
    "--port", default=8765, show_default=True, type=PORT, help="Port (0: a free one)."
)
_log = click.option(
    "--log",
    "log",
    default=None,
    metavar="PATH",
    help="Write the full request log to PATH as JSON lines, bodies included and secrets "
    "redacted (in memory each body is kept once, as bytes, spilled to a temporary file).",
)
_redact = click.option(
    "--redact", multiple=True, metavar="REGEX", help="Another secret pattern to redact."
)


@app.command("emulate")
@click.argument("scripts", nargs=-1)
@_host
@_port
@_log
@click.option("--upstream", default=None, help="Proxy mode: the real API's base URL.")
@click.option("--record", default=None, metavar="OUT", help="Proxy mode: write the run here.")
@_redact
@_max_body
@click.option(
    "--side-calls",
    is_flag=True,
    help="Answer requests that offer no tools (an agent CLI's routing, titles, summaries) "
    "without using a turn: the requested JSON schema's plainest value, or OK.",
)
@_verbose
def emulate_command(
    *,
    scripts: tuple[str, ...],
    host: str,
    port: int,
    log: str | None,
    upstream: str | None,
    record: str | None,
    redact: tuple[str, ...],
    max_body: int,
    side_calls: bool,
    verbose: int,
) -> None:
    """Serve SCRIPTS on the providers' real endpoints until interrupted.

    OpenAI clients use http://HOST:PORT/v1, Anthropic and Gemini clients http://HOST:PORT. Several
    scripts are several conversations, picked by the x-donegate-conversation header (index or
    file stem), by prompt, or in order. The clients run their own tools: scripts need no stubs,
    and a turn calling a tool the client did not offer is served with a warning. Every request is
    answered: a malformed one with a 400, one whose history leaves a tool call without its
    result with the 400 a provider sends, a body past --max-body with a 413. Prints the turns
    served as JSON on exit.
    """
    _run(scripts, host=host, port=port, log=log, upstream=upstream, record=record,
         redact=redact, max_body=max_body, verbose=verbose, side_calls=side_calls)  # fmt: skip


@app.command("record")
@click.option("--upstream", required=True, help="The real API's base URL.")
@click.option("-o", "--out", "out", required=True, help="The script file to write.")
@_host
@_port
@_log
@_redact
@_max_body
@_verbose
def record_command(
    *,
    upstream: str,
    out: str,
    host: str,
    port: int,
    log: str | None,
    redact: tuple[str, ...],
    max_body: int,
    verbose: int,
) -> None:
    """Record a real conversation through a proxy into a script file (checked by replay).

    Point the agent's base URL at the proxy, run it once, then stop the proxy (Ctrl-C): ids are
    shortened, usage and timestamps dropped, secrets redacted, and the file is written only if
    the script replays to the recorded run.
    """
    _run((), host=host, port=port, log=log, upstream=upstream, record=out, redact=redact,
         max_body=max_body, verbose=verbose)  # fmt: skip
    sys.stdout.flush()
