"""The CLIs that keep their own folder at ``$VARIABLE`` or ``~/.name`` (Claude Code, Codex CLI).

That folder is where the CLI writes its transcripts (a data root the gate may read) and the
state it must be able to write in the sandbox ``donegate exec`` runs it in; both come from the
one rule here, read from this process's environment or from the one a sandbox gives the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

__all__ = ["OwnHome", "cli_home"]


def cli_home(variable: str, folder: str, env: Mapping[str, str] | None = None) -> Path:
    """``$variable`` if set, else ``$HOME/folder`` (the user's home when ``HOME`` is unset),
    in `env` (this process's environment by default)."""
    env = os.environ if env is None else env
    if env.get(variable):
        return Path(env[variable]).expanduser()
    home = Path(env["HOME"]).expanduser() if env.get("HOME") else Path.home()
    return home / folder


class OwnHome:
    """A mixin for an `AgentCLI` whose own folder follows `cli_home`: it is the CLI's data root
    and its state folder."""

    home_variable: ClassVar[str]
    """The environment variable that moves the folder (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``)."""
    home_folder: ClassVar[str]
    """The folder's name under the home directory otherwise (``.claude``, ``.codex``)."""

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        """The CLI's own folder under `env` (this process's environment by default)."""
        return cli_home(self.home_variable, self.home_folder, env)

    def data_roots(self) -> list[Path]:
        """The CLI's own folder: transcripts under it may be read."""
        return [self.home()]

    def state_folders(self, env: Mapping[str, str]) -> list[Path]:
        """The CLI's own folder under `env`: writable in the ``donegate exec`` sandbox."""
        return [self.home(env)]
