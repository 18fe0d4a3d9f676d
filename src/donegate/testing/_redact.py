"""Secrets out of every byte the test kit writes: recorded scripts and request logs alike.

A `Redactor` works on JSON-like values in three passes, so a secret is caught whatever its
shape:

1. **By key**: the value of a mapping key that names a secret (``password``, ``db_passwd``,
   ``client_secret``, ``access_token``, ``apiKey``, ``Authorization``, ``cookie`` ...) becomes
   ``[REDACTED]``, whatever it looks like.
2. **By structure inside text**: ``key=value`` (query strings, libpq and ADO.NET DSNs, env
   lines), ``"key": "value"`` (JSON inside a string, such as tool arguments), ``key: value``,
   ``user:pass@`` in any URL, and ``Authorization:``/``x-api-key:`` header lines.
3. **By shape**: API keys and tokens whose form is known (``sk-...``, ``AIza...``, ``ghp_...``,
   JWTs, PEM private keys ...), plus any pattern the caller adds (``--redact``).

Redacting is idempotent (``[REDACTED]`` is never changed again), so a recording and its replay,
both redacted, still compare equal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from donegate.errors import UserError

__all__ = ["DEFAULT_SECRET_PATTERNS", "REDACTED", "Redactor", "is_secret_key", "log_line"]

REDACTED = "[REDACTED]"
"""What a redacted secret becomes."""

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    r"sk-ant-[A-Za-z0-9_\-]{8,}",  # Anthropic keys
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",  # OpenAI keys
    r"AIza[0-9A-Za-z_\-]{20,}",  # Google API keys
    r"(?i)bearer\s+[A-Za-z0-9._~+/=\-]{8,}",  # bearer tokens in any text
    r"(?i)\bbasic\s+[A-Za-z0-9+/]{8,}={0,2}",  # HTTP basic credentials
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{22,}",  # GitHub fine-grained tokens
    r"xox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack tokens
    r"AKIA[0-9A-Z]{16}",  # AWS access key ids
    r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe keys
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face tokens
    r"\bgsk_[A-Za-z0-9]{20,}",  # Groq keys
    r"\bxai-[A-Za-z0-9]{20,}",  # xAI keys
    r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWTs
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",  # PEM keys
)
"""Key-shaped secrets redacted from every recording and log; add your own with ``patterns=``."""

# -- by key ------------------------------------------------------------------------------------

_ANYWHERE = ("password", "passwd", "passphrase", "secret", "credential", "authorization", "cookie")
"""Words that make any key holding them a secret key (``db_password``, ``PGPASSWORD``)."""
_LAST_WORDS = frozenset({"token", "pwd", "pass", "auth", "apikey", "jwt", "dsn"})
"""Words that make a key secret when they end it (``access_token``, not ``max_tokens``)."""
_KEY_OWNERS = frozenset(
    {"api", "access", "secret", "private", "signing", "encryption", "master", "subscription"}
)
"""``<owner>_key`` names a secret (``api_key``, ``x-api-key``); a bare ``key`` or ``cache_key``
does not."""


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)  # camelCase -> camel Case
    return re.findall(r"[a-z0-9]+", spaced.lower())


def is_secret_key(name: str) -> bool:
    """True when a mapping key (or a ``key=`` name) names a secret."""
    lowered = name.lower()
    if any(word in lowered for word in _ANYWHERE):
        return True
    words = _words(name)
    if not words:
        return False
    if words[-1] in _LAST_WORDS or "auth" in words:
        return True
    return len(words) > 1 and words[-1] == "key" and words[-2] in _KEY_OWNERS


# -- by structure inside text ------------------------------------------------------------------

_NAME = r"[A-Za-z_][\w.\-]*"
"""A key name as text writes it: ``password``, ``db.password``, ``X-Api-Key``."""


def _keyed(match: re.Match[str]) -> str:
    """Keep the key and the quotes around its value, redact the value itself."""
    if not is_secret_key(match["name"]):
        return match[0]
    quote = match["open"] or ""
    return f"{match['head']}{quote}{REDACTED}{quote}"


_FRESH = r"(?!\[REDACTED\])"
"""Never redact a redaction again: redacting twice gives what redacting once gave."""

_STRUCTURE: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    # Header lines whose whole value is the credential: ``Authorization: Basic dXNl...``.
    (
        re.compile(
            r"(?im)\b((?:proxy-)?authorization|x-api-key|x-goog-api-key|api-key|set-cookie|cookie)"
            rf"([ \t]*:[ \t]*){_FRESH}(?![\"'\s])[^\r\n]+"
        ),
        rf"\1\2{REDACTED}",
    ),
    # ``user:password@`` in any URL (DSNs included): the password goes, the user stays.
    (
        re.compile(rf"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/?#@\"']*):{_FRESH}[^\s/?#@\"']+@"),
        rf"\1:{REDACTED}@",
    ),
    # ``"password": "value"``: JSON (or Python) text inside a string, such as tool arguments.
    (
        re.compile(
            rf"(?P<head>(?P<q0>[\"'])(?P<name>{_NAME})(?P=q0)\s*:\s*)"
            r"(?P<open>[\"'])(?:\\.|(?!(?P=open))[^\\])*(?P=open)"
        ),
        _keyed,
    ),
    # The same, one level escaped (JSON text inside a JSON string): ``\"password\": \"v\"``.
    (
        re.compile(
            rf"(?P<head>(?P<q0>\\[\"'])(?P<name>{_NAME})(?P=q0)\s*:\s*)"
            r"(?P<open>\\[\"'])(?:(?!(?P=open)).)*?(?P=open)"
        ),
        _keyed,
    ),
    # ``password=value``: query strings, form bodies, libpq / JDBC / ADO.NET DSNs, env lines.
    (
        re.compile(
            rf"(?P<head>(?<![\w.\-])(?P<name>{_NAME})\s*=\s*){_FRESH}"
            r"(?:(?P<open>[\"'])[^\"'\r\n]*(?P=open)|[^\s&;,\"'#)\]}]+)"
        ),
        _keyed,
    ),
    # ``password: value`` (YAML, log lines); numbers and JSON literals are left alone.
    (
        re.compile(
            rf"(?P<head>(?<![\w.\-])(?P<name>{_NAME})[ \t]*:[ \t]*)(?P<open>){_FRESH}"
            r"(?![\"'\s\[{]|(?:-?\d+(?:\.\d+)?|true|false|null)\b)[^\s,;\"'}\]]+"
        ),
        _keyed,
    ),
)


def _compile(patterns: Iterable[str]) -> list[re.Pattern[str]]:
    """Compile the caller's patterns; a bad one is a one-line `UserError` naming it."""
    compiled = []
    for p in patterns:
        try:
            compiled.append(re.compile(p))
        except re.error as exc:
            raise UserError(f"--redact {p!r} is not a valid regular expression: {exc}") from None
    return compiled


class Redactor:
    """Replaces secrets in every string of a JSON-like value (see the module docstring)."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        self.patterns = [*_compile(DEFAULT_SECRET_PATTERNS), *_compile(patterns)]
        """The compiled shape patterns, defaults first, then the caller's."""

    def text(self, value: str) -> str:
        """`value` with every secret inside it replaced by ``[REDACTED]``.

        One pass can uncover a secret (a shape cut away reveals a ``key=value`` behind it), so
        passes repeat until nothing changes: redacting twice is redacting once.
        """
        for _ in range(8):  # bounded: real text settles in one or two passes
            before = value
            for pattern, replacement in _STRUCTURE:
                value = pattern.sub(replacement, value)
            for shape in self.patterns:
                value = shape.sub(REDACTED, value)
            if value == before:
                break
        return value

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                k: REDACTED
                if isinstance(k, str) and is_secret_key(k) and isinstance(v, str) and v
                else self(v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        return value


_DEFAULT = Redactor()


class _Redacting(Protocol):
    """Anything that carries a redactor (a `Recorder`)."""

    @property
    def redact(self) -> Redactor: ...


def log_line(entry: Mapping[str, Any], by: Redactor | _Redacting | None = None) -> str:
    """One request-log entry as a JSON line, redacted by `by` (a `Redactor`, or the `Recorder`
    whose patterns apply) or, without one, by the default patterns."""
    redactor = by if isinstance(by, Redactor) else by.redact if by is not None else _DEFAULT
    return json.dumps(redactor(entry), ensure_ascii=False)
