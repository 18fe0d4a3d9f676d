"""The data directory and donegate's environment variables, read in one place.

Every layer that needs the data directory (the store's default SQLite file, certificates and
escalation reports, agent-hook state, the signing key) asks `data_dir()`, so one variable moves
all of it. Nothing the gate trusts is kept under an agent's working directory: this folder is
the harness's own.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "BROKER_ENV",
    "DATA_DIR_ENV",
    "DB_ENV",
    "HOLD_DELIVERY_ENV",
    "IDEMPOTENCY_KEY_ENV",
    "PROCESS_TOKEN_ENV",
    "SERVE_TOKEN_ENV",
    "SIGNING_KEY_ENV",
    "data_dir",
    "hold_delivery",
    "signing_key_env",
]

DATA_DIR_ENV = "DONEGATE_HOME"
"""Where donegate keeps its state (default ``~/.donegate``)."""
DB_ENV = "DONEGATE_DB"
"""The task store's URL or SQLite path (default ``$DONEGATE_HOME/donegate.db``)."""
SIGNING_KEY_ENV = "DONEGATE_SIGNING_KEY"
"""The certificate signing key (default: ``$DONEGATE_HOME/signing.key``, made on first use)."""
BROKER_ENV = "DONEGATE_BROKER"
"""The Celery broker's Redis URL (``--broker``)."""
SERVE_TOKEN_ENV = "DONEGATE_SERVE_TOKEN"
"""Tokens for ``donegate serve`` (``NAME:SECRET``, comma-separated for several)."""
HOLD_DELIVERY_ENV = "DONEGATE_TEST_HOLD_DELIVERY"
"""Set (non-empty): the outbox delivers nothing (tests hold notices back to watch them wait)."""
IDEMPOTENCY_KEY_ENV = "DONEGATE_IDEMPOTENCY_KEY"
"""Set for a notification command: the notice's idempotency key (read by the command)."""
PROCESS_TOKEN_ENV = "DONEGATE_PROCESS_TOKEN"
"""Set in every child the harness starts, so its leftovers can be found and ended."""


def data_dir() -> Path:
    """``$DONEGATE_HOME`` (default ``~/.donegate``), user-expanded; not created here."""
    home = os.environ.get(DATA_DIR_ENV)
    return Path(home).expanduser() if home else Path.home() / ".donegate"


def signing_key_env() -> str | None:
    """``$DONEGATE_SIGNING_KEY`` when set (even empty: the signer rejects a weak key)."""
    return os.environ.get(SIGNING_KEY_ENV)


def hold_delivery() -> bool:
    """True while ``$DONEGATE_TEST_HOLD_DELIVERY`` is set and non-empty."""
    return bool(os.environ.get(HOLD_DELIVERY_ENV))
