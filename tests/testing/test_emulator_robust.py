"""The emulator answers everything: malformed requests, huge bodies and hang-ups, over raw sockets.

Each case is bytes a client really sends (a fuzzer, a port scanner, an HTTP/0.9 probe, a broken
agent): the answer is a 400 (413 for a body too large) in a provider's error shape, never
silence, a 500 or a traceback, and the server goes on answering.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from donegate.testing._routes import MAX_DEPTH, head_problem, json_body
from donegate.testing.emulator import MAX_BODY, Emulator

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
MESSAGE = json.dumps(
    {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "find x"}]}
).encode()


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(SCRIPTS / "tool_then_text.yaml", max_body=64 * 1024) as emulator:
        yield emulator


def connect(emu: Emulator) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", emu.port), timeout=10)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (10 s at most)."""
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def response(raw: bytes) -> tuple[int, dict[str, str], Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, json.loads(body)


def exchange(emu: Emulator, data: bytes) -> tuple[int, dict[str, str], Any]:
    """Send `data`, then read until the server closes."""
    with connect(emu) as sock:
        sock.sendall(data)
        return response(read_all(sock))


def post(path: str, body: bytes, *headers: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: emu", f"Content-Length: {len(body)}",
            "Connection: close", *headers]  # fmt: skip
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def still_answers(emu: Emulator) -> None:
    status, _, body = exchange(emu, post("/v1/messages", MESSAGE))
    assert status == 200 and body["stop_reason"] == "tool_use"


def universal(body: Any) -> str:
    """The error body every SDK can read when no provider is named: the message."""
    error = body["error"]
    assert body["type"] == "error" and error["type"] == "invalid_request_error"
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    return str(error["message"])


# -- heads that are not HTTP/1.x ---------------------------------------------------------------


def test_random_bytes_get_a_400_and_the_connection_closed(emu: Emulator) -> None:
    status, headers, body = exchange(emu, bytes(range(256)) * 4)
    assert (status, headers["connection"]) == (400, "close")
    assert universal(body) == "not an HTTP/1.x request line"
    still_answers(emu)


def test_bytes_that_cannot_start_a_request_are_answered_before_a_line_ends(emu: Emulator) -> None:
    status, _, body = exchange(emu, b"\x16\x03\x01\x02\x00")  # a TLS ClientHello's first bytes
    assert (status, universal(body)) == (400, "not an HTTP request")


@pytest.mark.parametrize(
    ("line", "api_shaped"),
    [(b"GET /\r\n", False), (b"GET /v1/models\r\n", True)],
    ids=["root", "models"],
)
def test_an_http_0_9_request_is_answered_at_once(
    emu: Emulator, line: bytes, api_shaped: bool
) -> None:
    started = time.monotonic()
    status, _, body = exchange(emu, line)  # no headers follow: h11 alone would wait forever
    assert time.monotonic() - started < 5
    assert status == 400
    message = body["error"]["message"]
    assert message == "HTTP/0.9 is not supported: send HTTP/1.1"
    if api_shaped:  # the path names the OpenAI model list: OpenAI's error shape
        assert body["error"]["type"] == "invalid_request_error" and "param" in body["error"]


def test_http_2_is_refused_with_a_400(emu: Emulator) -> None:
    status, _, body = exchange(emu, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    assert (status, universal(body)) == (400, "HTTP/2.0 is not supported: send HTTP/1.1")


@pytest.mark.parametrize("dribbled", [False, True], ids=["at-once", "dribbled"])
def test_ten_thousand_headers_get_a_400_in_the_paths_provider_shape(
    emu: Emulator, dribbled: bool
) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % i for i in range(10_000))
    data = b"POST /v1/messages HTTP/1.1\r\nHost: emu\r\n" + headers + b"\r\n"
    with connect(emu) as sock:
        if dribbled:
            for i in range(0, len(data), 1000):
                try:
                    sock.sendall(data[i : i + 1000])
                except OSError:
                    break  # answered and closed before the head was sent: as it should be
        else:
            sock.sendall(data)
        status, headers_, body = response(read_all(sock))
    assert (status, headers_["connection"]) == (400, "close")
    assert body["type"] == "error"  # Anthropic's shape: the path is /v1/messages
    assert body["error"] == {"type": "invalid_request_error",
                             "message": "more than 256 header lines"}  # fmt: skip
    still_answers(emu)


def test_a_header_h11_rejects_is_answered_in_json_too(emu: Emulator) -> None:
    status, _, body = exchange(emu, b"POST /v1/messages HTTP/1.1\r\nHost emu\r\n\r\n")
    assert status == 400
    assert universal(body).startswith("malformed HTTP request: ")


def test_head_problem_lets_real_heads_through() -> None:
    real = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    assert head_problem(real) is None
    assert head_problem(b"POS") is None  # not yet decidable: wait for more
    assert head_problem(b"\r\nGET / HTTP/1.0\r\n") is None  # a stray CRLF first is allowed


# -- bodies ------------------------------------------------------------------------------------


def test_bad_json_is_a_400_in_the_providers_shape(emu: Emulator) -> None:
    status, _, body = exchange(emu, post("/v1/chat/completions", b"{nope"))
    assert status == 400
    assert body["error"]["message"].startswith("openai-chat: unreadable request body: not JSON")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_json_nested_too_deep_is_a_400_not_a_500(depth: int) -> None:
    deep = b'{"messages": ' + b"[" * depth + b"]" * depth + b"}"
    with Emulator(SCRIPTS / "tool_then_text.yaml") as emu:
        status, _, body = exchange(emu, post("/v1/messages", deep))
        still_answers(emu)
    assert status == 400
    assert body["error"]["message"] == (
        f"anthropic-messages: unreadable request body: JSON nested deeper than {MAX_DEPTH} levels"
    )


def test_json_nested_up_to_the_limit_is_read() -> None:
    value, problem = json_body(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    assert problem is None and isinstance(value, list)


def test_a_declared_body_past_the_limit_is_a_413_before_any_of_it_is_sent(emu: Emulator) -> None:
    with connect(emu) as sock:
        sock.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: emu\r\nContent-Length: 104857600\r\n\r\n"
        )
        raw = b""
        while b"}" not in raw.partition(b"\r\n\r\n")[2]:
            raw += sock.recv(65536)  # answered without waiting for the 100 MB
    status, headers, body = response(raw)
    assert status == 413
    assert "connection" not in headers  # kept open: the rest is dropped as it arrives
    assert body["error"] == {
        "type": "request_too_large",
        "message": "request body larger than 65536 bytes (--max-body)",
    }
    assert emu.requests[-1]["status"] == 413


def test_a_body_past_the_limit_on_a_closing_connection_is_still_read_as_a_413(
    emu: Emulator,
) -> None:
    # The server closes after the answer, with most of the body unsent: a plain close would
    # reset the connection under the client's feet and lose the 413.
    data = post("/v1/messages", b"z" * (4 * 1024 * 1024))  # Connection: close
    with connect(emu) as sock:
        with contextlib.suppress(OSError):  # the server stopped reading once it had answered
            sock.sendall(data)
        status, headers, body = response(read_all(sock))
    assert (status, headers["connection"]) == (413, "close")
    assert body["error"]["type"] == "request_too_large"


def test_a_chunked_body_past_the_limit_is_a_413_and_the_client_reads_it(emu: Emulator) -> None:
    import httpx2

    def chunks() -> Iterator[bytes]:
        for _ in range(64):
            yield b"z" * 16384  # 1 MiB in all, against a 64 KiB limit

    answer = httpx2.post(emu.base_url + "/v1/chat/completions", content=chunks(), timeout=30)
    assert answer.status_code == 413
    assert "65536 bytes" in answer.json()["error"]["message"]
    still_answers(emu)


def test_a_body_past_the_limit_given_to_handle_is_a_413() -> None:
    emulator = Emulator(SCRIPTS / "tool_then_text.yaml", max_body=10)
    reply = emulator.handle("POST", "/v1beta/models/g:generateContent", body=b"{" * 11)
    assert reply.status == 413
    assert json.loads(reply.body)["error"]["message"] == (
        "request body larger than 10 bytes (--max-body)"
    )
    assert emulator.conversations[0].model.calls == 0  # no turn spent on it


def test_the_default_body_limit_is_32_mib() -> None:
    assert MAX_BODY == 32 * 1024 * 1024 == Emulator().max_body


def reset(sock: socket.socket) -> None:
    """Close with a TCP reset, as a killed client does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# -- the command: everything above, and nothing on stderr but one line each ---------------------


@pytest.mark.slow
def test_the_command_answers_it_all_with_one_line_each_and_no_traceback(tmp_path: Path) -> None:
    script = tmp_path / "late.yaml"
    script.write_text("prompt: p\nturns:\n  - {delay: 2, text: late}\n  - {text: ok}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "donegate", "emulate", str(script), "--port", "0", "-v"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    found = re.search(r":(\d+) ", proc.stderr.readline())
    assert found is not None
    port = int(found.group(1))

    def send(data: bytes, *, hang_up: bool = False) -> bytes:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(data)
        if hang_up:
            time.sleep(0.3)
            reset(sock)
            return b""
        with sock:
            return read_all(sock)

    try:
        assert send(bytes(range(256))).startswith(b"HTTP/1.1 400 ")
        assert send(b"GET /\r\n").startswith(b"HTTP/1.1 400 ")
        deep = b"[" * 100_000 + b"]" * 100_000
        assert send(post("/v1/messages", deep)).startswith(b"HTTP/1.1 400 ")
        # hang-ups: mid-body, and while a delayed answer is held
        send(b"POST /v1/messages HTTP/1.1\r\nHost: e\r\nContent-Length: 999\r\n\r\n{", hang_up=True)
        send(post("/v1/messages", MESSAGE), hang_up=True)
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert [re.sub(r"127\.0\.0\.1:\d+", "PEER", line) for line in lines] == [
        "donegate emulator: warning: PEER: not an HTTP/1.x request line; answered 400 and closed",
        "donegate emulator: warning: PEER: HTTP/0.9 is not supported: send HTTP/1.1; answered "
        "400 and closed",
        "donegate emulator: debug: POST /v1/messages: the client hung up before its request was "
        "read",
        "donegate emulator: debug: POST /v1/messages: the client hung up while its answer was held",
    ]
    assert json.loads(out)["requests"] == 2  # the deep body and the held one reached a route


def vm_peak_kib(pid: int) -> int:
    """The process's peak resident memory (VmHWM), from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    assert found is not None
    return int(found.group(1))


@pytest.mark.slow
def test_a_100_mb_body_is_refused_without_holding_it(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "donegate", "emulate", str(SCRIPTS / "tool_then_text.yaml"),
         "--port", "0", "--max-body", "1MiB"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    found = re.search(r":(\d+) ", proc.stderr.readline())
    assert found is not None
    port = int(found.group(1))
    try:
        import httpx2

        before = vm_peak_kib(proc.pid)

        def chunks() -> Iterator[bytes]:
            for _ in range(100):
                yield b"z" * (1024 * 1024)

        url = f"http://127.0.0.1:{port}/v1/messages"
        answer = httpx2.post(url, content=chunks(), timeout=60)
        assert answer.status_code == 413
        grown_mib = (vm_peak_kib(proc.pid) - before) / 1024
        assert grown_mib < 20, f"the server's peak memory grew {grown_mib:.0f} MiB"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
