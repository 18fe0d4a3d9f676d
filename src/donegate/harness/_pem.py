"""The signing key file's PEM text read back, without cryptography's ``serialization`` for the
form the gate writes (PKCS#8, unencrypted): that import cost an agent CLI's every stop about
14 ms of CPU (issue 29). Any other text goes to ``load_pem_private_key`` as before."""

from __future__ import annotations

import base64
import binascii
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from donegate.errors import UserError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["private_pem"]

_PKCS8_ED25519 = bytes.fromhex("302e020100300506032b657004220420")
"""PKCS#8 DER of an Ed25519 key up to its 32-byte seed (RFC 8410), as the gate writes it."""


def private_pem(text: bytes, path: Path) -> Ed25519PrivateKey:
    """The Ed25519 key in the key file at `path` whose bytes are `text`; `UserError` if none."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    parts = text.strip().split(b"-----")  # "", BEGIN PRIVATE KEY, base64, END PRIVATE KEY, ""
    if parts[:2] == [b"", b"BEGIN PRIVATE KEY"] and parts[3:] == [b"END PRIVATE KEY", b""]:
        with contextlib.suppress(binascii.Error):
            der = base64.b64decode(b"".join(parts[2].split()), validate=True)
            if len(der) == len(_PKCS8_ED25519) + 32 and der.startswith(_PKCS8_ED25519):
                return Ed25519PrivateKey.from_private_bytes(der[len(_PKCS8_ED25519) :])
    from cryptography.hazmat.primitives import serialization

    try:
        loaded = serialization.load_pem_private_key(text, password=None)
    except (ValueError, TypeError):
        raise UserError(f"signing key {path}: not an Ed25519 private key (PEM)") from None
    if not isinstance(loaded, Ed25519PrivateKey):
        raise UserError(f"signing key {path}: not an Ed25519 key")
    return loaded
