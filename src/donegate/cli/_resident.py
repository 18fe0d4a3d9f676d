"""The resident gate's client: ``donegate hook NAME ...`` answered by a warm process.

A ``donegate hook`` process spends most of its time importing (pydantic and the task, state and
certificate models, click, cryptography, psutil, yaml). So `donegate.cli.main` hands a hook call,
before importing any of that, to `run_warm`: it connects to the data directory's gate socket and
passes its own stdin, stdout and stderr (``SCM_RIGHTS``), its arguments, environment, working
directory and umask. The server (`donegate.cli._resident_server`), a process that has imported
everything a stop uses, FORKS a child per call that takes those descriptors as 0, 1 and 2 and
runs `donegate.cli.main` on the arguments: the cold path's own code, `secure_process` included,
in a fresh process per stop, so no state passes from one stop to the next. The client exits with
the child's status. This module imports the standard library and `donegate.config` only.

Fallback, never a weaker answer: no socket, a refused connection, a folder or server that is not
this user's, a path too long for a socket, a server whose code is older than the installed
donegate (it refuses and exits), ``$DONEGATE_SIGNING_KEY`` set (the key is never sent over a
socket), ``DONEGATE_HOOK_RESIDENT=0``, or a server that went away before the child said it had
started: `run_warm` returns None and the caller runs the hook in process, as before. The child
says it started before it does anything else, so a call the client falls back on had no effect.
A child that started and whose status never came back (its server killed mid-call) is not run
again (it may have written state or a certificate): the client reports it the way the CLI sees a
crashed hook, one line on stderr and exit 1, as a cold hook killed mid-stop would. A cold stop
that found no server starts one after it has answered (`spawn_server`).

One server per data directory, user, interpreter and installed package: the socket's name hashes
the last two, the data directory and its 0700 folder give the first two, and the server refuses
a call when its loaded code no longer matches the files. Per session would pay a cold start and
a lingering process for each session; per data directory is as safe, since each stop forks fresh
and the data directory is already the unit of the gate's state and key.

Who can use it: the folder is ``$DONEGATE_HOME/gate`` (0700, checked by the client), and the
server refuses a peer of another uid (``SO_PEERCRED``); the client refuses a server of another
uid. A same-user process connecting gets nothing it could not get by running ``donegate hook``
itself. A same-user process that replaced the socket with its own server could answer "allow",
but it cannot sign a certificate with the gate's key: the client never sends the key (with
``$DONEGATE_SIGNING_KEY`` set it runs cold), and a process that can replace files in the data
directory can read the key file there anyway, so the proof is not weakened. The agent under
``donegate exec --sandbox`` cannot reach the data directory (the sandbox hides it); its hook
is the relay to the gateway, which runs ``donegate hook`` outside, where this client applies.
"""

from __future__ import annotations

import binascii
import json
import os
import socket
import struct
import sys

from donegate.config import HOOK_RESIDENT_ENV as RESIDENT_ENV
from donegate.config import HOOK_RESIDENT_IDLE_ENV as IDLE_ENV
from donegate.config import SIGNING_KEY_ENV, data_path

__all__ = [
    "GATED",
    "IDLE_ENV",
    "PROTOCOL",
    "RESIDENT_ENV",
    "gate_dir",
    "installed",
    "read_message",
    "run_warm",
    "socket_path",
    "spawn_server",
    "wanted",
    "write_message",
]

PROTOCOL = 1
"""The request format; a server of another protocol refuses (the client then runs cold)."""
GATED = frozenset({"claude", "codex", "gemini", "claude-stop"})
"""The hook names that decide a stop (``install``, ``doctor``, ... always run in process)."""
SOCKET_PATH_MAX = 107
"""Bytes of a Unix socket path (108 with its NUL); a longer one means the cold path."""
_HEADER = struct.Struct("!I")
_MESSAGE_MAX = 16 * 1024 * 1024
_CONNECT_TIMEOUT_S = 5.0


def wanted(args: list[str]) -> bool:
    """Whether this command line is a stop for the resident gate to answer."""
    return (
        len(args) >= 2
        and args[0] == "hook"
        and args[1] in GATED
        and "--help" not in args
        and os.environ.get(RESIDENT_ENV, "").strip() != "0"
        and SIGNING_KEY_ENV not in os.environ
        and sys.platform.startswith("linux")
        and hasattr(socket, "send_fds")
        and hasattr(os, "pidfd_open")
    )


def gate_dir() -> str:
    """The resident gate's folder in the data directory (`DATA_LAYOUT` ``gate``)."""
    return os.fspath(data_path("gate"))


def installed() -> tuple[str, str]:
    """This interpreter and this installed donegate package (what a server must share)."""
    return os.path.realpath(sys.executable), os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))
    )


def socket_path() -> str:
    """This interpreter's and this installed donegate's socket in `gate_dir`. The name is a CRC
    (``hashlib`` costs a hook ~4 ms to import): the server checks `installed` itself."""
    who = "\0".join([*installed(), str(PROTOCOL)]).encode()
    name = f"{binascii.crc32(who):08x}{binascii.crc32(who[::-1]):08x}.sock"
    return os.path.join(gate_dir(), name)


def write_message(
    conn: socket.socket, message: dict[str, object], fds: tuple[int, ...] = ()
) -> None:
    """One length-prefixed JSON message, with `fds` passed along (``SCM_RIGHTS``)."""
    body = json.dumps(message).encode()
    blob = _HEADER.pack(len(body)) + body
    sent = socket.send_fds(conn, [blob], list(fds)) if fds else conn.send(blob)
    conn.sendall(blob[sent:])


def read_message(conn: socket.socket, *, fds: int = 0) -> tuple[dict[str, object], list[int]]:
    """One message written by `write_message` and up to `fds` descriptors; `EOFError` when the
    peer closed first, `ValueError` for a message that is not one."""
    head, passed = _read_exactly(conn, _HEADER.size, fds)
    (size,) = _HEADER.unpack(head)
    if size > _MESSAGE_MAX:
        raise ValueError(f"a message of {size} bytes")
    body, _ = _read_exactly(conn, size, 0)
    message = json.loads(body)
    if not isinstance(message, dict):
        raise ValueError("a message that is not an object")
    return message, passed


def _read_exactly(conn: socket.socket, size: int, fds: int) -> tuple[bytes, list[int]]:
    data = b""
    passed: list[int] = []
    while len(data) < size:
        if fds and not passed:
            chunk, got, _flags, _addr = socket.recv_fds(conn, size - len(data), fds)
            passed = list(got)
        else:
            chunk = conn.recv(size - len(data))
        if not chunk:
            for fd in passed:
                os.close(fd)
            raise EOFError("the peer closed the connection")
        data += chunk
    return data, passed


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of `conn` (``SO_PEERCRED``)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def _private_dir(path: str) -> bool:
    """Whether `path` is a folder of this user's that no one else may enter."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        (info.st_mode & 0o170000) == 0o040000
        and info.st_uid == os.geteuid()
        and not (info.st_mode & 0o077)
    )


def _stream(stream: object) -> list[object]:
    """How Python set up one of the standard streams, so the child's are the same."""
    return [
        getattr(stream, "encoding", None),
        getattr(stream, "errors", None),
        bool(getattr(stream, "line_buffering", False)),
    ]


def _request(args: list[str]) -> dict[str, object]:
    umask = os.umask(0o077)
    os.umask(umask)
    return {
        "protocol": PROTOCOL,
        "installed": list(installed()),
        "argv0": sys.argv[0] if sys.argv else "donegate",
        "args": args,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "umask": umask,
        "stdio": [_stream(sys.stdin), _stream(sys.stdout), _stream(sys.stderr)],
    }


def run_warm(args: list[str]) -> int | None:
    """Have the resident gate answer this hook call: the child's exit code (a negative number:
    the signal that ended it), or None when the caller must run the hook itself."""
    path = socket_path()
    if len(os.fsencode(path)) > SOCKET_PATH_MAX or not _private_dir(gate_dir()):
        return None
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        request = _request(args)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except (OSError, ValueError):
        return None
    with conn:
        try:
            conn.settimeout(_CONNECT_TIMEOUT_S)
            conn.connect(path)
            if peer_uid(conn) != os.geteuid():
                return None
            write_message(conn, request, (0, 1, 2))
            conn.settimeout(None)  # the CLI's own hook timeout ends a stop that hangs
        except OSError:
            return None
        return _outcome(conn)


def _outcome(conn: socket.socket) -> int | None:
    """Read the server's and the child's messages until the server closes."""
    started = False
    exit_code: int | None = None
    while True:
        try:
            message, _ = read_message(conn)
        except (EOFError, OSError, ValueError):
            break
        if "refused" in message and not started:
            return None
        if "started" in message:
            started = True
        if isinstance(message.get("exit"), int):
            exit_code = int(message["exit"])  # type: ignore[call-overload]
        status = message.get("status")
        if isinstance(status, int):
            return _code(status)
    if not started:
        return None  # the child never ran: nothing happened, the cold path answers
    if exit_code is not None:
        return exit_code
    os.write(2, b"donegate hook: the resident gate ended before the hook reported its status\n")
    return 1


def _code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def spawn_server(preload: list[str]) -> None:
    """Start the resident gate for this data directory, detached (its own session, its stdio
    on /dev/null, none of this process's descriptors), unless one answers already. The server
    imports `preload` (what this stop imported) before it takes calls."""
    folder = gate_dir()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if not _private_dir(folder):
            return
        path = socket_path()
        if len(os.fsencode(path)) > SOCKET_PATH_MAX or _answers(path):
            return
        import subprocess

        from donegate.config import PROCESS_TOKEN_ENV

        env = {k: v for k, v in os.environ.items() if k != PROCESS_TOKEN_ENV}
        subprocess.Popen(
            # -P: no folder prepended to sys.path (with -m, the start folder would be first)
            [sys.executable, "-P", "-m", "donegate.cli._resident_server", path, ",".join(preload)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,
            cwd="/",
            env=env,
        )
    except OSError:
        return


def _answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.settimeout(_CONNECT_TIMEOUT_S)
            conn.connect(path)
        except OSError:
            return False
    return True
