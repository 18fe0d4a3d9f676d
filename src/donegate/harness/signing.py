"""The harness's signing key and the HMAC-SHA256 signatures it puts on certificates.

The key is ``$DONEGATE_SIGNING_KEY`` (at least 16 characters) or the file
``$DONEGATE_HOME/signing.key``: 32 random bytes, hex, mode 0600, created atomically on first use
(a temporary file linked into place, so two workers racing both end up with the one key). A key
file readable by others, owned by another user, or not 64 hex digits is refused: a gate that
cannot trust its key signs nothing.

HMAC from the standard library rather than Ed25519: the harness that signs is the harness that
verifies, so a shared secret is enough and no dependency is added. The signed bytes are the
canonical JSON (sorted keys, compact separators, UTF-8) of the certificate without its
``signature`` field.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from donegate.config import SIGNING_KEY_ENV, data_dir, signing_key_env
from donegate.errors import UserError

__all__ = [
    "ALGORITHM",
    "KEY_FILE",
    "canonical",
    "key_path",
    "sign",
    "sign_canonical",
    "signature_problem",
]

ALGORITHM = "HMAC-SHA256"
KEY_FILE = "signing.key"
"""The key file's name in the data directory."""
_MIN_ENV_KEY = 16


def canonical(value: Any) -> bytes:
    """The bytes a signature covers: sorted keys, compact separators, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def key_path() -> Path:
    """Where the key file lives (``$DONEGATE_HOME/signing.key``)."""
    return data_dir() / KEY_FILE


def signing_key(*, create: bool) -> bytes:
    """The key; with `create`, a key file is made when there is none. `UserError` otherwise."""
    env = signing_key_env()
    if env is not None:
        if len(env) < _MIN_ENV_KEY:
            raise UserError(f"{SIGNING_KEY_ENV} is shorter than {_MIN_ENV_KEY} characters")
        return env.encode()
    path = key_path()
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise UserError(
                f"no signing key: set {SIGNING_KEY_ENV} or keep the key file {path} "
                "that signed the certificate"
            ) from None
        _create(path)
        return _read(path)
    seen = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_mode,
            info.st_uid, info.st_size)  # fmt: skip
    known = _READ.get(str(path))
    if known is not None and known[0] == seen:
        return known[1]
    key = _read(path)
    _READ[str(path)] = (seen, key)
    return key


_READ: dict[str, tuple[tuple[int, ...], bytes]] = {}
"""Key files read and found good, with what ``lstat`` said of them then: a worker signs a
certificate per task, and a file unchanged since (same inode, times, mode, owner, size) is not
read and checked again. Any change, a chmod included, reads and checks it anew."""


def _create(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            with contextlib.suppress(FileExistsError):  # another process made it first
                os.link(tmp, path)  # atomic, and never replaces an existing key
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the signing key {path}: {exc.strerror or exc}") from None


def _read(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            text = f.read(200)
    except OSError as exc:
        raise UserError(f"cannot read the signing key {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"signing key {path}: not a regular file")
    if info.st_mode & 0o077:
        raise UserError(
            f"signing key {path}: readable by others (mode {stat.S_IMODE(info.st_mode):o}); "
            "chmod 600 it"
        )
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise UserError(f"signing key {path}: owned by another user")
    key = text.strip()
    if len(key) != 64 or any(c not in b"0123456789abcdef" for c in key):
        raise UserError(f"signing key {path}: not 64 hex digits")
    return bytes.fromhex(key.decode())


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"donegate key id\0" + key).hexdigest()[:16]


def _mac(key: bytes, body: Mapping[str, Any]) -> str:
    unsigned = {k: v for k, v in body.items() if k != "signature"}
    return hmac.new(key, canonical(unsigned), hashlib.sha256).hexdigest()


def sign(body: Mapping[str, Any]) -> dict[str, str]:
    """The ``signature`` field for `body` (the key is created on first use)."""
    return sign_canonical(canonical({k: v for k, v in body.items() if k != "signature"}))


def sign_canonical(unsigned: bytes) -> dict[str, str]:
    """`sign` for a body already in `canonical` form, without its ``signature`` (a writer that
    serialized it once for its digest need not serialize it again)."""
    key = signing_key(create=True)
    return {
        "alg": ALGORITHM,
        "key_id": _key_id(key),
        "value": hmac.new(key, unsigned, hashlib.sha256).hexdigest(),
    }


def signature_problem(body: Mapping[str, Any]) -> str | None:
    """None when `body`'s signature holds under this harness's key; else one line saying why.

    `UserError` when there is no key to check with (nothing can be proven then).
    """
    sig = body.get("signature")
    if sig is None:
        return "signature: missing; the certificate is not signed"
    if not isinstance(sig, dict) or not all(
        isinstance(sig.get(k), str) for k in ("alg", "key_id", "value")
    ):
        return "signature: malformed"
    if sig["alg"] != ALGORITHM:
        return f"signature: unsupported algorithm {sig['alg'][:40]!r}"
    key = signing_key(create=False)
    if not hmac.compare_digest(sig["key_id"].encode(), _key_id(key).encode()):
        return (
            f"signature: made with another key (key id {sig['key_id'][:16]!r}, "
            f"this harness holds {_key_id(key)!r})"
        )
    if not hmac.compare_digest(sig["value"].encode(), _mac(key, body).encode()):
        return "signature: does not match; the certificate was changed or forged"
    return None
