"""``donegate serve``: the review UI (escalations, tasks, stop reasons) over a store.

The people it knows are the store's reviewers (``donegate reviewers add``): their secret is the
UI login and the API bearer, and only they approve, resolve and requeue. ``--token NAME:SECRET``
(or ``DONEGATE_SERVE_TOKEN``) adds ad-hoc tokens that may submit and retry tasks. Loopback by
default; any other address needs a reviewer or a token: a server anyone on the network can reach
must ask every request who it is, so without one it refuses to start (one line, exit 2). With
neither the server is read-only, loopback included (its first line says so). ``--token auto``
makes a token in ``$DONEGATE_HOME/serve.token`` (0600) and prints the file's path, once the store
has opened and the address is bound (a refused start writes no token); the data directory is
hidden from the sandbox, so no sandboxed agent reads it. ``--port 0`` takes a free port and
prints it.
"""

from __future__ import annotations

import socket

import click

from donegate.cli._app import app
from donegate.cli._store import db_option, store_from
from donegate.config import SERVE_TOKEN_ENV, data_path
from donegate.errors import MissingExtra, UserError

__all__ = ["TOKEN_ENV", "serve_command"]

TOKEN_ENV = SERVE_TOKEN_ENV
"""Tokens for ``donegate serve`` (``NAME:SECRET``, comma-separated for several)."""


@app.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind.")
@click.option(
    "--port",
    default=8700,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0: a free one, printed).",
)
@click.option(
    "--token",
    "tokens",
    multiple=True,
    envvar=TOKEN_ENV,
    metavar="NAME:SECRET",
    help=f"Require this token (repeatable; env {TOKEN_ENV}); needed off loopback and for any "
    "write. 'auto' makes one in a 0600 file in DONEGATE_HOME and prints its path.",
)
@db_option
def serve_command(host: str, port: int, tokens: tuple[str, ...], db: str | None) -> None:
    """Serve the review UI: escalations to resolve or requeue, tasks, stop reasons."""
    from donegate.server.auth import is_loopback, parse_tokens

    auto = _new_token() if "auto" in tokens else None  # written once the server can start
    tokens = tuple(auto if t == "auto" and auto else t for t in tokens)
    parsed = parse_tokens(tokens)
    try:
        import uvicorn

        from donegate.server import create_app
    except MissingExtra:  # the server package names what it lacks (jinja2, starlette)
        raise
    except ImportError as exc:
        raise MissingExtra(exc.name or "uvicorn", "server") from None
    store = store_from(db, existing=True)  # a review UI never creates a store
    try:
        reviewers = len(store.reviewers())
        if not is_loopback(host) and not parsed and not reviewers:
            raise UserError(
                f"--host {host} is not a loopback address: add a reviewer (donegate reviewers "
                f"add NAME) or pass --token NAME:SECRET (or set {TOKEN_ENV}) so every request "
                "must carry one"
            )
        listening = _listen(host, port)
        if auto is not None:
            _write_token(auto)
        web = create_app(store, token=parsed or None)
        shown = f"[{host}]" if ":" in host else host
        if not parsed and not reviewers:
            click.echo(
                "donegate serve: read-only (no reviewer and no token: every write is refused; "
                "add one with donegate reviewers add NAME, or pass --token NAME:SECRET or "
                "--token auto)",
                err=True,
            )
        elif reviewers:
            click.echo(
                f"donegate serve: {reviewers} reviewer(s) sign in with their secret; only they "
                "approve, resolve and requeue",
                err=True,
            )
        bound = listening.getsockname()[1]  # --port 0: the port the system chose
        click.echo(f"donegate serve on http://{shown}:{bound} ({store.url})", err=True)
        config = uvicorn.Config(web, log_level="warning", access_log=False)
        uvicorn.Server(config).run(sockets=[listening])
    finally:
        store.close()


def _new_token() -> str:
    """A fresh ``NAME:SECRET`` for ``--token auto`` (NAME: the OS user)."""
    import getpass
    import secrets

    return f"{getpass.getuser()}:{secrets.token_urlsafe(24)}"


def _write_token(token: str) -> None:
    """Write ``--token auto``'s token to ``$DONEGATE_HOME/serve.token`` (0600) and say where: only
    once the store opened and the address is bound, so a refused start leaves no new token."""
    import os

    path = data_path("serve_token")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
    except OSError as exc:
        raise UserError(f"cannot write the token file {path}: {exc.strerror or exc}") from None
    click.echo(f"donegate serve: token written to {path} (NAME:SECRET; the secret is the "
               "login and the API bearer)", err=True)  # fmt: skip


def _listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound here so ``--port 0`` can print the port it got and
    an address that cannot be bound (in use, not this machine's) is refused in one line."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        listening = socket.socket(family, kind, proto)
        try:
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listening.bind(address)
            listening.listen(2048)  # uvicorn's own backlog
        except OSError:
            listening.close()
            raise
    except OSError as exc:
        raise UserError(
            f"--host {host} --port {port}: cannot listen: {exc.strerror or exc}"
        ) from None
    return listening
