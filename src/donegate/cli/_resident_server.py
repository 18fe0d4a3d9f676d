"""The resident gate: a warm process that forks one child per hook call.

``python -m donegate.cli._resident_server SOCKET PRELOAD``, started detached by a cold stop
(`donegate.cli._resident.spawn_server`). It imports what a stop uses (``donegate.cli.hook`` and
the modules in PRELOAD, the comma-separated names the cold stop had imported), takes a lock
beside SOCKET (one server per socket; the lock file holds its pid), binds it and waits. For
each call it checks the peer's uid, the protocol and its code stamp, then forks a child that
says it started, takes the client's descriptors as 0, 1 and 2, its environment, working
directory, umask and arguments, and runs `donegate.cli.main`: the cold path's code in a fresh
process. The server sends the child's wait status back and closes. A client that hangs up (the
CLI gave up on the hook) gets its child ended with SIGTERM, as the CLI would end a cold hook.

It exits when no call came for ``$DONEGATE_HOOK_RESIDENT_IDLE`` seconds (default 600), when its
socket is gone or replaced, and after refusing a call because the donegate files it loaded
changed since (the stamp: path, mtime and size of every loaded module's file and every source
file of the package); the next cold stop starts a server of the new code. The security
reasoning is in `donegate.cli._resident`.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib
import io
import os
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import NoReturn

from donegate.cli._resident import (
    IDLE_ENV,
    PROTOCOL,
    installed,
    peer_uid,
    read_message,
    write_message,
)

__all__ = ["DEFAULT_IDLE_S", "code_stamp", "main"]

DEFAULT_IDLE_S = 600.0
"""Seconds without a call after which the server exits (`IDLE_ENV` overrides)."""
_LOOK_S = 30.0  # how often an idle server looks whether its socket is still its own
_READ_TIMEOUT_S = 10.0  # a client sends its request at once: one that stalls is dropped
_NEVER_PRELOAD = frozenset({"__main__", "__mp_main__", "donegate.__main__", __name__})


def code_stamp() -> str:
    """A digest of the files this process's code came from: every loaded module's file and every
    source file of the donegate package (path, mtime, size)."""
    import donegate

    files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    package = os.path.dirname(os.path.abspath(donegate.__file__ or ""))
    for folder, dirs, names in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        files.update(os.path.join(folder, n) for n in names if n.endswith(".py"))
    digest = hashlib.sha256()
    for path in sorted(f for f in files if isinstance(f, str)):
        try:
            info = os.stat(path)
            digest.update(f"{path}\0{info.st_mtime_ns}\0{info.st_size}\n".encode())
        except OSError:
            digest.update(f"{path}\0gone\n".encode())
    return digest.hexdigest()


def _warm(preload: list[str]) -> None:
    """Import what a stop uses, so a child only runs it."""
    importlib.import_module("donegate.cli.hook")
    for name in preload:
        if name and name not in _NEVER_PRELOAD and not name.startswith("donegate.cli._resident"):
            with contextlib.suppress(Exception):
                importlib.import_module(name)


@dataclass(frozen=True)
class _Request:
    """A client's call, checked: who the child becomes."""

    argv0: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    umask: int
    stdio: list[tuple[str | None, str | None, bool]]


def _parse(message: dict[str, object]) -> _Request:
    """The call in `message`; `ValueError` naming what is wrong with it."""
    args, env, stdio = message.get("args"), message.get("env"), message.get("stdio")
    argv0, cwd, umask = message.get("argv0"), message.get("cwd"), message.get("umask")
    if not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        raise ValueError("args: not a list of strings")
    if not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
        raise ValueError("env: not an object of strings")
    if not (isinstance(argv0, str) and isinstance(cwd, str) and isinstance(umask, int)):
        raise ValueError("argv0, cwd or umask: wrong type")
    if not (isinstance(stdio, list) and len(stdio) == 3):
        raise ValueError("stdio: not three streams")
    streams = []
    for item in stdio:
        if not (isinstance(item, list) and len(item) == 3):
            raise ValueError("stdio: a stream is not [encoding, errors, line_buffering]")
        encoding, errors, line = item
        streams.append(
            (
                encoding if isinstance(encoding, str) else None,
                errors if isinstance(errors, str) else None,
                bool(line),
            )
        )
    return _Request(
        argv0=argv0,
        args=list(args),
        env={str(k): v for k, v in env.items()},
        cwd=cwd,
        umask=umask & 0o777,
        stdio=streams,
    )


@dataclass
class _Call:
    """A child at work for one client."""

    pid: int
    conn: socket.socket
    pidfd: int
    client_open: bool = True


@dataclass
class _Server:
    listener: socket.socket
    path: str
    inode: int
    stamp: str
    idle_s: float
    lock: int
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    calls: dict[int, _Call] = field(default_factory=dict)
    closing: bool = False
    last: float = field(default_factory=time.monotonic)

    def loop(self) -> None:
        self.selector.register(self.listener, selectors.EVENT_READ, ("listen", 0))
        while not (self.closing and not self.calls):
            idle = time.monotonic() - self.last >= self.idle_s
            if not self.calls and (idle or not self._own_socket()):
                self.closing = True
                continue
            wait = min(_LOOK_S, max(0.0, self.idle_s - (time.monotonic() - self.last)))
            for key, _ in self.selector.select(None if self.calls else wait):
                kind, pid = key.data
                if kind == "listen":
                    self._accept()
                elif kind == "exited":
                    self._finish(pid)
                else:
                    self._client_event(pid)
        self._close()

    def _own_socket(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        try:
            self._handle(conn)
        except (OSError, EOFError, ValueError):
            conn.close()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(_READ_TIMEOUT_S)
        if peer_uid(conn) != os.geteuid():
            write_message(conn, {"refused": "another user"})
            conn.close()
            return
        message, fds = read_message(conn, fds=3)
        refusal = self._refusal(message, fds)
        if refusal is not None:
            for fd in fds:
                os.close(fd)
            write_message(conn, {"refused": refusal})
            conn.close()
            return
        request = _parse(message)
        conn.settimeout(None)
        pid = os.fork()
        if pid == 0:
            _child(conn, request, fds, self)
        for fd in fds:
            os.close(fd)
        call = _Call(pid=pid, conn=conn, pidfd=os.pidfd_open(pid))
        self.calls[pid] = call
        self.selector.register(call.pidfd, selectors.EVENT_READ, ("exited", pid))
        self.selector.register(conn, selectors.EVENT_READ, ("client", pid))

    def _refusal(self, message: dict[str, object], fds: list[int]) -> str | None:
        if message.get("protocol") != PROTOCOL:
            return f"protocol {message.get('protocol')!r}, this server speaks {PROTOCOL}"
        if len(fds) != 3:
            return f"{len(fds)} descriptors passed, expected 3"
        if message.get("installed") != list(installed()):
            return "another interpreter or donegate installation"
        try:
            _parse(message)
        except ValueError as exc:
            return f"a bad request: {exc}"
        if code_stamp() != self.stamp:
            self.closing = True  # this code is stale: the next cold stop starts a new server
            self.selector.unregister(self.listener)
            return "the installed donegate changed since this server started"
        return None

    def _client_event(self, pid: int) -> None:
        """The client sent something or hung up: a client gone means its stop is abandoned."""
        call = self.calls[pid]
        try:
            gone = call.conn.recv(1, socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return
        except OSError:
            gone = True
        if gone:
            self.selector.unregister(call.conn)
            call.client_open = False
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def _finish(self, pid: int) -> None:
        call = self.calls.pop(pid)
        _, status = os.waitpid(pid, 0)
        self.selector.unregister(call.pidfd)
        os.close(call.pidfd)
        if call.client_open:
            self.selector.unregister(call.conn)
            with contextlib.suppress(OSError):
                write_message(call.conn, {"status": status})
        call.conn.close()
        self.last = time.monotonic()

    def _close(self) -> None:
        if self._own_socket():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        self.listener.close()

    def close_in_child(self, keep: socket.socket) -> None:
        """What a forked child must not hold: the listener and the other calls' descriptors."""
        self.listener.close()
        os.close(self.lock)
        for call in self.calls.values():
            if call.conn is not keep:
                call.conn.close()
            os.close(call.pidfd)
        with contextlib.suppress(Exception):
            self.selector.close()


def _child(conn: socket.socket, request: _Request, fds: list[int], server: _Server) -> NoReturn:
    """The forked child: become the client's hook process and run the hook. Never returns."""
    code = 1
    try:
        server.close_in_child(conn)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        write_message(conn, {"started": os.getpid()})  # before anything with an effect
        _become(request, fds)
        code = _run_main(request.args)
    except BaseException:  # the child must end with a status, whatever happened
        with contextlib.suppress(Exception):
            traceback.print_exc()
    with contextlib.suppress(BaseException):
        getattr(threading, "_shutdown", lambda: None)()
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    with contextlib.suppress(BaseException):
        write_message(conn, {"exit": code})
    os._exit(code)


def _become(request: _Request, fds: list[int]) -> None:
    """Take the client's descriptors, environment, directory, umask and arguments."""
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request.env)
    os.chdir(request.cwd)
    os.umask(request.umask)
    sys.argv = [request.argv0, *request.args]
    modes = ("r", "w", "w")
    streams = [_stream(fd, modes[fd], *request.stdio[fd]) for fd in (0, 1, 2)]
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[misc]
    from donegate.harness.signing import forget_taken_key

    forget_taken_key()  # the client's environment holds no key (it would have run cold)


def _stream(
    fd: int, mode: str, encoding: str | None, errors: str | None, line: bool
) -> io.TextIOWrapper:
    """A standard stream on `fd` set up as the client's was."""
    raw = open(fd, mode + "b", closefd=False)  # noqa: SIM115 (the stream outlives this call)
    return io.TextIOWrapper(raw, encoding=encoding, errors=errors, line_buffering=line)


def _run_main(args: list[str]) -> int:
    """`donegate.cli.main` on `args`, and the exit code Python would give its `SystemExit`."""
    from donegate.cli import main

    try:
        main(args)
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> None:
    """Serve the socket ``argv[0]`` after importing the modules named in ``argv[1]``."""
    from donegate.harness.custody import secure_process
    from donegate.harness.signing import forget_taken_key

    path, preload = argv[0], (argv[1] if len(argv) > 1 else "")
    try:
        idle = float(os.environ.get(IDLE_ENV) or DEFAULT_IDLE_S)
    except ValueError:
        idle = DEFAULT_IDLE_S
    secure_process()  # non-dumpable: a same-user process cannot read this one's memory
    forget_taken_key()  # each child reads the key as its cold twin would, from the files
    os.umask(0o077)
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server has this socket
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())  # who serves it (`donegate.cli._resident`)
    _warm(preload.split(","))
    stamp = code_stamp()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a socket left by a server that died: no server holds the lock
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    _Server(listener, path, os.stat(path).st_ino, stamp, idle, lock).loop()


if __name__ == "__main__":
    main(sys.argv[1:])
