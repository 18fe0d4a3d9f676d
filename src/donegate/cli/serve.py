"""``donegate serve``: the review UI (escalations, tasks, stop reasons) over a store.

Loopback by default. Any other address needs ``--token NAME:SECRET`` (or
``DONEGATE_SERVE_TOKEN``): a server anyone on the network can reach must ask every request who
it is, so without one it refuses to start (one line, exit 2).
"""

from __future__ import annotations

import click

from donegate.cli._app import app
from donegate.cli._store import db_option, store_from
from donegate.config import SERVE_TOKEN_ENV
from donegate.errors import MissingExtra, UserError

__all__ = ["TOKEN_ENV", "serve_command"]

TOKEN_ENV = SERVE_TOKEN_ENV
"""Tokens for ``donegate serve`` (``NAME:SECRET``, comma-separated for several)."""


@app.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind.")
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    "tokens",
    multiple=True,
    envvar=TOKEN_ENV,
    metavar="NAME:SECRET",
    help=f"Require this token (repeatable; env {TOKEN_ENV}); needed off loopback.",
)
@db_option
def serve_command(host: str, port: int, tokens: tuple[str, ...], db: str | None) -> None:
    """Serve the review UI: escalations to resolve or requeue, tasks, stop reasons."""
    from donegate.server.auth import is_loopback, parse_tokens

    parsed = parse_tokens(tokens)
    if not is_loopback(host) and not parsed:
        raise UserError(
            f"--host {host} is not a loopback address: pass --token NAME:SECRET "
            f"(or set {TOKEN_ENV}) so every request must carry it"
        )
    try:
        import uvicorn

        from donegate.server import create_app
    except ImportError as exc:
        raise MissingExtra(exc.name or "uvicorn", "server") from None
    store = store_from(db, existing=True)  # a review UI never creates a store
    try:
        _can_listen(host, port)
        web = create_app(store, token=parsed or None)
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"donegate serve on http://{shown}:{port} ({store.url})", err=True)
        uvicorn.run(web, host=host, port=port, log_level="warning", access_log=False)
    finally:
        store.close()


def _can_listen(host: str, port: int) -> None:
    """Refuse, in one line, an address that cannot be bound (in use, not this machine's)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        raise UserError(
            f"--host {host} --port {port}: cannot listen: {exc.strerror or exc}"
        ) from None
