"""The gate's end of the hook relay: a Unix socket bound into the sandbox, the hook run outside.

Under ``donegate exec`` with the sandbox, the agent CLI's hook command is the relay
(`donegate.harness.agents.relay`), which can reach nothing but this socket. For each connection
the gateway reads the payload (at most ``MAX_PAYLOAD_BYTES`` + 1 bytes: the hook refuses a larger
one and says so), runs the gate's own hook command (``donegate hook NAME --task ...``, the one
``exec`` would have installed without the sandbox) outside the sandbox with the payload on its
stdin and the sandbox's process tree to freeze (``--freeze-pid``), and sends back what it
printed. What the hook reads and writes (the task, its state, the digests, the key) never
enters the sandbox; the agent can only hand in a payload, as it always could.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from donegate.harness.agents.base import MAX_PAYLOAD_BYTES, AgentCLI

__all__ = ["RELAY_SCRIPT", "HookGateway", "relay_command"]

RELAY_SCRIPT = Path(__file__).resolve().with_name("relay.py")
"""The relay the CLI runs inside the sandbox (stdlib only)."""
_READ_TIMEOUT_S = 60.0  # a relay sends its payload at once: one that stalls is dropped


def relay_command(agent: AgentCLI, socket_path: Path) -> str:
    """The hook command line inside the sandbox: this interpreter, isolated and without
    ``site`` (fast, and nothing of the workdir or the user site is imported), running the
    relay toward `socket_path`; `agent`'s blocking word is what it answers when it cannot."""
    argv = [sys.executable, "-I", "-S", str(RELAY_SCRIPT), str(socket_path)]
    return shlex.join([*argv, agent.block_decision])


class HookGateway:
    """A listening socket for one exec run; each relay connection runs `hook` once.

    ``with HookGateway(agent, hook, env=..., cwd=..., timeout_s=...) as gateway:`` binds the
    socket (`socket_path`, in a private folder of its own); set `freeze_pid` once the sandbox
    runs.
    """

    def __init__(
        self,
        agent: AgentCLI,
        hook: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout_s: float,
    ) -> None:
        self.agent = agent
        self.hook = list(hook)
        self.env = dict(env)
        self.cwd = cwd
        self.timeout_s = timeout_s
        self.freeze_pid: int | None = None
        """The sandbox's outermost process: the hook stops its tree while it copies."""
        self.folder = Path(tempfile.mkdtemp(prefix="dg-gate-", dir=_short_tmp()))  # mode 0700
        """A private folder outside ``DONEGATE_HOME``: the socket, and what the CLI may see."""
        self.socket_path = self.folder / "gate.sock"
        """Where the relay connects (bound into the sandbox at the same path)."""
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="donegate-gateway", daemon=True)

    def __enter__(self) -> HookGateway:
        self._server.bind(str(self.socket_path))
        self._server.listen(16)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._thread.join(5)
        with contextlib.suppress(OSError):
            self.socket_path.unlink()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(_READ_TIMEOUT_S)
                payload = _read(conn, MAX_PAYLOAD_BYTES + 1)
                answer = self.answer(payload)
                conn.settimeout(None)
                conn.sendall(json.dumps(answer).encode("utf-8"))
            except OSError:
                return  # the relay went away: the CLI sees its hook fail

    def answer(self, payload: bytes) -> dict[str, str]:
        """Run the gate's hook on `payload` outside the sandbox: what it printed.

        The hook itself fails closed on anything it cannot decide; a hook that cannot be
        started, runs past the CLI's timeout or dies without an answer is answered with a
        block naming why (fail closed here too)."""
        argv = list(self.hook)
        if self.freeze_pid is not None:
            argv += ["--freeze-pid", str(self.freeze_pid)]
        try:
            done = subprocess.run(
                argv,
                input=payload,
                capture_output=True,
                env=self.env,
                cwd=self.cwd,
                timeout=self.timeout_s,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return self._blocked(f"the gate's hook could not run: {exc}")
        out = done.stdout.decode("utf-8", errors="replace")
        err = done.stderr.decode("utf-8", errors="replace")
        if done.returncode != 0 and not out.strip():
            return self._blocked(f"the gate's hook exited with code {done.returncode}", err)
        return {"stdout": out, "stderr": err}

    def _blocked(self, why: str, stderr: str = "") -> dict[str, str]:
        reason = f"donegate: {why}; the stop is blocked until the gate can decide"
        answer = json.dumps(self.agent.answer(reason), ensure_ascii=False)
        return {"stdout": answer + "\n", "stderr": stderr + reason + "\n"}


def _read(conn: socket.socket, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = conn.recv(min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _short_tmp() -> str | None:
    """A folder for the socket whose path fits ``AF_UNIX``'s 107 bytes: the temp folder, or
    ``/tmp`` when ``TMPDIR`` is deep (a test's tmp path, a CI runner's work folder)."""
    default = tempfile.gettempdir()
    if len(default) <= 60 or not os.path.isdir("/tmp"):
        return None
    return "/tmp"
