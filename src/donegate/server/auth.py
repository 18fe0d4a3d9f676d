"""Who may use the review UI, and proof that a form was posted from it.

Who may act: the store's reviewers (``donegate reviewers add``; their secret is the login and
the bearer, and only they approve, resolve and requeue), and ad-hoc ``--token NAME:SECRET``
tokens (a bare ``SECRET`` is named ``operator``), which may submit and retry tasks but not review.
The name is who the store records for every action taken with it. With either configured every
request but ``/healthz``, ``/login`` and ``/static`` carries one: an ``Authorization: Bearer
SECRET`` header, or the session cookie the login form sets (``NAME.ISSUED.HMAC``, signed with a
key made when the app starts, so a restart signs everyone out, and bound to the reviewer's
stored hash or the token, so removing a reviewer signs them out). With neither (loopback only,
read-only) everyone is ``local``, and requests must name a loopback host, so a web page whose
domain rebinds to 127.0.0.1 is turned away rather than served.

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

from donegate.errors import NotAReviewer, UserError
from donegate.review.reviewers import authenticate
from donegate.store import Reviewer, Reviewers

__all__ = [
    "CSRF_COOKIE",
    "LOCAL",
    "SESSION_COOKIE",
    "Auth",
    "Principal",
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


@dataclass(frozen=True, kw_only=True, slots=True)
class Principal:
    """Who a request is: a reviewer of the store, or an ad-hoc ``--token``'s name."""

    name: str
    """Recorded as who acted."""
    reviewer: bool
    """True for a reviewer (``donegate reviewers add``): only they approve, resolve, requeue."""


_CACHE_MAX = 256


class Auth:
    """The app's tokens and reviewers, its signing key, and the checks every request goes
    through.

    A reviewer's secret is checked with the KDF once; the verdict is then remembered by the
    secret's SHA-256 together with the stored hash it matched, so a bearer does not pay the KDF
    on every request, and removing (or re-adding) the reviewer ends it at once.
    """

    def __init__(self, tokens: Sequence[Token], reviewers: Reviewers | None = None) -> None:
        self.tokens = {t.name: t for t in tokens}
        self.reviewers = reviewers
        self._key = secrets.token_bytes(32)
        self._proven: dict[str, tuple[str, str]] = {}

    @property
    def required(self) -> bool:
        """True when requests must carry a token: ``--token`` was given, or the store has
        reviewers."""
        return bool(self.tokens) or (
            self.reviewers is not None and bool(self.reviewers.reviewers())
        )

    # -- who is asking -------------------------------------------------------------------------

    def who(self, request: Request) -> Principal | None:
        """Who the request is (`LOCAL` when nothing is required); None when it carries nothing
        valid."""
        if not self.required:
            return Principal(name=LOCAL, reviewer=False)
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            return self.match(header[7:].strip())
        return self._session_principal(request.cookies.get(SESSION_COOKIE, ""))

    def match(self, secret: str) -> Principal | None:
        """The reviewer or token with this secret (compared in constant time), or None."""
        reviewer = self._reviewer(secret)
        if reviewer is not None:
            return Principal(name=reviewer.name, reviewer=True)
        found = None
        for token in self.tokens.values():
            if hmac.compare_digest(token.secret.encode(), secret.encode()):
                found = Principal(name=token.name, reviewer=False)
        return found

    def _reviewer(self, secret: str) -> Reviewer | None:
        if self.reviewers is None or not secret.startswith("dgr."):
            return None
        key = hashlib.sha256(secret.encode()).hexdigest()
        seen = self._proven.get(key)
        if seen is not None:
            current = self.reviewers.reviewer(seen[0])
            if current is not None and current.secret_hash == seen[1]:
                return current
            del self._proven[key]
        try:
            reviewer = authenticate(self.reviewers, secret)
        except NotAReviewer:
            return None
        if len(self._proven) >= _CACHE_MAX:
            self._proven.clear()
        self._proven[key] = (reviewer.name, reviewer.secret_hash)
        return reviewer

    def session(self, principal: Principal) -> str:
        """A session cookie value for `principal`."""
        issued = str(int(time.time()))
        fingerprint = self._fingerprint(principal)
        assert fingerprint is not None, "a session is only made for a principal just matched"
        return f"{principal.name}.{issued}.{self._session_mac(principal, issued, fingerprint)}"

    def _fingerprint(self, principal: Principal) -> str | None:
        """What a session is bound to: the reviewer's stored hash, or the token's secret."""
        if principal.reviewer:
            found = self.reviewers.reviewer(principal.name) if self.reviewers else None
            return found.secret_hash if found is not None else None
        token = self.tokens.get(principal.name)
        return hashlib.sha256(token.secret.encode()).hexdigest() if token is not None else None

    def _session_mac(self, principal: Principal, issued: str, fingerprint: str) -> str:
        kind = "reviewer" if principal.reviewer else "token"
        return _mac(self._key, "session", kind, principal.name, issued, fingerprint)

    def _session_principal(self, value: str) -> Principal | None:
        name, _, rest = value.partition(".")
        issued, _, mac = rest.partition(".")
        if not name or not issued.isdigit() or not mac:
            return None
        if time.time() - int(issued) > SESSION_S:
            return None
        for principal in (Principal(name=name, reviewer=r) for r in (True, False)):
            fingerprint = self._fingerprint(principal)
            if fingerprint is None:
                continue
            expected = self._session_mac(principal, issued, fingerprint)
            if hmac.compare_digest(mac.encode(), expected.encode()):
                return principal
        return None

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
