"""``donegate replay``: run the loop on a script through a provider's wire format."""

from __future__ import annotations

from donegate.cli._app import app  # noqa: F401  (the command is added once the player lands)
