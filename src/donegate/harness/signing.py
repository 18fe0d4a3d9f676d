"""The harness's one signing module: Ed25519 signatures on certificates (and anything else the
gate signs), checked with the public key alone; legacy HMAC certificates still checked.

Why public keys: with a shared HMAC secret, whoever could check a certificate (CI, an auditor, a
scheduler) could also make one. An Ed25519 signature is checked with the public half, which can
be handed to anyone; only the gate holds the private half.

Where the private key comes from (read once per process, `take_key_from_environment`):
- ``$DONEGATE_SIGNING_KEY`` = ``ed25519:`` and 64 hex digits (the 32-byte private seed;
  ``donegate key export --private-env`` prints it). Any other value of 16 characters or more is an
  old HMAC secret: it still verifies the certificates it signed (reported ``legacy``) but signs
  nothing, and signing says so in one line;
- else the file ``$DONEGATE_HOME/signing.key``: the private key as PKCS#8 PEM, mode 0600, made
  atomically on first use (a temporary file linked into place, so racing workers share one key).
  A file readable by others, owned by another user or unreadable is refused: a gate that cannot
  trust its key signs nothing. An old file holding 64 hex digits (the HMAC key of before) is
  moved to ``signing.hmac.key`` and a new Ed25519 key made in its place; the old key keeps
  verifying legacy certificates.

Both live under the data directory, which the sandbox always hides from the programs it runs.

Who is trusted when verifying (`trusted_keys`): the keys given (``--public-key``), else those
in the file ``$DONEGATE_TRUSTED_KEYS``, else the local key's public half. A signature by any
other key is a problem, one line. Key ids are the first 16 hex digits of the SHA-256 of the raw
public key; the fingerprint is all 64.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from donegate.config import DATA_LAYOUT, SIGNING_KEY_ENV, TRUSTED_KEYS_ENV, data_path
from donegate.errors import UserError
from donegate.harness._pem import private_pem

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# cryptography is imported in the functions that sign, verify or read a key: every donegate
# program takes the key from its environment first (`take_key_from_environment`), and one that
# signs nothing (``donegate --help``, ``donegate tasks list``) should not pay for its import.

__all__ = [
    "ALGORITHM",
    "ENV_PREFIX",
    "KEY_FILE",
    "LEGACY_ALGORITHM",
    "LEGACY_KEY_FILE",
    "PublicKey",
    "SigningKey",
    "canonical",
    "forget_taken_key",
    "key_path",
    "parse_public_keys",
    "sign",
    "sign_canonical",
    "signature_problem",
    "signature_scheme",
    "signing_key",
    "take_key_from_environment",
    "trusted_keys",
]

ALGORITHM = "Ed25519"
LEGACY_ALGORITHM = "HMAC-SHA256"
KEY_FILE = DATA_LAYOUT["signing_key"]
"""The private key file's name in the data directory."""
LEGACY_KEY_FILE = DATA_LAYOUT["legacy_signing_key"]
"""Where an old HMAC key file is kept once replaced (it verifies legacy certificates only)."""
ENV_PREFIX = "ed25519:"
_MIN_ENV_KEY = 16
_MAX_KEYS_FILE = 1024 * 1024


def canonical(value: Any) -> bytes:
    """The bytes a signature covers: `donegate.codec.canonical_json`, UTF-8."""
    from donegate.codec import canonical_json  # here: every program imports this module first

    return canonical_json(value).encode()


def key_path() -> Path:
    """Where the key file lives (``$DONEGATE_HOME/signing.key``)."""
    return data_path("signing_key")


@dataclass(frozen=True, kw_only=True, slots=True)
class PublicKey:
    """An Ed25519 public key a verifier trusts."""

    raw: bytes
    """The 32 raw bytes."""

    @property
    def fingerprint(self) -> str:
        """SHA-256 hex of the raw key."""
        return hashlib.sha256(self.raw).hexdigest()

    @property
    def key_id(self) -> str:
        """What certificates carry: the fingerprint's first 16 hex digits."""
        return self.fingerprint[:16]

    @property
    def text(self) -> str:
        """The one-line form ``ed25519:BASE64`` (what ``--public-key`` and trusted-keys files
        take)."""
        return ENV_PREFIX + base64.b64encode(self.raw).decode()

    def verifies(self, signature: bytes, data: bytes) -> bool:
        """Whether `signature` is this key's over `data`."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, data)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True, kw_only=True, slots=True)
class SigningKey:
    """The gate's private key (never printed, never passed to a child)."""

    private: Ed25519PrivateKey
    public: PublicKey
    source: str
    """Where it came from: the environment variable's name or the file's path."""


def _public_of(private: Ed25519PrivateKey) -> PublicKey:
    return PublicKey(raw=private.public_key().public_bytes_raw())


# --- the key in the environment: read once, then gone from os.environ --------------------------

_TAKEN: list[str] = []
"""The environment's key value once `take_key_from_environment` removed it (at most one)."""


def take_key_from_environment() -> None:
    """Read ``$DONEGATE_SIGNING_KEY`` once and remove it from this process's environment, so no
    child started afterwards (by any path) can inherit it. Idempotent."""
    value = os.environ.pop(SIGNING_KEY_ENV, None)
    if value is not None:
        _TAKEN[:] = [value]


def _env_value() -> str | None:
    value = os.environ.get(SIGNING_KEY_ENV)
    if value is not None:
        return value
    return _TAKEN[0] if _TAKEN else None


def forget_taken_key() -> None:
    """Drop a key taken from the environment (tests switch keys between cases)."""
    _TAKEN.clear()


def _env_private(value: str) -> Ed25519PrivateKey | None:
    """An ``ed25519:`` value's key; None for a legacy secret; `UserError` for a bad one."""
    if not value.startswith(ENV_PREFIX):
        if len(value) < _MIN_ENV_KEY:
            raise UserError(f"{SIGNING_KEY_ENV} is shorter than {_MIN_ENV_KEY} characters")
        return None
    text = value[len(ENV_PREFIX) :].strip()
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        seed = b""
    if len(seed) != 32:
        raise UserError(f"{SIGNING_KEY_ENV}: 'ed25519:' must be followed by 64 hex digits")
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(seed)


# --- the key file -------------------------------------------------------------------------------

_READ: dict[str, tuple[tuple[int, ...], bytes]] = {}
"""Key files read and found good, with what ``lstat`` said of them then: a worker signs a
certificate per task, and a file unchanged since (same inode, times, mode, owner, size) is not
read and checked again. Any change, a chmod included, reads and checks it anew."""


def signing_key(*, create: bool) -> SigningKey:
    """The private key; with `create`, a key file is made when there is none. `UserError` when
    there is none to use (a legacy HMAC secret in the environment signs nothing)."""
    env = _env_value()
    if env is not None:
        private = _env_private(env)
        if private is None:
            raise UserError(
                f"{SIGNING_KEY_ENV} holds an old HMAC secret: it verifies legacy certificates "
                f"only; set it to 'ed25519:<64 hex>' (donegate key export --private-env) or "
                f"unset it to sign with {key_path()}"
            )
        return SigningKey(private=private, public=_public_of(private), source=SIGNING_KEY_ENV)
    path = key_path()
    text = _file_text(path, create=create)
    if _is_legacy_text(text):
        if not create:
            raise UserError(f"signing key {path}: an old HMAC key; run `donegate key init`")
        _retire_legacy(path, text)
        text = _file_text(path, create=True)
    loaded, public = _file_key(text, str(path))
    return SigningKey(private=loaded, public=public, source=str(path))


@functools.lru_cache(maxsize=4)
def _file_key(text: bytes, path: str) -> tuple[Ed25519PrivateKey, PublicKey]:
    """The key file's text as a key and its public half, parsed once per text (a worker signs
    a certificate per task from the same file; `_file_text` reads it again when it changes)."""
    loaded = private_pem(text, Path(path))
    return loaded, _public_of(loaded)


def _file_text(path: Path, *, create: bool) -> bytes:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise UserError(
                f"no signing key: set {SIGNING_KEY_ENV} or keep the key file {path} "
                "(to verify, give --public-key or $DONEGATE_TRUSTED_KEYS)"
            ) from None
        _create(path)
        return _read(path)
    seen = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_mode,
            info.st_uid, info.st_size)  # fmt: skip
    known = _READ.get(str(path))
    if known is not None and known[0] == seen:
        return known[1]
    text = _read(path)
    _READ[str(path)] = (seen, text)
    return text


def _create(path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write_new(path, pem)


def _write_new(path: Path, data: bytes) -> None:
    """`data` at `path`, 0600, atomically; never replaces a file already there."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            with contextlib.suppress(FileExistsError):  # another process made it first
                os.link(tmp, path)  # atomic, and never replaces an existing key
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the key file {path}: {exc.strerror or exc}") from None


def _read(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise UserError(f"key file {path}: not a regular file")
            text = f.read(4096)
    except OSError as exc:
        raise UserError(f"cannot read the key file {path}: {exc.strerror or exc}") from None
    if info.st_mode & 0o077:
        raise UserError(
            f"key file {path}: readable by others (mode {stat.S_IMODE(info.st_mode):o}); "
            "chmod 600 it"
        )
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise UserError(f"key file {path}: owned by another user")
    return text


def _is_legacy_text(text: bytes) -> bool:
    key = text.strip()
    return len(key) == 64 and all(c in b"0123456789abcdef" for c in key)


def _retire_legacy(path: Path, text: bytes) -> None:
    """Keep an old HMAC key file as ``signing.hmac.key`` and free ``signing.key``."""
    _write_new(path.with_name(LEGACY_KEY_FILE), text.strip() + b"\n")
    with contextlib.suppress(FileNotFoundError):
        if _read(path).strip() == text.strip():
            path.unlink()


def _legacy_secrets() -> list[bytes]:
    """The HMAC keys legacy certificates are checked with: an old secret in the environment, the
    retired key file, an old key file not yet replaced."""
    found: list[bytes] = []
    env = _env_value()
    if env is not None and not env.startswith(ENV_PREFIX) and len(env) >= _MIN_ENV_KEY:
        found.append(env.encode())
    for path in (data_path("legacy_signing_key"), key_path()):
        try:
            text = _read(path)
        except UserError:
            continue
        if _is_legacy_text(text):
            found.append(bytes.fromhex(text.strip().decode()))
    return found


# --- trusted public keys ------------------------------------------------------------------------


def parse_public_keys(text: str, *, where: str) -> list[PublicKey]:
    """Public keys in `text`: ``ed25519:BASE64`` lines (a trailing comment allowed, ``#`` lines
    and blank lines skipped) or PEM public keys. `UserError` naming `where` when one is bad."""
    keys: list[PublicKey] = []
    if "-----BEGIN PUBLIC KEY-----" in text:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        for block in text.split("-----BEGIN PUBLIC KEY-----")[1:]:
            pem = "-----BEGIN PUBLIC KEY-----" + block.split("-----END PUBLIC KEY-----")[0]
            pem += "-----END PUBLIC KEY-----\n"
            try:
                loaded = serialization.load_pem_public_key(pem.encode())
            except ValueError:
                raise UserError(f"{where}: a PEM public key that does not parse") from None
            if not isinstance(loaded, Ed25519PublicKey):
                raise UserError(f"{where}: a PEM public key that is not Ed25519")
            keys.append(PublicKey(raw=loaded.public_bytes(
                serialization.Encoding.Raw, serialization.PublicFormat.Raw)))  # fmt: skip
        return keys
    for number, line in enumerate(text.splitlines(), 1):
        word = line.split("#", 1)[0].strip().split(" ", 1)[0]
        if not word:
            continue
        raw = b""
        if word.startswith(ENV_PREFIX):
            with contextlib.suppress(binascii.Error, ValueError):
                raw = base64.b64decode(word[len(ENV_PREFIX) :], validate=True)
        if len(raw) != 32:
            raise UserError(f"{where}:{number}: not a public key (want 'ed25519:BASE64')")
        keys.append(PublicKey(raw=raw))
    return keys


def _keys_from(value: str, *, what: str) -> list[PublicKey]:
    if value.strip().startswith(ENV_PREFIX):
        return parse_public_keys(value, where=what)
    path = Path(value).expanduser()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise UserError(f"{what} {path}: not a regular file")
            data = f.read(_MAX_KEYS_FILE + 1)
    except OSError as exc:
        raise UserError(f"{what} {path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > _MAX_KEYS_FILE:
        raise UserError(f"{what} {path}: larger than {_MAX_KEYS_FILE} bytes")
    keys = parse_public_keys(data.decode("utf-8", errors="replace"), where=str(path))
    if not keys:
        raise UserError(f"{what} {path}: holds no public key")
    return keys


def trusted_keys(public_key: str | Iterable[str] | None = None) -> list[PublicKey]:
    """The keys a verifier trusts: `public_key` (texts or files), else the file named by
    ``$DONEGATE_TRUSTED_KEYS``, else the local key's public half. May be empty (no local key):
    then only legacy certificates can verify."""
    given = [public_key] if isinstance(public_key, str) else list(public_key or ())
    if given:
        return [k for value in given for k in _keys_from(value, what="--public-key")]
    listed = os.environ.get(TRUSTED_KEYS_ENV)
    if listed:
        return _keys_from(listed, what=TRUSTED_KEYS_ENV)
    try:
        return [signing_key(create=False).public]
    except UserError:
        return []


# --- signing and checking -----------------------------------------------------------------------


def sign(body: Mapping[str, Any]) -> dict[str, str]:
    """The ``signature`` field for `body` (the key is created on first use)."""
    return sign_canonical(canonical({k: v for k, v in body.items() if k != "signature"}))


def sign_canonical(unsigned: bytes) -> dict[str, str]:
    """`sign` for a body already in `canonical` form, without its ``signature`` (a writer that
    serialized it once for its digest need not serialize it again)."""
    key = signing_key(create=True)
    return {
        "alg": ALGORITHM,
        "key_id": key.public.key_id,
        "value": base64.b64encode(key.private.sign(unsigned)).decode(),
    }


def signature_scheme(body: Mapping[str, Any]) -> Literal["ed25519", "legacy"] | None:
    """``ed25519``, ``legacy`` (an HMAC signature of before), or None (none or unknown)."""
    sig = body.get("signature")
    alg = sig.get("alg") if isinstance(sig, dict) else None
    return "ed25519" if alg == ALGORITHM else "legacy" if alg == LEGACY_ALGORITHM else None


def signature_problem(
    body: Mapping[str, Any], *, trusted: Iterable[PublicKey] | None = None
) -> str | None:
    """None when `body`'s signature holds under a trusted key (`trusted_keys()` by default), or
    is a legacy HMAC signature under the old key; else one line saying why.

    `UserError` when there is no key at all to check with (nothing can be proven then).
    """
    sig = body.get("signature")
    if sig is None:
        return "signature: missing; the certificate is not signed"
    if not isinstance(sig, dict) or not all(
        isinstance(sig.get(k), str) for k in ("alg", "key_id", "value")
    ):
        return "signature: malformed"
    unsigned = canonical({k: v for k, v in body.items() if k != "signature"})
    if sig["alg"] == LEGACY_ALGORITHM:
        return _legacy_problem(sig, unsigned)
    if sig["alg"] != ALGORITHM:
        return f"signature: unsupported algorithm {sig['alg'][:40]!r}"
    keys = list(trusted) if trusted is not None else trusted_keys()
    if not keys:
        raise UserError(
            f"no key to verify with: give --public-key, set {TRUSTED_KEYS_ENV}, or keep the "
            f"signing key {key_path()}"
        )
    match = [k for k in keys if hmac.compare_digest(k.key_id, sig["key_id"])]
    if not match:
        return (
            f"signature: made with an untrusted key (key id {sig['key_id'][:16]!r}; trusted: "
            f"{', '.join(k.key_id for k in keys)})"
        )
    try:
        value = base64.b64decode(sig["value"], validate=True)
    except (binascii.Error, ValueError):
        return "signature: malformed"
    if not any(k.verifies(value, unsigned) for k in match):
        return "signature: does not match; the certificate was changed or forged"
    return None


def _legacy_problem(sig: Mapping[str, str], unsigned: bytes) -> str | None:
    keys = _legacy_secrets()
    if not keys:
        raise UserError(
            f"a legacy HMAC certificate: it verifies only with its old key ({SIGNING_KEY_ENV} "
            f"or {data_path('legacy_signing_key')})"
        )
    for key in keys:
        if hmac.compare_digest(sig["key_id"].encode(), _legacy_key_id(key).encode()):
            mac = hmac.new(key, unsigned, hashlib.sha256).hexdigest()
            if hmac.compare_digest(sig["value"].encode(), mac.encode()):
                return None
            return "signature: does not match; the certificate was changed or forged"
    return f"signature: a legacy HMAC signature by another key (key id {sig['key_id'][:16]!r})"


def _legacy_key_id(key: bytes) -> str:
    return hashlib.sha256(b"donegate key id\0" + key).hexdigest()[:16]
