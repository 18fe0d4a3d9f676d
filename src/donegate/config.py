"""The data directory and donegate's environment variables, read in one place.

Every layer that needs the data directory (the store's default SQLite file, certificates and
escalation reports, agent-hook state, the signing key) asks `data_dir()`, so one variable moves
all of it. Nothing the gate trusts is kept under an agent's working directory: this folder is
the harness's own.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_DIR_ENV", "DB_ENV", "SIGNING_KEY_ENV", "data_dir", "signing_key_env"]

DATA_DIR_ENV = "DONEGATE_HOME"
"""Where donegate keeps its state (default ``~/.donegate``)."""
DB_ENV = "DONEGATE_DB"
"""The task store's URL or SQLite path (default ``$DONEGATE_HOME/donegate.db``)."""
SIGNING_KEY_ENV = "DONEGATE_SIGNING_KEY"
"""The certificate signing key (default: ``$DONEGATE_HOME/signing.key``, made on first use)."""


def data_dir() -> Path:
    """``$DONEGATE_HOME`` (default ``~/.donegate``), user-expanded; not created here."""
    home = os.environ.get(DATA_DIR_ENV)
    return Path(home).expanduser() if home else Path.home() / ".donegate"


def signing_key_env() -> str | None:
    """``$DONEGATE_SIGNING_KEY`` when set (even empty: the signer rejects a weak key)."""
    return os.environ.get(SIGNING_KEY_ENV)
