"""Reviewers: the people the store knows, each holding a secret that only its hash is kept of.

An approval (``closure: human``) and resolving or requeueing the human queue are a person's
decisions, so each needs a reviewer's secret: ``--token-file`` on the CLI, the UI login, the API
bearer. Without it, a process of the same user (an agent's hook, a detached child) could write
``--by alice`` and close its own task.

A secret reads ``dgr.NAME.RANDOM``: the name in it lets the one hash to check be found without
trying every reviewer's, and 256 random bits make it unguessable. The store keeps
``scrypt$N$r$p$SALT$HASH`` (`hashlib.scrypt`, a KDF made for stored secrets) and the check
compares in constant time. The secret is printed once, never stored, and never put in an
environment variable, so no child of the gate inherits it; the store itself is hidden from the
sandbox (`donegate.harness.world`).
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import hmac
import os
import re
import secrets
import stat
from dataclasses import dataclass
from typing import Literal

from donegate.errors import NotAReviewer, UserError
from donegate.store import Reviewer, Reviewers

__all__ = [
    "MAX_TOKEN_FILE",
    "Actor",
    "Channel",
    "add_reviewer",
    "authenticate",
    "check_name",
    "hash_secret",
    "login_name",
    "read_token_file",
    "secret_matches",
]

Channel = Literal["ui", "api", "cli"]
"""How a review action came: the review UI, the JSON API, or the CLI."""
MAX_TOKEN_FILE = 4096
"""A ``--token-file`` larger than this is refused unread: a secret is one short line."""
PREFIX = "dgr"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1
"""scrypt's cost (16 MiB, about 0.1 s): the secrets are random, so this guards a leaked store
against a cheap search, not against a dictionary."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Actor:
    """A reviewer proven by their secret, and how the action came: what a review action
    records (`donegate.review.actions`) and an approved certificate carries."""

    name: str
    """The reviewer's name (``donegate reviewers list``)."""
    channel: Channel
    """``ui``, ``api`` or ``cli``."""
    os_user: str
    """The login name of the process acting (the server's for ``ui`` and ``api``)."""


def check_name(name: str) -> str:
    """`name` when it can name a reviewer (letters, digits, ``-``, ``_``; at most 64)."""
    if not _NAME.fullmatch(name):
        raise UserError(
            f"reviewer name {name[:80]!r}: letters, digits, - and _ (at most 64), "
            "starting with a letter or digit"
        )
    return name


def hash_secret(secret: str) -> str:
    """``scrypt$N$r$p$SALT$HASH`` of `secret`, with a fresh salt."""
    salt = secrets.token_bytes(16)
    digest = _scrypt(secret, salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P)
    return "$".join(
        ("scrypt", str(_SCRYPT_N), str(_SCRYPT_R), str(_SCRYPT_P), _b64(salt), _b64(digest))
    )


def secret_matches(secret: str, stored: str) -> bool:
    """Whether `secret` hashes to `stored` (compared in constant time); False for a bad hash."""
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != "scrypt" or not all(p.isdigit() for p in parts[1:4]):
        return False
    n, r, p = (int(x) for x in parts[1:4])
    if not (2 <= n <= 2**20 and 1 <= r <= 32 and 1 <= p <= 16):  # a forged row cannot stall us
        return False
    try:
        salt, expected = _unb64(parts[4]), _unb64(parts[5])
    except ValueError:
        return False
    if not 16 <= len(expected) <= 64:  # an empty or absurd hash matches nothing
        return False
    return hmac.compare_digest(_scrypt(secret, salt, n=n, r=r, p=p, dklen=len(expected)), expected)


def add_reviewer(store: Reviewers, name: str) -> str:
    """Add reviewer `name` to `store` and return their secret: the only time it exists whole."""
    secret = f"{PREFIX}.{check_name(name)}.{secrets.token_urlsafe(32)}"
    store.add_reviewer(name, hash_secret(secret))
    return secret


def authenticate(store: Reviewers, secret: str) -> Reviewer:
    """The reviewer `secret` belongs to; `NotAReviewer` when it belongs to none."""
    name = _name_in(secret)
    reviewer = store.reviewer(name) if name is not None else None
    if reviewer is None or not secret_matches(secret, reviewer.secret_hash):
        raise NotAReviewer("that secret is not a reviewer's (donegate reviewers list)")
    return reviewer


def _name_in(secret: str) -> str | None:
    prefix, _, rest = secret.partition(".")
    name, _, random = rest.partition(".")
    if prefix != PREFIX or not random or not _NAME.fullmatch(name):
        return None
    return name


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The secret a ``--token-file`` holds: a regular file of one line, at most 4 KiB.

    Opened without blocking (a FIFO is refused, not waited on) and checked before it is read.
    """
    where = f"--token-file {os.fspath(path)}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise UserError(f"{where}: cannot open: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{where}: not a regular file")
        if info.st_size > MAX_TOKEN_FILE:
            raise UserError(f"{where}: {info.st_size} bytes; a secret file holds one short line")
        data = os.read(fd, MAX_TOKEN_FILE + 1)
    except OSError as exc:
        raise UserError(f"{where}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        lines = data.decode("utf-8").strip().splitlines()
    except UnicodeDecodeError:
        raise UserError(f"{where}: not UTF-8 text") from None
    if len(lines) != 1 or not lines[0].strip():
        raise UserError(f"{where}: expected the secret on one line, got {len(lines)} lines")
    return lines[0].strip()


def login_name() -> str:
    """The OS user of this process, as an approval records it."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name and no passwd entry: the uid says who
        return f"uid {os.getuid()}"


def _scrypt(secret: str, salt: bytes, *, n: int, r: int, p: int, dklen: int = 32) -> bytes:
    return hashlib.scrypt(
        secret.encode(), salt=salt, n=n, r=r, p=p, maxmem=256 * 1024 * 1024, dklen=dklen
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
