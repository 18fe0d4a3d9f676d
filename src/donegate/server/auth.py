"""Who may use the review UI, and proof that a form was posted from it.

Tokens: ``NAME:SECRET`` (a bare ``SECRET`` is named ``operator``); the name is who the store
records for every action taken with it. With tokens configured every request but ``/healthz``,
``/login`` and ``/static`` carries one: an ``Authorization: Bearer SECRET`` header, or the
session cookie the login form sets (``NAME.ISSUED.HMAC``, signed with a key made when the app
starts, so a restart signs everyone out). Without tokens (loopback only) everyone is ``local``,
and requests must name a loopback host, so a web page whose domain rebinds to 127.0.0.1 is turned
away rather than served.

CSRF: every response that renders a form carries a random ``donegate_csrf`` cookie; the form's
hidden ``csrf`` field is the HMAC of that cookie under the app's key. A POST passes when the field
matches the cookie and any ``Origin`` header names this host. A cross-site page can neither read
the cookie nor compute the field, and a ``SameSite=Strict`` cookie is not even sent with its post.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from donegate.errors import UserError

__all__ = [
    "CSRF_COOKIE",
    "LOCAL",
    "SESSION_COOKIE",
    "Auth",
    "Token",
    "is_loopback",
    "loopback_host",
    "parse_tokens",
]

CSRF_COOKIE = "donegate_csrf"
SESSION_COOKIE = "donegate_session"
SESSION_S = 12 * 3600
"""How long a login lasts."""
LOCAL = "local"
"""Who acts when no token is configured (a loopback server)."""
MIN_SECRET = 16
"""The shortest token secret accepted: the token is all that guards a non-loopback server."""
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Token:
    """One person's (or one client's) access: the name recorded, the secret presented."""

    name: str
    """Recorded as who acted."""
    secret: str
    """What the request carries."""


def parse_tokens(values: Iterable[str]) -> list[Token]:
    """``NAME:SECRET`` strings (comma-separated too) as tokens; `UserError` names a bad one."""
    tokens: list[Token] = []
    for value in values:
        for text in (v.strip() for v in value.split(",")):
            if not text:
                continue
            name, sep, secret = text.partition(":")
            if not sep:
                name, secret = "operator", text
            if not name or any(c.isspace() or c in ".;=" for c in name):
                raise UserError(f"--token {name!r}: a name is letters, digits, - or _")
            if len(secret) < MIN_SECRET:
                raise UserError(
                    f"--token {name}: the secret is shorter than {MIN_SECRET} characters"
                )
            if any(t.name == name for t in tokens):
                raise UserError(f"--token {name}: named twice")
            tokens.append(Token(name=name, secret=secret))
    return tokens


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1."""
    import ipaddress

    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _mac(key: bytes, *parts: str) -> str:
    return hmac.new(key, "\0".join(parts).encode(), hashlib.sha256).hexdigest()


class Auth:
    """The app's tokens, its signing key, and the checks every request goes through."""

    def __init__(self, tokens: Sequence[Token]) -> None:
        self.tokens = {t.name: t for t in tokens}
        self._key = secrets.token_bytes(32)

    @property
    def required(self) -> bool:
        """True when requests must carry a token."""
        return bool(self.tokens)

    # -- who is asking -------------------------------------------------------------------------

    def who(self, request: Request) -> str | None:
        """The token name the request carries, `LOCAL` without tokens; None when it has none."""
        if not self.tokens:
            return LOCAL
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            token = self.match(header[7:].strip())
            return token.name if token is not None else None
        return self._session_name(request.cookies.get(SESSION_COOKIE, ""))

    def match(self, secret: str) -> Token | None:
        """The token with this secret (compared in constant time), or None."""
        found = None
        for token in self.tokens.values():
            if hmac.compare_digest(token.secret.encode(), secret.encode()):
                found = token
        return found

    def session(self, token: Token) -> str:
        """A session cookie value for `token`."""
        issued = str(int(time.time()))
        return f"{token.name}.{issued}.{self._session_mac(token, issued)}"

    def _session_mac(self, token: Token, issued: str) -> str:
        fingerprint = hashlib.sha256(token.secret.encode()).hexdigest()
        return _mac(self._key, "session", token.name, issued, fingerprint)

    def _session_name(self, value: str) -> str | None:
        name, _, rest = value.partition(".")
        issued, _, mac = rest.partition(".")
        token = self.tokens.get(name)
        if token is None or not issued.isdigit() or not mac:
            return None
        if time.time() - int(issued) > SESSION_S:
            return None
        if not hmac.compare_digest(mac.encode(), self._session_mac(token, issued).encode()):
            return None
        return name

    # -- CSRF ----------------------------------------------------------------------------------

    def csrf_nonce(self, request: Request) -> str:
        """The request's CSRF cookie value, or a new one (`set_csrf` sends it)."""
        current = request.cookies.get(CSRF_COOKIE, "")
        if len(current) == 32 and all(c in "0123456789abcdef" for c in current):
            return current
        return str(request.scope.setdefault("donegate.csrf_nonce", secrets.token_hex(16)))

    def csrf_token(self, request: Request) -> str:
        """The hidden field value forms on this response carry."""
        return _mac(self._key, "csrf", self.csrf_nonce(request))

    def set_csrf(self, request: Request, response: Response) -> None:
        """Send the CSRF cookie when the request came without it."""
        nonce = request.scope.get("donegate.csrf_nonce")
        if nonce is not None:
            response.set_cookie(
                CSRF_COOKIE, nonce, httponly=True, samesite="strict", path="/", max_age=SESSION_S
            )

    async def form(self, request: Request) -> FormData:
        """The posted form, once its CSRF field and origin are checked (403 otherwise)."""
        form = await request.form()
        sent = form.get("csrf")
        nonce = request.cookies.get(CSRF_COOKIE, "")
        if not isinstance(sent, str) or not nonce:
            raise HTTPException(403, "the form's CSRF token is missing: reload the page")
        if not hmac.compare_digest(sent.encode(), _mac(self._key, "csrf", nonce).encode()):
            raise HTTPException(403, "the form's CSRF token is wrong: reload the page")
        origin = request.headers.get("origin")
        if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host"):
            raise HTTPException(403, "the form was posted from another site")
        return form


def loopback_host(header: str) -> bool:
    """True when a ``Host`` header names a loopback address (any port)."""
    host = header.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host in _LOOPBACK_NAMES or is_loopback(host)
