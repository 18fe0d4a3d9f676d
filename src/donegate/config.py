"""The data directory and donegate's environment variables, read in one place.

Every layer that needs the data directory (the store's default SQLite file, certificates and
escalation reports, agent-hook state, the signing key) asks `data_dir()`, so one variable moves
all of it. Nothing the gate trusts is kept under an agent's working directory: this folder is
the harness's own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, TypeAlias

__all__ = [
    "BROKER_ENV",
    "DATA_DIR_ENV",
    "DATA_LAYOUT",
    "DB_ENV",
    "HOOK_RESIDENT_ENV",
    "HOOK_RESIDENT_IDLE_ENV",
    "IDEMPOTENCY_KEY_ENV",
    "ISOLATION_ENV",
    "ISOLATION_MODES",
    "PROCESS_TOKEN_ENV",
    "REASON_ENV",
    "SEMCONV_OPT_IN_ENV",
    "SERVE_TOKEN_ENV",
    "SIGNING_KEY_ENV",
    "TRUSTED_KEYS_ENV",
    "DataPath",
    "data_dir",
    "data_path",
    "isolation_mode",
    "semconv_opt_in",
    "signing_key_env",
]

DATA_DIR_ENV = "DONEGATE_HOME"
"""Where donegate keeps its state (default ``~/.donegate``)."""
DB_ENV = "DONEGATE_DB"
"""The task store's URL or SQLite path (default ``$DONEGATE_HOME/donegate.db``)."""
SIGNING_KEY_ENV = "DONEGATE_SIGNING_KEY"
"""The certificate signing key, ``ed25519:`` + 64 hex digits (default:
``$DONEGATE_HOME/signing.key``, made on first use); an old HMAC secret here verifies legacy
certificates only. Read once and removed from the gate's environment."""
TRUSTED_KEYS_ENV = "DONEGATE_TRUSTED_KEYS"
"""A file of public keys ``donegate verify`` trusts (default: the local key's public half)."""
BROKER_ENV = "DONEGATE_BROKER"
"""The Celery broker's Redis URL (``--broker``)."""
SERVE_TOKEN_ENV = "DONEGATE_SERVE_TOKEN"
"""Tokens for ``donegate serve`` (``NAME:SECRET``, comma-separated for several)."""
IDEMPOTENCY_KEY_ENV = "DONEGATE_IDEMPOTENCY_KEY"
"""Set for a notification command: the notice's idempotency key (read by the command)."""
ISOLATION_ENV = "DONEGATE_ISOLATION"
"""Where checks and the agent's commands run: ``auto`` (default), ``sandbox`` or ``process``."""
ISOLATION_MODES = ("auto", "sandbox", "process")
"""What ``--isolation`` and ``$DONEGATE_ISOLATION`` accept (`donegate.sandbox.MODES`), here so
an option can list them without importing the sandbox."""
SEMCONV_OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
"""OpenTelemetry's own switch: ``gen_ai_latest_experimental`` makes the spans follow the latest
GenAI conventions (semantic-conventions-genai v0.1.0) instead of semantic-conventions v1.36.0."""
PROCESS_TOKEN_ENV = "DONEGATE_PROCESS_TOKEN"
"""Set in every child the harness starts, so its leftovers can be found and ended."""
REASON_ENV = "DONEGATE_REASON"
"""Set for ``donegate exec --resume CMD``: the gate's reason for the continuation."""
HOOK_RESIDENT_ENV = "DONEGATE_HOOK_RESIDENT"
"""``0``: every ``donegate hook`` stop runs in its own process, without the resident gate."""
HOOK_RESIDENT_IDLE_ENV = "DONEGATE_HOOK_RESIDENT_IDLE"
"""Seconds the resident hook gate waits for a stop before it exits (default 600)."""


def data_dir() -> Path:
    """``$DONEGATE_HOME`` (default ``~/.donegate``), user-expanded; not created here."""
    home = os.environ.get(DATA_DIR_ENV)
    return Path(home).expanduser() if home else Path.home() / ".donegate"


DataPath: TypeAlias = Literal[
    "db", "certificates", "escalations", "hooks", "exec", "rooms", "snapshots", "serve_token",
    "signing_key", "legacy_signing_key", "probes", "gate",
]  # fmt: skip
"""The names of what the data directory holds (`DATA_LAYOUT`)."""

DATA_LAYOUT: dict[DataPath, str] = {
    "db": "donegate.db",  # the default SQLite store
    "certificates": "certificates",  # certificates the hooks write
    "escalations": "escalations",  # escalation reports of exec runs
    "hooks": "hooks",  # the hooks' signed state, per task and session
    "exec": "exec",  # one folder per `donegate exec` run
    "rooms": "rooms",  # clean-room copies of workdirs, by key
    "snapshots": "snapshots",  # workdir snapshots
    "serve_token": "serve.token",  # `donegate serve`'s generated token
    "signing_key": "signing.key",  # the Ed25519 signing key
    "legacy_signing_key": "signing.hmac.key",  # the HMAC key of older certificates
    "probes": "probes",  # the sandbox probes that worked (bwrap.json)
    "gate": "gate",  # the resident hook gate's sockets, a 0700 folder (donegate.cli._resident)
}
"""The data directory's layout, named in this one place: every module asks `data_path`."""


def data_path(name: DataPath) -> Path:
    """Where `name` lives in the data directory (`DATA_LAYOUT`); not created here."""
    return data_dir() / DATA_LAYOUT[name]


def signing_key_env() -> str | None:
    """``$DONEGATE_SIGNING_KEY`` when set (even empty: the signer rejects a weak key)."""
    return os.environ.get(SIGNING_KEY_ENV)


def isolation_mode() -> str:
    """``$DONEGATE_ISOLATION`` trimmed and lower-cased (default ``auto``); the caller checks it."""
    return (os.environ.get(ISOLATION_ENV) or "auto").strip().lower()


def semconv_opt_in() -> frozenset[str]:
    """The tokens of ``$OTEL_SEMCONV_STABILITY_OPT_IN`` (comma-separated, as OpenTelemetry
    reads it)."""
    value = os.environ.get(SEMCONV_OPT_IN_ENV, "")
    return frozenset(t.strip() for t in value.split(",") if t.strip())
