"""A throwaway PostgreSQL cluster a test may stop and start: never the shared one on 54329.

Built the way ``.ci/services.sh`` builds the shared server (``initdb`` and ``pg_ctl`` run as the
``postgres`` user), in its own directory under /tmp, on a free port. Needs root (to run as
``postgres``) and the server binaries; `available` says why not otherwise.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Cluster", "available", "cluster"]


def _bindir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


def available() -> str | None:
    """None when a cluster can be made here, else the reason it cannot."""
    if _bindir() is None:
        return "no PostgreSQL server binaries under /usr/lib/postgresql"
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return "running initdb as the postgres user needs root and runuser"
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return "there is no postgres user"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """One initialised data directory and the server on it."""

    def __init__(self, root: Path) -> None:
        bindir = _bindir()
        assert bindir is not None
        self.bin = bindir
        self.root = root
        self.data = root / "data"
        self.port = _free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _pg(self, *args: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=60,
        )

    def init(self) -> None:
        self._pg(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def start(self) -> None:
        """Start the server and wait until it takes connections."""
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
            "-c fsync=off -c full_page_writes=off"
        )
        self._pg(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"),
            "-o", options, "-w", "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate``: as if it crashed)."""
        self._pg(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """A started throwaway cluster, stopped and deleted afterwards."""
    root = Path(tempfile.mkdtemp(prefix="donegate-pg-"))
    root.chmod(0o755)
    shutil.chown(root, "postgres")
    pg = Cluster(root)
    try:
        pg.init()
        pg.start()
        yield pg
    finally:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            pg.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
