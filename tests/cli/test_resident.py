"""The resident hook gate: a warm server forks a fresh child per stop, answering exactly as a
cold ``donegate hook`` process, and every way of failing to reach it runs the cold path."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from donegate.cli import _resident
from donegate.harness.agents import AGENTS

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="SCM_RIGHTS, SO_PEERCRED and pidfds are Linux's"
)

PROBE = """\
import atexit, json, os, runpy, sys
atexit.register(lambda: open(os.environ["PROBE_OUT"], "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["donegate", *sys.argv[1:]]
runpy.run_module("donegate", run_name="__main__")
"""
"""``python -m donegate ARGS`` that writes the modules it imported to ``$PROBE_OUT``."""

HEAVY = ("click", "pydantic", "cryptography", "psutil", "yaml", "donegate.cli.hook",
         "donegate.harness")  # fmt: skip
WAIT_S = 120.0  # generous: the server imports everything a stop uses, on a loaded machine


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DONEGATE_")}
    return {**env, "DONEGATE_HOME": str(home), "DONEGATE_HOOK_RESIDENT": "1", **extra}


def _task(tmp_path: Path, *, passing: bool) -> Path:
    check = "run: ['true']" if passing else "file_exists: missing.txt"
    task = tmp_path / ("pass.yaml" if passing else "block.yaml")
    task.write_text(f"id: t\nprompt: p\nmax_continuations: 3\nchecks:\n  - {check}\n")
    return task


def _stop(
    home: Path, task: Path, work: Path, session: str, **extra: str
) -> tuple[subprocess.CompletedProcess[bytes], set[str]]:
    """One ``donegate hook claude`` process; its result and the modules it imported."""
    out = home.parent / f"modules-{home.name}-{session}.json"
    payload = {"session_id": session, "cwd": str(work), "hook_event_name": "Stop",
               "stop_hook_active": False, "last_assistant_message": "done"}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "hook", "claude", "--task", str(task)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={**_env(home, **extra), "PROBE_OUT": str(out)},
        cwd=work,
        timeout=WAIT_S,
        check=False,
    )
    return proc, set(json.loads(out.read_text()))


def _socket(home: Path) -> str:
    old = os.environ.get("DONEGATE_HOME")
    os.environ["DONEGATE_HOME"] = str(home)
    try:
        return _resident.socket_path()
    finally:
        if old is not None:
            os.environ["DONEGATE_HOME"] = old


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"waited {WAIT_S:.0f} s for {what}"
        time.sleep(0.05)


def _answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(path)
        except OSError:
            return False
    return True


class Server:
    """A resident gate this test started (so it can end it)."""

    def __init__(self, home: Path, *, preload: str = "", **extra: str) -> None:
        self.path = _socket(home)
        Path(self.path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "donegate.cli._resident_server", self.path, preload],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # the answers cannot come from the server's own stdio
            stderr=subprocess.DEVNULL,
            env=_env(home, **extra),
            start_new_session=True,
        )
        _wait_for(lambda: self.proc.poll() is not None or _answers(self.path), "the server")
        assert self.proc.poll() is None, "the server did not start"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT_S)


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """Servers the test starts, killed at its end; and any a cold stop started, by pid."""
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def _end_spawned(home: Path) -> None:
    """End a server a cold stop started (its pid is in the lock file beside its socket)."""
    lock = Path(_socket(home) + ".lock")
    if lock.exists() and lock.read_text().strip():
        pid = int(lock.read_text())
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return


def _plain(stderr: bytes, home: str) -> bytes:
    """The hook's stderr without what differs between two runs: the data directory and the
    certificate's time."""
    return re.sub(rb"t-[0-9T]+\.certificate", b"CERT", stderr.replace(f"/{home}/".encode(), b"/"))


def _normalized_state(home: Path) -> list[Any]:
    """Every hook state record, without its times and MAC (what differs between two runs)."""
    records = []
    for path in sorted((home / "hooks").rglob("*.json")):
        state = json.loads(path.read_text())["state"]
        for round_ in state["rounds"]:
            round_.pop("at")
            if round_.get("certificate"):
                round_["certificate"] = Path(round_["certificate"]).parent.name
        records.append((str(path.relative_to(home)), state))
    return records


@pytest.mark.slow
def test_a_warm_stop_answers_byte_for_byte_as_a_cold_one(
    tmp_path: Path, servers: list[Server]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    servers.append(Server(warm))
    for passing in (True, False):
        task = _task(tmp_path, passing=passing)
        for n in range(2):  # a passing stop each time; a blocking one twice (1 of 3, 2 of 3)
            session = f"{'pass' if passing else 'block'}-{0 if not passing else n}"
            a, _ = _stop(cold, task, work, session, DONEGATE_HOOK_RESIDENT="0")
            b, modules = _stop(warm, task, work, session)
            assert [m for m in HEAVY if m in modules] == []  # the warm server answered
            assert (b.returncode, b.stdout) == (a.returncode, a.stdout)
            assert a.stdout if not passing else not a.stdout
            assert _plain(b.stderr, "warm") == _plain(a.stderr, "cold")
    assert _normalized_state(warm) == _normalized_state(cold)
    assert len(list((warm / "certificates").glob("*.json"))) == 2
    assert len(list((cold / "certificates").glob("*.json"))) == 2


@pytest.mark.slow
def test_a_stop_with_no_server_runs_cold_then_starts_one(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    task = _task(tmp_path, passing=False)
    try:
        first, modules = _stop(home, task, work, "s1")
        assert "donegate.cli.hook" in modules  # it ran the hook itself
        assert b'"decision": "block"' in first.stdout and first.returncode == 0
        _wait_for(lambda: _answers(_socket(home)), "the server the cold stop started")
        assert os.stat(Path(_socket(home)).parent).st_mode & 0o777 == 0o700
        pid = int(Path(_socket(home) + ".lock").read_text())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert argv[1:4] == [
            b"-P",
            b"-m",
            b"donegate.cli._resident_server",
        ]  # no start folder on sys.path
        second, modules = _stop(home, task, work, "s1")
        assert [m for m in HEAVY if m in modules] == []
        assert b"(2 of 3)" in second.stderr and second.stdout == first.stdout
    finally:
        _end_spawned(home)


@pytest.mark.slow
def test_a_stale_socket_file_means_the_cold_path(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    path = _socket(home)
    Path(path).parent.mkdir(mode=0o700, parents=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(path)  # a socket file nobody listens on: a server that died
    try:
        proc, modules = _stop(home, _task(tmp_path, passing=True), work, "s1")
        assert "donegate.cli.hook" in modules
        assert proc.returncode == 0 and b"certificate" in proc.stderr
    finally:
        _end_spawned(home)


@pytest.mark.slow
def test_a_server_killed_while_idle_means_the_cold_path(
    tmp_path: Path, servers: list[Server]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    server = Server(home)
    servers.append(server)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(timeout=WAIT_S)
    try:
        proc, modules = _stop(home, _task(tmp_path, passing=False), work, "s1")
        assert "donegate.cli.hook" in modules
        assert b'"decision": "block"' in proc.stdout and b"(1 of 3)" in proc.stderr
    finally:
        _end_spawned(home)


@pytest.mark.slow
def test_a_server_whose_code_changed_refuses_and_exits(
    tmp_path: Path, servers: list[Server]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    extra = tmp_path / "extra"
    extra.mkdir()
    module = extra / "resident_probe_module.py"
    module.write_text("VALUE = 1\n")
    server = Server(home, preload="resident_probe_module", PYTHONPATH=str(extra))
    servers.append(server)
    module.write_text("VALUE = 22\n")  # code the server loaded changed on disk
    try:
        proc, modules = _stop(home, _task(tmp_path, passing=True), work, "s1")
        assert "donegate.cli.hook" in modules  # refused: the stop ran cold
        assert proc.returncode == 0 and b"certificate" in proc.stderr
        assert server.proc.wait(timeout=WAIT_S) == 0  # and the stale server exited
    finally:
        _end_spawned(home)


@pytest.mark.slow
def test_an_idle_server_exits_and_removes_its_socket(tmp_path: Path, servers: list[Server]) -> None:
    server = Server(tmp_path / "home", DONEGATE_HOOK_RESIDENT_IDLE="0.5")
    servers.append(server)
    assert server.proc.wait(timeout=WAIT_S) == 0
    assert not Path(server.path).exists()


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_the_server_refuses_a_peer_of_another_uid(tmp_path: Path, servers: list[Server]) -> None:
    home = tmp_path / "home"
    server = Server(home)
    servers.append(server)
    gate = Path(server.path).parent
    os.chmod(gate, 0o755)  # let the other user reach the socket at all (from inside the folder)
    os.chmod(server.path, 0o777)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child reports through the pipe and its exit code)
        code = 1
        try:
            os.close(read_end)
            os.chdir(gate)
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(Path(server.path).name)
                message, _ = _resident.read_message(conn)
            os.write(write_end, json.dumps(message).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        said = reader.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert json.loads(said) == {"refused": "another user"}
    assert server.proc.poll() is None  # and it keeps serving its own user


def _pair(*messages: dict[str, object]) -> socket.socket:
    """The client's end of a connection whose server sent `messages`, then closed."""
    client, server = socket.socketpair()
    for message in messages:
        _resident.write_message(server, message)
    server.close()
    return client


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ((), None),  # closed before anything: the cold path
        (({"refused": "another user"},), None),
        (({"started": 12}, {"exit": 0}, {"status": 0}), 0),
        (({"started": 12}, {"exit": 3}, {"status": 3 << 8}), 3),
        (({"started": 12}, {"status": signal.SIGKILL}), -signal.SIGKILL),  # killed: re-raised
        (({"started": 12}, {"exit": 0}), 0),  # the server died after the child said its code
        (({"started": 12},), 1),  # started, then nothing: a crashed hook, never run again
    ],
)
def test_the_client_reads_what_happened(
    messages: tuple[dict[str, object], ...], expected: int | None
) -> None:
    with _pair(*messages) as conn:
        assert _resident._outcome(conn) == expected


def test_the_gated_names_are_the_hook_commands() -> None:
    assert set(AGENTS) | {"claude-stop"} == _resident.GATED


def test_what_goes_to_the_resident_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DONEGATE_HOOK_RESIDENT", "1")
    assert _resident.wanted(["hook", "claude", "--task", "t.yaml"])
    assert not _resident.wanted(["hook", "install", "claude", "--task", "t.yaml"])
    assert not _resident.wanted(["hook", "claude", "--help"])
    assert not _resident.wanted(["run", "t.yaml"])
    monkeypatch.setenv("DONEGATE_HOOK_RESIDENT", "0")
    assert not _resident.wanted(["hook", "claude", "--task", "t.yaml"])
    monkeypatch.setenv("DONEGATE_HOOK_RESIDENT", "1")
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "ed25519:" + "00" * 32)
    assert not _resident.wanted(["hook", "claude", "--task", "t.yaml"])  # never sent to a socket


def test_a_socket_path_too_long_or_a_folder_not_private_means_the_cold_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / ("x" * 120)))
    assert _resident.run_warm(["hook", "claude"]) is None
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    gate = Path(_resident.gate_dir())
    gate.mkdir(parents=True, mode=0o755)
    os.chmod(gate, 0o755)
    assert not _resident._private_dir(str(gate))
    assert _resident.run_warm(["hook", "claude"]) is None
    os.chmod(gate, 0o700)
    assert _resident._private_dir(str(gate))


@pytest.mark.slow
def test_a_call_of_another_protocol_or_installation_is_refused(
    tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(tmp_path / "home")
    servers.append(server)
    good = _resident._request(["hook", "claude"])
    for change, why in (({"protocol": 0}, "protocol 0"), ({"installed": ["/x", "/y"]}, "another")):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(server.path)
            _resident.write_message(conn, {**good, **change}, (0, 1, 2))
            reply, _ = _resident.read_message(conn)
        assert str(reply["refused"]).startswith(why), reply
    assert server.proc.poll() is None  # refused, and still serving


@pytest.mark.parametrize("code", [0, 3, -signal.SIGTERM, -signal.SIGKILL])
def test_the_client_exits_as_the_child_did(code: int) -> None:
    """A child's exit code is the client's; a signal that ended the child ends the client."""
    proc = subprocess.run(
        [sys.executable, "-c", f"from donegate.cli import _exit_as; _exit_as({code})"],
        capture_output=True,
        timeout=WAIT_S,
        check=False,
    )
    assert proc.returncode == code, proc.stderr


def _children(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


@pytest.mark.slow
def test_a_client_that_hangs_up_has_its_child_ended(tmp_path: Path, servers: list[Server]) -> None:
    """The CLI gave up on the hook (its timeout killed it): the stop it abandoned is ended, as the
    CLI would end a cold hook, instead of running on against descriptors nobody reads."""
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    server = Server(home)
    servers.append(server)
    task = tmp_path / "slow.yaml"
    task.write_text("id: t\nprompt: p\nchecks:\n  - run: ['sleep', '90']\n")
    payload = {"session_id": "s1", "cwd": str(work), "hook_event_name": "Stop",
               "stop_hook_active": False, "last_assistant_message": "done"}  # fmt: skip
    client = subprocess.Popen(
        [sys.executable, "-m", "donegate", "hook", "claude", "--task", str(task)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(home),
        cwd=work,
    )
    assert client.stdin is not None
    client.stdin.write(json.dumps(payload).encode())
    client.stdin.close()
    _wait_for(lambda: _children(server.proc.pid), "the child of the stop")
    client.kill()
    client.wait(timeout=WAIT_S)
    deadline = time.monotonic() + 60  # well inside the check's 90 s: the child did not just end
    while _children(server.proc.pid):
        assert time.monotonic() < deadline, "the abandoned stop's child still runs"
        time.sleep(0.05)
    assert server.proc.poll() is None
